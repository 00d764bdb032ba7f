"""Resources, resource templates, prompts, completions and calls with progress, for both hubs:
mixins of :class:`mcpmux.Hub` (:class:`AsyncResources`, awaitable) and
:class:`mcpmux.BlockingHub` (:class:`BlockingResources`), each a typed face over the native
hub's ``ask`` (one request, answered as JSON values) and its progress streams."""

from __future__ import annotations

import asyncio
import inspect
from typing import Any, AsyncIterator, Callable, Generator, Iterator, Mapping

from . import _mcpmux
from ._types import (
    Completion,
    Listing,
    Progress,
    Prompt,
    PromptResult,
    Resource,
    ResourceContents,
    ResourceEvent,
    ResourceTemplate,
)

__all__ = ["AsyncResources", "BlockingResources", "ProgressCall"]

ProgressCallback = Callable[[Progress], Any]


def _complete_params(
    argument: str,
    value: str,
    prompt: "Prompt | str | None",
    template: "ResourceTemplate | str | None",
    server: str | None,
    context: Mapping[str, str] | None,
) -> dict[str, Any]:
    """What ``complete`` asks: the prompt or template (a record names its server), the
    argument, what was typed so far and the arguments already filled in."""
    if (prompt is None) == (template is None):
        raise TypeError("complete() takes one of prompt= or template=")
    ref = prompt if prompt is not None else template
    if isinstance(ref, Prompt):
        server, name = server or ref.server, ref.name
    elif isinstance(ref, ResourceTemplate):
        server, name = server or ref.server, ref.uri_template
    else:
        name = ref
    if not server:
        raise TypeError("complete() needs server= when given a name rather than a record")
    return {
        "server": server,
        "prompt": name if prompt is not None else None,
        "template": name if template is not None else None,
        "argument": argument,
        "value": value,
        "context": dict(context or {}),
    }


async def _notices(stream: "_mcpmux.EventStream") -> AsyncIterator[ResourceEvent]:
    async for event in stream:
        yield ResourceEvent._from_native(event)


class ProgressCall:
    """A call in flight with its progress: ``async for`` gives :class:`Progress` records until
    the call ends; ``await`` gives its result (or raises). Cancelling the task that awaits or
    iterates it — or :meth:`cancel` — cancels the call, and the server is told
    (``notifications/cancelled``)."""

    def __init__(self, stream: "_mcpmux.ProgressStream", call: "asyncio.Future[Any]") -> None:
        self._stream = stream
        self._call = call

    def __aiter__(self) -> AsyncIterator[Progress]:
        return self._updates()

    async def _updates(self) -> AsyncIterator[Progress]:
        try:
            async for update in self._stream:
                yield Progress._from_native(update)
        except asyncio.CancelledError:
            self.cancel()
            raise

    def __await__(self) -> Generator[Any, None, "_mcpmux.ToolResult"]:
        return self._call.__await__()

    def cancel(self) -> None:
        """Cancels the call (the server is told)."""
        self._call.cancel()

    def done(self) -> bool:
        """Whether the call has ended."""
        return self._call.done()


class AsyncResources:
    """Resources, prompts, completions and progress for :class:`mcpmux.Hub`."""

    _hub: "_mcpmux.NativeHub"

    async def _ask(self, op: str, **params: Any) -> Any:
        return await self._hub.ask(op, params)

    async def resources(self, server: str | None = None) -> Listing[Resource]:
        """Every resource of ``server``, or of every server offering resources."""
        return Listing._from_native(await self._ask("resources", server=server), Resource._from_native)

    async def resource_templates(self, server: str | None = None) -> Listing[ResourceTemplate]:
        """Every resource template of ``server``, or of every server offering resources."""
        return Listing._from_native(await self._ask("templates", server=server), ResourceTemplate._from_native)

    async def read_resource(
        self, uri: str, *, server: str | None = None, timeout: float | None = None
    ) -> list[ResourceContents]:
        """Reads ``uri`` from ``server``; without one, from the server that lists it, else the
        one whose template matches it, else the only server offering resources."""
        answer = await self._ask("read", uri=uri, server=server, timeout=timeout)
        return [ResourceContents._from_native(c) for c in answer]

    async def prompts(self, server: str | None = None) -> Listing[Prompt]:
        """Every prompt of ``server``, or of every server offering prompts."""
        return Listing._from_native(await self._ask("prompts", server=server), Prompt._from_native)

    async def get_prompt(
        self,
        name: "str | Prompt",
        arguments: Mapping[str, Any] | None = None,
        *,
        server: str | None = None,
        timeout: float | None = None,
    ) -> PromptResult:
        """The prompt filled in with ``arguments``: a :class:`Prompt` record, the server's name
        for it with ``server``, or the name it is served under (``mcp__SERVER__PROMPT``)."""
        if isinstance(name, Prompt):
            server, name = name.server, name.name
        answer = await self._ask("prompt", name=name, server=server, arguments=arguments, timeout=timeout)
        return PromptResult._from_native(answer)

    async def complete(
        self,
        argument: str,
        value: str = "",
        *,
        prompt: "Prompt | str | None" = None,
        template: "ResourceTemplate | str | None" = None,
        server: str | None = None,
        context: Mapping[str, str] | None = None,
    ) -> Completion:
        """The server's suggestions for ``argument`` of a prompt or a resource template, given
        what was typed (``value``) and the arguments already filled in (``context``)."""
        params = _complete_params(argument, value, prompt, template, server, context)
        return Completion._from_native(await self._hub.ask("complete", params))

    async def subscribe(self, uri: str, *, server: str | None = None) -> None:
        """Asks for updates of ``uri``: they arrive on :meth:`resource_events` as ``updated``
        (made again after a reconnect, until :meth:`unsubscribe`)."""
        await self._ask("subscribe", uri=uri, server=server)

    async def unsubscribe(self, uri: str, *, server: str | None = None) -> None:
        """Stops the updates of ``uri``."""
        await self._ask("unsubscribe", uri=uri, server=server)

    def resource_events(self) -> AsyncIterator[ResourceEvent]:
        """Resource updates and resource/prompt list changes from the moment of this call (not
        of the first ``__anext__``), until the hub shuts down."""
        return _notices(self._hub.resource_events())

    def call_with_progress(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        timeout: float | None = None,
        scope: Any = None,
    ) -> ProgressCall:
        """Starts calling ``name``: iterate the answer for its progress, await it for the
        result. Each notification extends the call's deadline."""
        from ._types import scope_text

        stream, call = self._hub.call_progress(name, arguments, timeout, scope_text(scope))
        return ProgressCall(stream, call)

    async def _call_reporting(
        self,
        name: str,
        arguments: Any,
        timeout: float | None,
        scope: Any,
        progress: ProgressCallback,
    ) -> "_mcpmux.ToolResult":
        """A call whose progress goes to ``progress`` (sync or async) as it comes."""
        call = self.call_with_progress(name, arguments, timeout=timeout, scope=scope)
        try:
            async for update in call:
                shown = progress(update)
                if inspect.isawaitable(shown):
                    await shown
        except BaseException:
            call.cancel()
            raise
        return await call


class BlockingResources:
    """Resources, prompts, completions and progress for :class:`mcpmux.BlockingHub`."""

    _hub: "_mcpmux.NativeHub"

    def _ask(self, op: str, **params: Any) -> Any:
        return self._hub.ask(op, params, blocking=True)

    def resources(self, server: str | None = None) -> Listing[Resource]:
        """Every resource of ``server``, or of every server offering resources."""
        return Listing._from_native(self._ask("resources", server=server), Resource._from_native)

    def resource_templates(self, server: str | None = None) -> Listing[ResourceTemplate]:
        """Every resource template of ``server``, or of every server offering resources."""
        return Listing._from_native(self._ask("templates", server=server), ResourceTemplate._from_native)

    def read_resource(
        self, uri: str, *, server: str | None = None, timeout: float | None = None
    ) -> list[ResourceContents]:
        """Reads ``uri`` (see :meth:`mcpmux.Hub.read_resource`)."""
        return [ResourceContents._from_native(c) for c in self._ask("read", uri=uri, server=server, timeout=timeout)]

    def prompts(self, server: str | None = None) -> Listing[Prompt]:
        """Every prompt of ``server``, or of every server offering prompts."""
        return Listing._from_native(self._ask("prompts", server=server), Prompt._from_native)

    def get_prompt(
        self,
        name: "str | Prompt",
        arguments: Mapping[str, Any] | None = None,
        *,
        server: str | None = None,
        timeout: float | None = None,
    ) -> PromptResult:
        """The prompt filled in (see :meth:`mcpmux.Hub.get_prompt`)."""
        if isinstance(name, Prompt):
            server, name = name.server, name.name
        return PromptResult._from_native(
            self._ask("prompt", name=name, server=server, arguments=arguments, timeout=timeout)
        )

    def complete(
        self,
        argument: str,
        value: str = "",
        *,
        prompt: "Prompt | str | None" = None,
        template: "ResourceTemplate | str | None" = None,
        server: str | None = None,
        context: Mapping[str, str] | None = None,
    ) -> Completion:
        """The server's suggestions (see :meth:`mcpmux.Hub.complete`)."""
        params = _complete_params(argument, value, prompt, template, server, context)
        return Completion._from_native(self._hub.ask("complete", params, blocking=True))

    def subscribe(self, uri: str, *, server: str | None = None) -> None:
        """Asks for updates of ``uri`` (see :meth:`mcpmux.Hub.subscribe`)."""
        self._ask("subscribe", uri=uri, server=server)

    def unsubscribe(self, uri: str, *, server: str | None = None) -> None:
        """Stops the updates of ``uri``."""
        self._ask("unsubscribe", uri=uri, server=server)

    def resource_events(self, timeout: float | None = None) -> Iterator[ResourceEvent]:
        """Resource notices from now on; ends when the hub shuts down, or when none came for
        ``timeout`` seconds (when given). Subscribed at this call."""
        return _blocking_notices(self._hub.resource_events(), timeout)

    def _call_reporting(
        self,
        name: str,
        arguments: Any,
        timeout: float | None,
        scope: Any,
        progress: ProgressCallback,
    ) -> "_mcpmux.ToolResult":
        """A blocking call whose progress goes to ``progress`` on this thread as it comes."""
        from ._types import scope_text

        return self._hub.call_blocking_progress(
            name, lambda update: progress(Progress._from_native(update)), arguments, timeout, scope_text(scope)
        )


def _blocking_notices(stream: "_mcpmux.EventStream", timeout: float | None) -> Iterator[ResourceEvent]:
    while True:
        try:
            event = stream.next_blocking(timeout)
        except StopIteration:
            return
        if event is None:
            return
        yield ResourceEvent._from_native(event)

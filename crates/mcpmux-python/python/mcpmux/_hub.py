"""The hub for asyncio (:class:`Hub`) and for code that is not async (:class:`BlockingHub`).

Both start the same native hub — servers from config files and/or given inline, Python tool
sources and built-ins, policy — and offer the same surface: tools (per scope, per provider
format), calls, the untrusted rendering, server status, events and shutdown.
"""

from __future__ import annotations

import asyncio
import json
import os
import warnings
from typing import Any, AsyncIterator, Callable, Iterable, Iterator, Mapping, Sequence, TypeVar

from . import _mcpmux
from ._agent import AsyncAgent, BlockingAgent
from ._config import AsyncReconfigure, BlockingReconfigure
from ._bridge import ApproverBridge, BuiltinBridge, Runner, SourceBridge
from ._builtin import Builtin
from ._host import Elicitor, Sampler, host_options
from ._resources import AsyncResources, BlockingResources, ProgressCallback
from ._types import ApprovalRequest, Event, Export, ScopeLike, ServerStatus, Tool, scope_text
from .errors import McpmuxError, ServerUnavailable

__all__ = ["Hub", "BlockingHub"]

Approver = Callable[[ApprovalRequest], Any]
H = TypeVar("H", bound="_Base")


class _Base:
    """What both hubs share: the options, the native handle, and the synchronous reads."""

    def __init__(
        self,
        servers: Mapping[str, Mapping[str, Any]] | None = None,
        *,
        handlers: Iterable[Any] = (),
        builtins: Iterable[Builtin] = (),
        policy: Mapping[str, Sequence[str]] | None = None,
        approver: Approver | None = None,
        lazy: bool = False,
        ephemeral: bool = False,
        roots: Any = None,
        sampler: Sampler | None = None,
        elicitor: Elicitor | None = None,
        elicit_urls: bool = False,
        tool_cache: "str | os.PathLike[str] | bool | None" = None,
        tool_cache_max_age: float | None = None,
    ) -> None:
        self._host = (roots, sampler, elicitor, elicit_urls)
        self._servers = dict(servers) if servers is not None else None
        self._handlers = list(handlers)
        self._builtins = list(builtins)
        self._policy = dict(policy) if policy is not None else None
        self._approver = approver
        self._lazy = lazy
        self._ephemeral = ephemeral
        # The tool cache: None = the default folder (none when ephemeral), False = none.
        self._cache = {
            "tool_cache": tool_cache if isinstance(tool_cache, (bool, type(None))) else os.fspath(tool_cache),
            "tool_cache_max_age": tool_cache_max_age,
        }
        self._config: dict[str, Any] = {"use_config": False}
        self._native: _mcpmux.NativeHub | None = None
        self._provider_names: dict[str, str] = {}
        #: Python tool sources whose ``list_tools`` failed at start, by name: a
        #: ``ToolSourceError`` (what it raised) or a ``ServerUnavailable`` (a wrong answer).
        self.source_errors: dict[str, ServerUnavailable] = {}

    @classmethod
    def from_config(
        cls: type[H],
        config_files: Iterable["str | os.PathLike[str]"] = (),
        *,
        project_dir: "str | os.PathLike[str] | None" = None,
        home: "str | os.PathLike[str] | None" = None,
        trust_project: bool = False,
        imports: Iterable[str] = (),
        servers: Mapping[str, Mapping[str, Any]] | None = None,
        handlers: Iterable[Any] = (),
        builtins: Iterable[Builtin] = (),
        policy: Mapping[str, Sequence[str]] | None = None,
        approver: Approver | None = None,
        lazy: bool = False,
        ephemeral: bool = False,
        roots: Any = None,
        sampler: Sampler | None = None,
        elicitor: Elicitor | None = None,
        elicit_urls: bool = False,
        tool_cache: "str | os.PathLike[str] | bool | None" = None,
        tool_cache_max_age: float | None = None,
    ) -> H:
        """A hub over the servers of your config files, as the ``mcpmux`` CLI reads them.

        User files (``~/.claude.json``, ``~/.config/mcpmux/config.toml`` …), then the project's
        (``.mcp.json``, ``mcpmux.toml`` … in ``project_dir``, the current directory by default),
        then ``config_files`` (like ``--config``). Project servers need approval
        (``mcpmux trust``) unless ``trust_project`` is true. ``imports`` reads other tools'
        files too (``"codex"``, ``"vscode"``, ``"cursor"`` … or ``"all"``, like ``--import``;
        ``import = [...]`` in ``mcpmux.toml`` works as in the CLI). ``servers`` adds servers
        inline. ``tool_cache``: the cached tool lists' folder (``False``: none);
        ``tool_cache_max_age`` (s): how old a cached list may be.
        """
        hub = cls(
            servers,
            handlers=handlers,
            builtins=builtins,
            policy=policy,
            approver=approver,
            lazy=lazy,
            ephemeral=ephemeral,
            roots=roots,
            sampler=sampler,
            elicitor=elicitor,
            elicit_urls=elicit_urls,
            tool_cache=tool_cache,
            tool_cache_max_age=tool_cache_max_age,
        )
        hub._config = {
            "use_config": True,
            "config_files": [os.fspath(p) for p in config_files],
            "project_dir": None if project_dir is None else os.fspath(project_dir),
            "home": None if home is None else os.fspath(home),
            "trust_project": trust_project,
            "import": list(imports),
        }
        return hub

    def _options(self, loop: asyncio.AbstractEventLoop | None) -> dict[str, Any]:
        runner = Runner(loop)
        return {
            **self._config,
            "servers": self._servers,
            "policy": self._policy,
            "lazy": self._lazy,
            "ephemeral": self._ephemeral,
            **self._cache,
            "handlers": [SourceBridge(h, runner) for h in self._handlers],
            "builtins": [BuiltinBridge(b, runner) for b in self._builtins],
            "approver": None if self._approver is None else ApproverBridge(self._approver, runner),
            **host_options(*self._host, runner),
        }

    def _started(self, native: _mcpmux.NativeHub) -> None:
        self._native = native
        self.source_errors = dict(native.handler_errors)
        for name, error in self.source_errors.items():
            warnings.warn(f"tool source `{name}` listed no tools: {error}", RuntimeWarning, stacklevel=3)

    @property
    def _hub(self) -> _mcpmux.NativeHub:
        if self._native is None:
            raise McpmuxError(
                "the hub is not started: use `async with`/`with`, or start() first", kind="closed"
            )
        return self._native

    def tools(self, scope: ScopeLike = None) -> list[Tool]:
        """The tools callable now (local tools first, then by name), in ``scope`` when given
        (``"plan/coder"``, ``Scope(stage="plan")`` …)."""
        return [Tool._from_native(t) for t in self._hub.tools(scope_text(scope))]

    def export(self, provider: str = "openai", scope: ScopeLike = None) -> Export:
        """The tools of ``scope`` in a provider's format: ``openai``, ``openai-strict``,
        ``anthropic`` or ``gemini``. The provider-side names are remembered, so
        ``call_tool`` takes the name the model used."""
        export = Export._from_native(self._hub.export(provider, scope_text(scope)))
        self._provider_names.update(export.names)
        return export

    def tool_definitions(self, provider: str = "openai", scope: ScopeLike = None) -> list[dict[str, Any]]:
        """The provider's ``tools`` array for ``scope``: what goes in the model request."""
        return self.export(provider, scope).definitions

    def servers(self) -> list[ServerStatus]:
        """Every configured server with its state, and config entries that could not be used."""
        return [ServerStatus._from_native(s) for s in self._hub.servers()]

    def _tool_call(self, name: str, arguments: Any) -> tuple[str, Any]:
        """A model's call as the hub takes it: a provider-side name mapped back, arguments given
        as JSON text (as OpenAI sends them) parsed."""
        parsed: Any = arguments
        if isinstance(arguments, (str, bytes)):
            try:
                parsed = json.loads(arguments) if arguments else None
            except ValueError as e:
                from .errors import InvalidArguments

                raise InvalidArguments(
                    f"invalid arguments for `{name}`: not JSON: {e}",
                    kind="invalid_arguments",
                    tool=name,
                    reason=f"not JSON: {e}",
                ) from None
        return self._provider_names.get(name, name), parsed


async def _events(stream: "_mcpmux.EventStream") -> AsyncIterator[Event]:
    async for event in stream:
        yield Event._from_native(event)


def _blocking_events(stream: "_mcpmux.EventStream", timeout: float | None) -> Iterator[Event]:
    while True:
        try:
            event = stream.next_blocking(timeout)
        except StopIteration:
            return
        if event is None:
            return
        yield Event._from_native(event)


class Hub(AsyncResources, AsyncAgent, AsyncReconfigure, _Base):
    """Many MCP servers as one tool set, for asyncio.

    ::

        async with mcpmux.Hub.from_config() as hub:
            tools = hub.tools(scope="build/coder")
            result = await hub.call("mcp__time__get_current_time", {"timezone": "UTC"})

    Or inline servers, with the keys of a ``[servers.NAME]`` table of ``mcpmux.toml``::

        mcpmux.Hub({"time": {"command": "uvx", "args": ["mcp-server-time"], "lazy": True}})

    Python tool sources (``handlers``: objects with ``list_tools()`` and
    ``call_tool(name, arguments)``, sync or async) are listed beside MCP servers and override
    ``builtins`` of the same name. Their coroutines run on the event loop the hub was started
    on: keep it running (awaiting) while calls are in flight. Synchronous ones run on a pool of
    Python threads (at most ``mcpmux._bridge.MAX_PYTHON_CALLS`` at once), which Python waits
    for at exit.

    What servers ask of the harness is answered by ``elicitor``, ``sampler`` and ``roots``
    (see :mod:`mcpmux._host`); each is advertised only when given, and a request for one that
    is not is refused. Resources, prompts, completions and progress: see
    :class:`mcpmux._resources.AsyncResources`.
    """

    async def start(self) -> "Hub":
        """Starts every server concurrently and waits until each has settled (each bounded by
        its startup timeout). Raises if a ``required`` server failed."""
        if self._native is None:
            options = self._options(asyncio.get_running_loop())
            self._started(await _mcpmux.start(options))
        return self

    async def __aenter__(self) -> "Hub":
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.shutdown()

    async def wait_ready(self) -> None:
        """Waits until every server's first connection attempt has settled."""
        await self._hub.wait_ready()

    async def call(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        timeout: float | None = None,
        scope: ScopeLike = None,
        progress: ProgressCallback | None = None,
    ) -> "_mcpmux.ToolResult":
        """Calls the tool exposed as ``name``. A tool that fails *answers* (``is_error``); a
        call that cannot be made raises a :class:`mcpmux.errors.McpmuxError`. ``timeout`` (s)
        overrides the server's call timeout; ``scope`` refuses tools outside it; ``progress``
        (sync or async) is given each :class:`mcpmux.Progress` the server sends (see also
        :meth:`call_with_progress`). Cancelling the awaiting task cancels the call, and the
        server is told."""
        if progress is not None:
            return await self._call_reporting(name, arguments, timeout, scope, progress)
        # The native call finds the running loop's completer itself (see `awaitable.rs`).
        return await self._hub.call(name, arguments, timeout, scope_text(scope))

    async def call_tool(
        self,
        name: str,
        arguments: Mapping[str, Any] | str | None = None,
        *,
        timeout: float | None = None,
        scope: ScopeLike = None,
    ) -> "_mcpmux.ToolResult":
        """:meth:`call` for what a model sent: a provider-side name from :meth:`export` and
        arguments as a dict or as JSON text."""
        exposed, parsed = self._tool_call(name, arguments)
        return await self._hub.call(exposed, parsed, timeout, scope_text(scope))

    async def call_for_model(
        self,
        name: str,
        arguments: Mapping[str, Any] | str | None = None,
        *,
        timeout: float | None = None,
        scope: ScopeLike = None,
    ) -> str:
        """:meth:`call_tool`, answered as the text a model should read: the result wrapped as
        untrusted data, or the error's ``for_model`` text. Never raises an mcpmux error."""
        try:
            result = await self.call_tool(name, arguments, timeout=timeout, scope=scope)
        except McpmuxError as e:
            return e.for_model
        return result.render_untrusted()

    def events(self) -> AsyncIterator[Event]:
        """Server state and tool-list changes from the moment of this call (not of the first
        ``__anext__``), until the hub shuts down."""
        return _events(self._hub.events())

    async def shutdown(self) -> None:
        """Closes every server and reaps their processes. Idempotent."""
        if self._native is not None:
            await self._native.shutdown()


class BlockingHub(BlockingResources, BlockingAgent, BlockingReconfigure, _Base):
    """:class:`Hub` for code that is not async: every method blocks with the GIL released,
    and may be called from many threads at once.

    ::

        with mcpmux.BlockingHub.from_config() as hub:
            result = hub.call("mcp__time__get_current_time", {"timezone": "UTC"})

    Coroutines returned by Python tool sources run on a fresh event loop per call; synchronous
    ones on a thread of the package's pool, so a tool source may itself call the hub. Do not
    call a blocking hub in a child forked
    after a hub started (it raises ``RuntimeError``: the threads that run hubs stayed in the
    parent).
    """

    def start(self) -> "BlockingHub":
        """Starts every server concurrently and waits until each has settled."""
        if self._native is None:
            self._started(_mcpmux.start_blocking(self._options(None)))
        return self

    def __enter__(self) -> "BlockingHub":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.shutdown()

    def call(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        timeout: float | None = None,
        scope: ScopeLike = None,
        progress: ProgressCallback | None = None,
    ) -> "_mcpmux.ToolResult":
        """Calls the tool exposed as ``name`` (see :meth:`Hub.call`); ``progress`` is called on
        this thread for each notification, and an exception it raises ends the call."""
        if progress is not None:
            return self._call_reporting(name, arguments, timeout, scope, progress)
        return self._hub.call_blocking(name, arguments, timeout, scope_text(scope))

    def call_tool(
        self,
        name: str,
        arguments: Mapping[str, Any] | str | None = None,
        *,
        timeout: float | None = None,
        scope: ScopeLike = None,
    ) -> "_mcpmux.ToolResult":
        """:meth:`call` for what a model sent (see :meth:`Hub.call_tool`)."""
        exposed, parsed = self._tool_call(name, arguments)
        return self._hub.call_blocking(exposed, parsed, timeout, scope_text(scope))

    def call_for_model(
        self,
        name: str,
        arguments: Mapping[str, Any] | str | None = None,
        *,
        timeout: float | None = None,
        scope: ScopeLike = None,
    ) -> str:
        """:meth:`call_tool` as the text a model should read; never raises an mcpmux error."""
        try:
            result = self.call_tool(name, arguments, timeout=timeout, scope=scope)
        except McpmuxError as e:
            return e.for_model
        return result.render_untrusted()

    def events(self, timeout: float | None = None) -> Iterator[Event]:
        """Server state and tool-list changes from the moment of this call; ends when the hub
        shuts down, or when no event came for ``timeout`` seconds (when given)."""
        return _blocking_events(self._hub.events(), timeout)

    def shutdown(self) -> None:
        """Closes every server and reaps their processes. Idempotent."""
        if self._native is not None:
            self._native.shutdown(blocking=True)

"""The agent loop (``mcpmux-agent``) on a hub: :meth:`Hub.run` / :meth:`BlockingHub.run` send
a prompt and the hub's tools to a model (``openai:MODEL`` or ``anthropic:MODEL``), run the
tool calls of each turn through the hub, and return a :class:`RunResult` — the answer, why the
run stopped, tokens, and the :class:`Transcript` to continue from. Events (text, tool calls and
results, turns, retries) go to ``on_event`` as they happen. Large catalogs go behind the
``search_tools`` meta-tool, as in ``mcpmux run``.
"""

from __future__ import annotations

import asyncio
import inspect
import json
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping, Sequence

from . import _mcpmux
from ._types import ScopeLike, scope_text

__all__ = ["AgentEvent", "RunResult", "Transcript"]


@dataclass(frozen=True)
class Transcript:
    """A conversation: pass it to the next run (``transcript=``) to continue it."""

    messages: Sequence[Mapping[str, Any]] = ()
    usage: Mapping[str, int] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """The transcript as the native loop reads it."""
        return {"messages": list(self.messages), "usage": dict(self.usage) or {"input_tokens": 0, "output_tokens": 0}}

    def to_jsonl(self) -> str:
        """One JSON line per message, then the usage line (the ``mcpmux run --transcript`` format)."""
        lines = [json.dumps(m) for m in self.messages] + [json.dumps({"usage": dict(self.usage)})]
        return "\n".join(lines) + "\n"

    @classmethod
    def from_jsonl(cls, text: str) -> "Transcript":
        """A transcript written by :meth:`to_jsonl` (or by ``mcpmux run``)."""
        messages: list[Mapping[str, Any]] = []
        usage: Mapping[str, int] = {}
        for line in text.splitlines():
            if not line.strip():
                continue
            value = json.loads(line)
            if isinstance(value, dict) and set(value) == {"usage"}:
                usage = value["usage"]
            else:
                messages.append(value)
        return cls(messages, usage)


@dataclass(frozen=True)
class AgentEvent:
    """What a run reports while it goes. ``type``: ``text`` (``text``), ``tool_call_started``
    (``id``, ``name``), ``tool_call`` (``id``, ``tool``, ``arguments``), ``tool_result``
    (``id``, ``tool``, ``is_error``, ``text``), ``retrying`` (``attempt``, ``after``,
    ``reason``) or ``turn`` (``iteration``, ``usage``)."""

    type: str
    text: str | None = None
    id: str | None = None
    name: str | None = None
    tool: str | None = None
    arguments: str | None = None
    is_error: bool = False
    attempt: int | None = None
    after: float | None = None
    reason: str | None = None
    iteration: int | None = None
    usage: Mapping[str, int] | None = None

    @classmethod
    def _from_native(cls, d: Mapping[str, Any]) -> "AgentEvent":
        known = {k: v for k, v in d.items() if k in cls.__dataclass_fields__}
        return cls(**known)


@dataclass(frozen=True)
class RunResult:
    """How a run ended. ``stop``: ``final`` (the model answered), ``iteration_limit``,
    ``budget``, ``refusal``, ``max_tokens``, ``provider_error`` or ``cancelled``;
    ``stop_message`` says it in words."""

    answer: str
    stop: str
    stop_message: str
    usage: Mapping[str, int]
    iterations: int
    tool_calls: int
    transcript: Transcript

    @property
    def is_final(self) -> bool:
        """Whether the model answered."""
        return self.stop == "final"

    @classmethod
    def _from_native(cls, d: Mapping[str, Any]) -> "RunResult":
        t = d["transcript"]
        return cls(
            answer=d["answer"],
            stop=d["stop"],
            stop_message=d["stop_message"],
            usage=d["usage"],
            iterations=d["iterations"],
            tool_calls=d["tool_calls"],
            transcript=Transcript(t["messages"], t["usage"]),
        )


def _options(
    transcript: Transcript | None,
    system: str | None,
    max_iterations: int | None,
    max_tokens: int | None,
    max_request_bytes: int | None,
    scope: ScopeLike,
    search: "bool | str | None",
    pinned: Iterable[str],
    call_timeout: float | None,
    base_url: str | None,
    api_key: str | None,
) -> dict[str, Any]:
    return {
        "transcript": None if transcript is None else transcript.to_dict(),
        "system": system,
        "max_iterations": max_iterations,
        "max_tokens": max_tokens,
        "max_request_bytes": max_request_bytes,
        "scope": scope_text(scope),
        "search": search,
        "pinned": list(pinned),
        "call_timeout": call_timeout,
        "base_url": base_url,
        "api_key": api_key,
    }


def _step(item: dict[str, Any], on_event: Callable[[AgentEvent], Any] | None) -> tuple[RunResult | None, Any]:
    """One item of a run, for both hubs: the result when it ends the run, else what
    ``on_event`` answered for the event (an awaitable for the async hub to await)."""
    if item["type"] == "done":
        return RunResult._from_native(item), None
    return None, None if on_event is None else on_event(AgentEvent._from_native(item))


class AsyncAgent:
    """:meth:`run` for :class:`mcpmux.Hub`."""

    _hub: "_mcpmux.NativeHub"

    async def run(
        self,
        prompt: str | None,
        *,
        model: str,
        on_event: Callable[[AgentEvent], Any] | None = None,
        transcript: Transcript | None = None,
        system: str | None = None,
        max_iterations: int | None = None,
        max_tokens: int | None = None,
        max_request_bytes: int | None = None,
        scope: ScopeLike = None,
        search: "bool | str | None" = None,
        pinned: Iterable[str] = (),
        call_timeout: float | None = None,
        base_url: str | None = None,
        api_key: str | None = None,
    ) -> RunResult:
        """Runs ``prompt`` (``None`` continues ``transcript``) with ``model``
        (``openai:MODEL`` or ``anthropic:MODEL``) on the hub's tools of ``scope`` until the
        model answers or a limit stops it: ``max_iterations`` model turns (default 10),
        ``max_tokens`` spent, ``max_request_bytes`` per request. ``search``: tools go behind
        ``search_tools`` past 20 000 definition tokens (``None``/``"auto"``), always (``True``)
        or never (``False``); ``pinned`` tools are always sent. The provider is configured from
        ``OPENAI_BASE_URL``/``OPENAI_API_KEY`` (``ANTHROPIC_…``) unless ``base_url``/``api_key``
        are given. ``on_event`` (sync or async) sees each :class:`AgentEvent`. Cancelling the
        task cancels the run and its tool calls."""
        options = _options(
            transcript, system, max_iterations, max_tokens, max_request_bytes, scope, search, pinned,
            call_timeout, base_url, api_key,
        )
        run = _mcpmux.start_run(self._hub, prompt, model, options)
        try:
            async for item in run:
                result, answer = _step(item, on_event)
                if result is not None:
                    return result
                if inspect.isawaitable(answer):
                    await answer
        except asyncio.CancelledError:
            run.cancel()
            raise
        finally:
            run.cancel()  # a no-op once done; stops the run when on_event raised
        raise RuntimeError("the agent run ended without an outcome")  # pragma: no cover


class BlockingAgent:
    """:meth:`run` for :class:`mcpmux.BlockingHub`."""

    _hub: "_mcpmux.NativeHub"

    def run(
        self,
        prompt: str | None,
        *,
        model: str,
        on_event: Callable[[AgentEvent], Any] | None = None,
        transcript: Transcript | None = None,
        system: str | None = None,
        max_iterations: int | None = None,
        max_tokens: int | None = None,
        max_request_bytes: int | None = None,
        scope: ScopeLike = None,
        search: "bool | str | None" = None,
        pinned: Iterable[str] = (),
        call_timeout: float | None = None,
        base_url: str | None = None,
        api_key: str | None = None,
    ) -> RunResult:
        """:meth:`Hub.run`, blocking with the GIL released between events."""
        options = _options(
            transcript, system, max_iterations, max_tokens, max_request_bytes, scope, search, pinned,
            call_timeout, base_url, api_key,
        )
        run = _mcpmux.start_run(self._hub, prompt, model, options)
        try:
            while True:
                try:
                    item = run.next_blocking()
                except StopIteration:  # pragma: no cover - `done` always comes first
                    raise RuntimeError("the agent run ended without an outcome") from None
                result, _ = _step(item, on_event)
                if result is not None:
                    return result
        finally:
            run.cancel()

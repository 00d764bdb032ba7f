"""Type stubs of the native module ``mcpmux._mcpmux`` (the Rust half of the package).

Use the classes of :mod:`mcpmux` instead: they wrap these with records and docstrings.
"""

from typing import Any, Awaitable, Callable, Mapping
from .errors import ServerUnavailable

__version__: str

class ToolResult:
    """The outcome of a tool call that reached the tool; ``is_error`` means the tool failed."""

    @property
    def is_error(self) -> bool:
        """Whether the tool reported failure (``isError``)."""
    @property
    def tool(self) -> str:
        """The exposed name of the tool that answered."""
    @property
    def content(self) -> list[dict[str, Any]]:
        """The content blocks as MCP dicts (``{"type": "text", "text": ...}`` …)."""
    @property
    def structured_content(self) -> Any:
        """``structuredContent``, when the tool gave one, else ``None``."""
    @property
    def output_problems(self) -> list[str]:
        """Where ``structuredContent`` does not match the tool's output schema."""
    @property
    def text(self) -> str:
        """The whole result as plain text (blocks joined by blank lines)."""
    def render_untrusted(self) -> str:
        """The text wrapped as untrusted data for a model, naming the tool."""
    def to_dict(self) -> dict[str, Any]:
        """The MCP ``CallToolResult`` dict."""

class EventStream:
    """Events of one hub (its servers' events, or its resource notices) from the moment of
    subscribing."""

    def __aiter__(self) -> "EventStream": ...
    def __anext__(self) -> Awaitable[dict[str, Any]]: ...
    def next_blocking(self, timeout: float | None = None) -> dict[str, Any] | None:
        """The next event; ``None`` after ``timeout`` s; ``StopIteration`` after shutdown."""

class ProgressStream:
    """The progress notifications of one call, until it ends."""

    def __aiter__(self) -> "ProgressStream": ...
    def __anext__(self) -> Awaitable[dict[str, Any]]: ...

class Completer:
    """Completes calls on one event loop's own thread (one per loop)."""

    def __init__(self, event_loop: Any) -> None: ...
    def drain(self) -> None: ...
    def close(self) -> None: ...

class NativeHub:
    """A running hub."""

    @property
    def handler_errors(self) -> list[tuple[str, ServerUnavailable]]: ...
    def tools(self, scope: str | None = None) -> list[dict[str, Any]]: ...
    def export(self, provider: str, scope: str | None = None) -> dict[str, Any]: ...
    def servers(self) -> list[dict[str, Any]]: ...
    def call(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        timeout: float | None = None,
        scope: str | None = None,
        completer: Completer | None = None,
    ) -> Awaitable[ToolResult]: ...
    def call_blocking(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        timeout: float | None = None,
        scope: str | None = None,
    ) -> ToolResult: ...
    def events(self) -> EventStream: ...
    def wait_ready(self) -> Awaitable[None]: ...
    def shutdown(self, blocking: bool = False) -> Any:
        """An awaitable of None, or None once closed when ``blocking``."""
    def ask(self, op: str, params: Mapping[str, Any], blocking: bool = False) -> Any:
        """``resources``, ``templates``, ``read``, ``prompts``, ``prompt``, ``complete``,
        ``subscribe`` or ``unsubscribe``, answered as JSON values (awaitable unless
        ``blocking``)."""
    def resource_events(self) -> EventStream: ...
    def call_progress(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        timeout: float | None = None,
        scope: str | None = None,
    ) -> tuple[ProgressStream, Awaitable[ToolResult]]: ...
    def call_blocking_progress(
        self,
        name: str,
        progress: Callable[[dict[str, Any]], Any],
        arguments: Mapping[str, Any] | None = None,
        timeout: float | None = None,
        scope: str | None = None,
    ) -> ToolResult: ...

def completer() -> Completer:
    """The running event loop's completer (made on first use)."""

def start(options: dict[str, Any]) -> Awaitable[NativeHub]:
    """Starts a hub (see ``mcpmux.Hub``)."""

def start_blocking(options: dict[str, Any]) -> NativeHub:
    """Starts a hub, blocking with the GIL released (see ``mcpmux.BlockingHub``)."""

def render_untrusted_text(source: str, text: str) -> str:
    """``text`` from ``source`` wrapped as untrusted data for a model."""

def tool_result(value: Any, tool: str = "builtin") -> ToolResult:
    """What a Python tool may return, read as a ``ToolResult``."""

# The agent loop and tool search (agent.rs, search.rs).
class AgentRun:
    """One run of the agent loop: its events as dicts, then ``{"type": "done", ...}``."""

    def __aiter__(self) -> "AgentRun": ...
    def __anext__(self) -> Awaitable[dict[str, Any]]: ...
    def next_blocking(self) -> dict[str, Any]: ...
    def cancel(self) -> None: ...

def start_run(hub: NativeHub, prompt: str | None, model: str, options: dict[str, Any]) -> AgentRun:
    """Starts one run of the agent loop on ``hub``'s tools."""

class ToolSearch:
    """A hub's tools split into pinned and searchable (BM25F)."""

    def __init__(self, hub: NativeHub, pinned: list[str] = ..., scope: str | None = None) -> None: ...
    def pinned(self) -> list[str]: ...
    def deferred(self) -> list[str]: ...
    def search(self, query: Any, limit: Any = None) -> list[str]: ...

# Reconfiguration (reload.rs).
def reconfigure(hub: NativeHub, options: dict[str, Any]) -> Awaitable[dict[str, Any]]:
    """Swaps ``hub`` to the config ``options`` describe; answers what changed."""

def reconfigure_blocking(hub: NativeHub, options: dict[str, Any]) -> dict[str, Any]:
    """:func:`reconfigure`, blocking."""

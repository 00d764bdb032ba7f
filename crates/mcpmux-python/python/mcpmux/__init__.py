"""mcpmux: many MCP servers — local processes, remote HTTP endpoints — as one namespaced,
validated, policy-guarded tool set (``mcp__server__tool``), for Python agent harnesses.

The Rust ``mcpmux`` library does the work (connections, lazy start, reconnects, the circuit
breaker, argument validation, policy, result cutting and untrusted rendering); this package
offers it to asyncio (:class:`Hub`) and to code that is not async (:class:`BlockingHub`).

::

    import mcpmux

    async with mcpmux.Hub.from_config() as hub:
        tools = hub.tools(scope="build/coder")
        result = await hub.call("mcp__time__get_current_time", {"timezone": "UTC"})
        print(result.text)

Adapters: :mod:`mcpmux.adapters.langchain`, :mod:`mcpmux.adapters.openai_agents`,
:mod:`mcpmux.adapters.pydantic_ai`.
"""

from . import errors
from ._agent import AgentEvent, RunResult, Transcript
from ._builtin import Builtin, builtin
from ._hub import BlockingHub, Hub
from ._mcpmux import ToolResult, __version__, render_untrusted_text, tool_result
from ._resources import ProgressCall
from ._types import (
    ApprovalRequest,
    Completion,
    ElicitationRequest,
    Event,
    Export,
    Listing,
    Progress,
    Prompt,
    PromptArgument,
    PromptMessage,
    PromptResult,
    Resource,
    ResourceContents,
    ResourceEvent,
    ResourceTemplate,
    SamplingRequest,
    Scope,
    ServerStatus,
    Tool,
)
from .errors import (
    AuthRequired,
    Cancelled,
    CircuitOpen,
    ConfigError,
    ConnectionLost,
    InvalidArguments,
    McpmuxError,
    OutOfScope,
    PolicyRefused,
    ProtocolError,
    ServerError,
    ServerUnavailable,
    ToolSourceError,
    ToolTimeout,
    UnknownServer,
    UnknownTool,
    UnusableTool,
)

__all__ = [
    "Hub",
    "BlockingHub",
    "AgentEvent",
    "RunResult",
    "Transcript",
    "Builtin",
    "builtin",
    "ToolResult",
    "tool_result",
    "render_untrusted_text",
    "Tool",
    "ServerStatus",
    "Event",
    "Export",
    "Scope",
    "ApprovalRequest",
    "Listing",
    "Resource",
    "ResourceTemplate",
    "ResourceContents",
    "Prompt",
    "PromptArgument",
    "PromptMessage",
    "PromptResult",
    "Completion",
    "ResourceEvent",
    "Progress",
    "ProgressCall",
    "SamplingRequest",
    "ElicitationRequest",
    "errors",
    "McpmuxError",
    "ConfigError",
    "ServerUnavailable",
    "CircuitOpen",
    "AuthRequired",
    "ToolSourceError",
    "ConnectionLost",
    "ToolTimeout",
    "InvalidArguments",
    "PolicyRefused",
    "OutOfScope",
    "UnknownTool",
    "UnknownServer",
    "UnusableTool",
    "ServerError",
    "ProtocolError",
    "Cancelled",
    "__version__",
]


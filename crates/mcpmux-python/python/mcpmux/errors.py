"""The exceptions mcpmux raises: one class per thing a harness can act on.

Every exception is an :class:`McpmuxError` carrying the fields of the Rust ``mcpmux::Error``
variant it stands for (``server``, ``tool``, ``reason`` …), ``kind`` (the variant's name in
snake case) and ``for_model`` (the error as a model should see it: our words plain, any text
from the server wrapped as untrusted data). A tool that *answers* with ``isError`` does not
raise: it returns a :class:`mcpmux.ToolResult` whose ``is_error`` is true.

Hierarchy::

    McpmuxError
    ├── ConfigError             bad config, policy or options; two servers of one name
    ├── ServerUnavailable       cannot connect, disabled, failed, required server failed
    │   ├── CircuitOpen         too many failures in a row: held off for a while
    │   ├── AuthRequired        OAuth failed or is needed
    │   ├── ToolSourceError     a Python tool source's list_tools raised
    │   └── ConnectionLost      the connection broke during the call
    ├── ToolTimeout             (also TimeoutError) no answer in time
    ├── InvalidArguments        (also ValueError) the arguments do not fit the tool's schema
    ├── PolicyRefused           a deny rule, or an ask rule the approver refused
    │   └── OutOfScope          the tool's server is not for the caller's stage/agent
    ├── UnknownTool             (also LookupError) no such tool; ``suggestion`` may name one
    ├── UnknownServer           (also LookupError) no such server
    ├── UnusableTool            the tool's input schema is beyond the bounds the hub keeps
    ├── ServerError             the server answered a JSON-RPC error (``code``)
    ├── ProtocolError           the server answered something that is not MCP
    └── Cancelled               the call was cancelled or the hub is shutting down
"""

from __future__ import annotations

from typing import Any

__all__ = [
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
]


class McpmuxError(Exception):
    """Base of every mcpmux exception; ``str(e)`` is the library's message."""

    message: str
    kind: str
    server: str | None
    tool: str | None
    reason: str | None
    for_model: str

    def __init__(
        self,
        message: str,
        *,
        kind: str = "error",
        server: str | None = None,
        tool: str | None = None,
        reason: str | None = None,
        for_model: str | None = None,
        **fields: Any,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.kind = kind
        self.server = server
        self.tool = tool
        self.reason = reason
        self.for_model = message if for_model is None else for_model
        for key, value in fields.items():
            setattr(self, key, value)

    def __reduce__(self) -> tuple[Any, ...]:
        fields = {k: v for k, v in self.__dict__.items() if k != "message"}
        return (_rebuild, (type(self), self.message, fields))


def _rebuild(cls: type[McpmuxError], message: str, fields: dict[str, Any]) -> McpmuxError:
    return cls(message, **fields)


class ConfigError(McpmuxError):
    """The configuration, the policy rules or the options given are wrong."""


class ServerUnavailable(McpmuxError):
    """The server cannot take calls now (``state`` says which state, ``reason`` why).

    ``stderr_tail`` holds the last lines the server wrote, when it wrote any.
    """

    state: str | None = None
    stderr_tail: list[str] = []


class CircuitOpen(ServerUnavailable):
    """The server's circuit breaker is open after consecutive failures; it is probed again
    after a cool-down."""


class AuthRequired(ServerUnavailable):
    """OAuth failed for the server, or it needs a login (``mcpmux auth login NAME``)."""


class ToolSourceError(ServerUnavailable):
    """A Python tool source's ``list_tools`` raised: ``server`` names the source,
    ``exception_type`` and ``exception_message`` say what it raised (the message cut to 500
    characters, never its traceback)."""

    exception_type: str | None = None
    exception_message: str | None = None


class ConnectionLost(ServerUnavailable):
    """The connection broke while the call was in flight (``what`` was in flight)."""

    what: str | None = None


class ToolTimeout(McpmuxError, TimeoutError):
    """Something did not answer in time: ``what`` (``tools/call echo``), ``after`` seconds."""

    what: str | None = None
    after: float | None = None


class InvalidArguments(McpmuxError, ValueError):
    """The arguments do not fit the tool's input schema (``reason`` says how, in words a
    model can act on); the call never reached the tool."""


class PolicyRefused(McpmuxError):
    """The permission policy refused the call before it reached the server: ``rule`` matched;
    ``asked`` is true when an approver said no."""

    rule: str | None = None
    asked: bool = False


class OutOfScope(PolicyRefused):
    """The tool's server is not for the caller's ``scope`` (``STAGE/AGENT``)."""

    scope: str | None = None


class UnknownTool(McpmuxError, LookupError):
    """No tool has that name; ``suggestion`` is the closest name, when one is close."""

    suggestion: str | None = None


class UnknownServer(McpmuxError, LookupError):
    """No server of that name is configured."""


class UnusableTool(McpmuxError):
    """The tool's input schema is beyond the bounds the hub keeps (a ``$ref`` cycle …)."""


class ServerError(McpmuxError):
    """The server answered with a JSON-RPC error ``code``."""

    code: int | None = None


class ProtocolError(McpmuxError):
    """The server answered something that is not valid MCP."""


class Cancelled(McpmuxError):
    """The call was cancelled, or the hub is shutting down."""

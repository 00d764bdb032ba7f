"""What the native module calls back into: a handler, a built-in function or an approver,
wrapped as a plain synchronous object. The native side calls it on a worker thread with the
GIL held; a coroutine the Python code returns is run on the event loop of the async hub that
registered it (or on a fresh loop for the blocking hub). Nothing here is public."""

from __future__ import annotations

import asyncio
import inspect
import warnings
from typing import Any, Awaitable, Callable

from ._types import ApprovalRequest


async def _await(value: Awaitable[Any]) -> Any:
    return await value


class Runner:
    """Resolves what a callback returned: a value as is, an awaitable to its result."""

    def __init__(self, loop: asyncio.AbstractEventLoop | None) -> None:
        self.loop = loop

    def resolve(self, value: Any) -> Any:
        if not inspect.isawaitable(value):
            return value
        loop = self.loop
        if loop is not None and loop.is_running():
            return asyncio.run_coroutine_threadsafe(_await(value), loop).result()
        return asyncio.run(_await(value))


def _plain(value: Any) -> Any:
    """A pydantic model (an ``mcp.types`` record, say) as the MCP dict it stands for."""
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        return dump(by_alias=True, exclude_none=True, mode="json")
    return value


def _tool_dict(tool: Any) -> Any:
    tool = _plain(tool)
    if isinstance(tool, dict):
        return tool
    record: dict[str, Any] = {"name": getattr(tool, "name", None)}
    for key in ("description", "title", "input_schema", "inputSchema", "annotations"):
        if getattr(tool, key, None) is not None:
            record[key] = getattr(tool, key)
    return record


def source_name(handler: Any) -> str:
    """A handler's name: its ``name`` attribute, else its class name."""
    name = getattr(handler, "name", None)
    return name if isinstance(name, str) and name else type(handler).__name__


class SourceBridge:
    """A custom tool source: ``handler.list_tools()`` and ``handler.call_tool(name, arguments)``,
    each sync or async."""

    def __init__(self, handler: Any, runner: Runner) -> None:
        if not callable(getattr(handler, "list_tools", None)) or not callable(
            getattr(handler, "call_tool", None)
        ):
            raise TypeError(
                f"a handler needs list_tools() and call_tool(name, arguments) methods: {handler!r}"
            )
        self.handler = handler
        self.runner = runner
        self.name = source_name(handler)

    def list_tools(self) -> list[Any]:
        return [_tool_dict(t) for t in self.runner.resolve(self.handler.list_tools())]

    def call_tool(self, name: str, arguments: Any) -> Any:
        return _plain(self.runner.resolve(self.handler.call_tool(name, arguments or {})))


class BuiltinBridge:
    """A built-in tool: ``function(**arguments)``, sync or async."""

    def __init__(self, builtin: Any, runner: Runner) -> None:
        self.name = builtin.name
        self.description = builtin.description
        self.input_schema = dict(builtin.input_schema)
        self.annotations = dict(builtin.annotations)
        self.function = builtin.function
        self.runner = runner

    def call(self, arguments: Any) -> Any:
        return _plain(self.runner.resolve(self.function(**(arguments or {}))))


class ApproverBridge:
    """The harness's approver: ``approver(ApprovalRequest)`` answers a bool or
    ``(bool, reason)``, sync or async. Only ``True`` itself approves: anything else (``"no"``,
    ``1``, ``{"approved": False}``, ``None``) denies, and an answer that is not a bool is
    warned about, naming its type, since it is most likely a mistake in the approver."""

    def __init__(self, approver: Callable[[ApprovalRequest], Any], runner: Runner) -> None:
        self.approver = approver
        self.runner = runner

    def approve(self, tool: str, arguments: Any, rule: str) -> tuple[bool, str | None]:
        answer = self.runner.resolve(self.approver(ApprovalRequest(tool, arguments or {}, rule)))
        reason = None
        if isinstance(answer, tuple) and len(answer) == 2:
            answer, given = answer
            reason = None if given is None else str(given)
        if answer is True:
            return True, reason
        if answer is not False:
            why = (
                f"the approver answered {type(answer).__name__} for `{tool}`, not True or False "
                "(or a (bool, reason) pair): denied, since only True approves"
            )
            warnings.warn(why, RuntimeWarning, stacklevel=2)
            return False, why
        return False, reason

"""What the native module calls back into: a handler, a built-in function or an approver,
wrapped as a plain synchronous object. The native side calls it on a worker thread with the
GIL held. A coroutine the Python code returns is handed to the event loop of the async hub that
registered it, and the bridge answers at once with that ``concurrent.futures.Future`` (the
native side reads its result on the loop's thread, so the worker never waits attached to
Python: see ``callback.rs``); for the blocking hub it runs on a fresh loop. Nothing here is
public."""

from __future__ import annotations

import asyncio
import concurrent.futures
import inspect
import threading
import warnings
from typing import Any, Awaitable, Callable

from ._types import ApprovalRequest


async def _await(value: Awaitable[Any]) -> Any:
    return await value


async def _settle(
    value: Awaitable[Any], then: Callable[[Any], Any], failed: Callable[[Exception], Any] | None
) -> Any:
    try:
        got = await value
    except Exception as e:
        if failed is None:
            raise
        return failed(e)
    return then(got)


def _is_async(fn: Any) -> bool:
    """Whether calling ``fn`` only makes a coroutine (an ``async def`` function or method, or
    an object whose ``__call__`` is one)."""
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(getattr(fn, "__call__", None))


def _done(value: Any) -> "concurrent.futures.Future[Any]":
    future: concurrent.futures.Future[Any] = concurrent.futures.Future()
    future.set_result(value)
    return future


#: Most Python tools, approvers and host callbacks running at once (each a thread while it
#: runs; threads are made as needed): as many as tokio's blocking pool let run before, within
#: reason for a process.
MAX_PYTHON_CALLS = 256

_pool: "concurrent.futures.ThreadPoolExecutor | None" = None
_pool_lock = threading.Lock()


def _executor() -> concurrent.futures.ThreadPoolExecutor:
    """The threads Python callbacks run on, made on first use."""
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = concurrent.futures.ThreadPoolExecutor(MAX_PYTHON_CALLS, thread_name_prefix="mcpmux-python")
        return _pool


class Runner:
    """Resolves what a callback returned: a value as is, an awaitable to its result."""

    def __init__(self, loop: asyncio.AbstractEventLoop | None) -> None:
        self.loop = loop

    def submit(
        self,
        fn: Callable[..., Any],
        args: tuple[Any, ...] = (),
        then: Callable[[Any], Any] = lambda value: value,
        failed: Callable[[Exception], Any] | None = None,
    ) -> "concurrent.futures.Future[Any]":
        """A future of ``then(fn(*args))``, ``fn`` run on a thread of Python's own (never the
        caller's: the native side's worker thread only starts it) — or, for a coroutine
        function while the hub's loop runs, as a task of that loop, taking no thread.
        ``failed(exception)`` answers for ``fn`` raising, when given.

        Python threads, not the runtime's, because Python knows them: it waits for them
        before it finalizes, so a script that exits while a synchronous tool runs is not
        crashed by a foreign thread taking the GIL back too late."""
        loop = self.loop
        if _is_async(fn) and loop is not None and loop.is_running():
            try:
                coroutine = fn(*args)
            except Exception as e:
                if failed is None:
                    raise
                return _done(failed(e))
            return asyncio.run_coroutine_threadsafe(_settle(coroutine, then, failed), loop)
        return _executor().submit(self._work, fn, args, then, failed)

    def _work(
        self,
        fn: Callable[..., Any],
        args: tuple[Any, ...],
        then: Callable[[Any], Any],
        failed: Callable[[Exception], Any] | None,
    ) -> Any:
        try:
            value = self.resolve(fn(*args))
        except Exception as e:
            if failed is None:
                raise
            return failed(e)
        return then(value)

    def resolve(self, value: Any) -> Any:
        """``value``, or the result of the awaitable it is (on the hub's loop while it runs,
        else a fresh one); waits, so only for a thread of Python's own."""
        if not inspect.isawaitable(value):
            return value
        loop = self.loop
        if loop is not None and loop.is_running():
            return asyncio.run_coroutine_threadsafe(_await(value), loop).result()
        return asyncio.run(_await(value))


def _keywords(function: Callable[..., Any]) -> Callable[[dict[str, Any]], Any]:
    """``function`` taking its arguments as one dict, kept a coroutine function if it was."""
    if _is_async(function):

        async def call_async(arguments: dict[str, Any]) -> Any:
            return await function(**arguments)

        return call_async

    def call(arguments: dict[str, Any]) -> Any:
        return function(**arguments)

    return call


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

    def list_tools(self) -> Any:
        return self.runner.submit(self.handler.list_tools, (), lambda tools: [_tool_dict(t) for t in tools])

    def call_tool(self, name: str, arguments: Any) -> Any:
        return self.runner.submit(self.handler.call_tool, (name, arguments or {}), _plain)


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
        return self.runner.submit(_keywords(self.function), (arguments or {},), _plain)


class ApproverBridge:
    """The harness's approver: ``approver(ApprovalRequest)`` answers a bool or
    ``(bool, reason)``, sync or async. Only ``True`` itself approves: anything else (``"no"``,
    ``1``, ``{"approved": False}``, ``None``) denies, and an answer that is not a bool is
    warned about, naming its type, since it is most likely a mistake in the approver."""

    def __init__(self, approver: Callable[[ApprovalRequest], Any], runner: Runner) -> None:
        self.approver = approver
        self.runner = runner

    def approve(self, tool: str, arguments: Any, rule: str) -> Any:
        """``(approved, reason)``, or a future of it for an async approver."""
        request = ApprovalRequest(tool, arguments or {}, rule)
        return self.runner.submit(self.approver, (request,), lambda answer: self.judge(tool, answer))

    def judge(self, tool: str, answer: Any) -> tuple[bool, str | None]:
        """The approver's answer as ``(approved, reason)``: only ``True`` approves."""
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

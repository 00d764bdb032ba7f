"""The blocking hub: the same surface without asyncio, safe from many threads at once, with
the GIL released while a call waits."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

import mcpmux
from conftest import in_a_forked_child, testserver


def test_a_blocking_hub_lists_calls_and_shuts_down() -> None:
    with mcpmux.BlockingHub({"t": testserver()}, ephemeral=True) as hub:
        assert "mcp__t__echo" in {t.name for t in hub.tools()}
        assert hub.call("mcp__t__echo", {"text": "sync"}).text == "sync"
        assert hub.call_tool("mcp__t__echo", '{"text": "json"}').text == "json"
        with pytest.raises(mcpmux.UnknownTool):
            hub.call("mcp__t__nope")
        assert "no tool named" in hub.call_for_model("mcp__t__nope")


def test_a_blocking_hub_used_in_a_forked_child_raises_instead_of_hanging() -> None:
    with mcpmux.BlockingHub({"t": testserver()}, ephemeral=True) as hub:
        assert hub.call("mcp__t__echo", {"text": "parent"}).text == "parent"
        outcome = in_a_forked_child(lambda: hub.call("mcp__t__echo", {"text": "child"}).text)
        assert outcome.startswith("RuntimeError: ") and "forked" in outcome, outcome
        for work in (
            lambda: hub.resources(),
            lambda: hub.call("mcp__t__slow", {"ms": 10}, progress=print),
            lambda: next(hub.resource_events(timeout=1), None),
        ):
            outcome = in_a_forked_child(work)
            assert outcome.startswith("RuntimeError: ") and "forked" in outcome, outcome
        # A new hub in the child cannot run either: the threads it would run on stayed behind.
        fresh = in_a_forked_child(lambda: mcpmux.BlockingHub({"t": testserver()}).start())
        assert fresh.startswith("RuntimeError: ") and "forked" in fresh, fresh
        # The parent's hub is untouched.
        assert hub.call("mcp__t__echo", {"text": "still"}).text == "still"


def test_sixteen_threads_call_one_blocking_hub_at_once() -> None:
    with mcpmux.BlockingHub({"t": testserver()}, ephemeral=True) as hub:
        def worker(n: int) -> list[str]:
            return [hub.call("mcp__t__echo", {"text": f"{n}-{i}"}).text for i in range(20)]

        with ThreadPoolExecutor(16) as pool:
            results = list(pool.map(worker, range(16)))
        assert results == [[f"{n}-{i}" for i in range(20)] for n in range(16)]


def test_the_gil_is_released_while_a_blocking_call_waits() -> None:
    ticks = 0
    stop = threading.Event()

    def count() -> None:
        nonlocal ticks
        while not stop.is_set():
            ticks += 1
            time.sleep(0.001)

    with mcpmux.BlockingHub({"t": testserver()}, ephemeral=True) as hub:
        counter = threading.Thread(target=count)
        counter.start()
        before = ticks
        hub.call("mcp__t__slow", {"ms": 300})
        during = ticks - before
        stop.set()
        counter.join()
    assert during > 50, f"the other thread ran only {during} times in 300 ms"


def test_async_handlers_work_under_the_blocking_hub() -> None:
    class Greeter:
        name = "greeter"

        def list_tools(self) -> list[dict[str, Any]]:
            return [{"name": "greet"}]

        async def call_tool(self, name: str, arguments: dict[str, Any]) -> str:
            return "hello"

    with mcpmux.BlockingHub(handlers=[Greeter()], ephemeral=True) as hub:
        assert hub.call("greet").text == "hello"


def test_a_blocking_call_from_inside_a_handler_answers_without_a_deadlock() -> None:
    # Handlers run on Python's own threads, not the runtime's: the inner call has the runtime
    # to itself.
    holder: dict[str, mcpmux.BlockingHub] = {}

    class Reentrant:
        name = "reentrant"

        def list_tools(self) -> list[dict[str, Any]]:
            return [{"name": "again"}]

        def call_tool(self, name: str, arguments: dict[str, Any]) -> str:
            return holder["hub"].call("mcp__t__echo", {"text": "inner"}).text

    with mcpmux.BlockingHub({"t": testserver()}, handlers=[Reentrant()], ephemeral=True) as hub:
        holder["hub"] = hub
        result = hub.call("again")
        assert not result.is_error and result.text == "inner"


def test_blocking_events_end_on_timeout_and_see_tool_list_changes() -> None:
    with mcpmux.BlockingHub({"t": testserver()}, ephemeral=True) as hub:
        events = hub.events(timeout=2.0)
        hub.call("mcp__t__change_tools")
        seen = []
        for event in events:
            seen.append(event)
            if event.type == "tools_changed":
                break
        assert any(e.type == "tools_changed" and e.server == "t" for e in seen)
        assert list(hub.events(timeout=0.05)) == []

"""A call's progress, as a callback (sync or async, on both hubs) or an async iterator, and
its cancellation: cancelling the Python task (or a progress callback that raises) cancels the
call upstream — the test server records the `notifications/cancelled` it received in its call
log."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import pytest

import mcpmux
from conftest import testserver

STEPS = [(1.0, 3.0, "step 1/3"), (2.0, 3.0, "step 2/3"), (3.0, 3.0, "step 3/3")]


def logged(log: Path) -> dict[str, object]:
    return {"t": testserver("--call-log", str(log))}


def seen_cancelled(log: Path, tool: str, within: float = 10.0) -> bool:
    """Whether the server logged the cancellation of `tool` (waiting for it, bounded)."""
    deadline = time.monotonic() + within
    while True:
        lines = log.read_text().splitlines() if log.exists() else []
        if {"cancelled": tool} in [json.loads(line) for line in lines]:
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.02)


async def cancelled_upstream(log: Path, tool: str, within: float = 10.0) -> bool:
    """`seen_cancelled` that keeps the event loop running meanwhile (the cancellation of a
    call's future reaches the call from the loop's next turn)."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if seen_cancelled(log, tool, within=0):
            return True
        await asyncio.sleep(0.02)
    return False


def triples(updates: list[mcpmux.Progress]) -> list[tuple[float, float | None, str | None]]:
    return [(p.progress, p.total, p.message) for p in updates]


async def test_a_progress_callback_sync_or_async_gets_each_notification_in_order() -> None:
    async with mcpmux.Hub({"t": testserver()}, ephemeral=True) as hub:
        synced: list[mcpmux.Progress] = []
        result = await hub.call("mcp__t__slow", {"ms": 150, "steps": 3}, progress=synced.append)
        assert result.text == "done after 3 steps" and triples(synced) == STEPS

        awaited: list[mcpmux.Progress] = []

        async def report(update: mcpmux.Progress) -> None:
            await asyncio.sleep(0)
            awaited.append(update)

        await hub.call("mcp__t__slow", {"ms": 150, "steps": 3}, progress=report)
        assert triples(awaited) == STEPS


async def test_call_with_progress_iterates_the_notifications_then_gives_the_result() -> None:
    async with mcpmux.Hub({"t": testserver()}, ephemeral=True) as hub:
        call = hub.call_with_progress("mcp__t__slow", {"ms": 150, "steps": 3})
        assert triples([update async for update in call]) == STEPS
        assert call.done() and (await call).text == "done after 3 steps"
        # Without progress the iteration simply ends with the call.
        quiet = hub.call_with_progress("mcp__t__echo", {"text": "x"})
        assert [u async for u in quiet] == [] and (await quiet).text == "x"


async def test_cancelling_the_task_cancels_the_call_upstream(tmp_path: Path) -> None:
    log = tmp_path / "calls.jsonl"
    async with mcpmux.Hub(logged(log), ephemeral=True) as hub:
        task = asyncio.create_task(hub.call("mcp__t__hang"))
        await asyncio.sleep(0.2)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert await cancelled_upstream(log, "hang")
        assert (await hub.call("mcp__t__echo", {"text": "after"})).text == "after"


async def test_cancelling_a_task_iterating_progress_cancels_the_call_upstream(tmp_path: Path) -> None:
    log = tmp_path / "calls.jsonl"
    async with mcpmux.Hub(logged(log), ephemeral=True) as hub:
        first = asyncio.Event()

        async def watch() -> None:
            async for _ in hub.call_with_progress("mcp__t__slow", {"ms": 20000, "steps": 400}):
                first.set()

        task = asyncio.create_task(watch())
        await asyncio.wait_for(first.wait(), 10)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert await cancelled_upstream(log, "slow")


async def test_a_progress_callback_that_raises_cancels_the_call_and_raises(tmp_path: Path) -> None:
    log = tmp_path / "calls.jsonl"

    def stop(update: mcpmux.Progress) -> None:
        raise LookupError("enough")

    async with mcpmux.Hub(logged(log), ephemeral=True) as hub:
        with pytest.raises(LookupError, match="enough"):
            await hub.call("mcp__t__slow", {"ms": 20000, "steps": 400}, progress=stop)
        assert await cancelled_upstream(log, "slow")


def test_a_blocking_call_reports_progress_on_its_thread_and_a_raise_cancels_it(tmp_path: Path) -> None:
    import threading

    log = tmp_path / "calls.jsonl"
    with mcpmux.BlockingHub(logged(log), ephemeral=True) as hub:
        seen: list[tuple[mcpmux.Progress, threading.Thread]] = []
        result = hub.call(
            "mcp__t__slow", {"ms": 150, "steps": 3}, progress=lambda p: seen.append((p, threading.current_thread()))
        )
        assert result.text == "done after 3 steps"
        assert triples([p for p, _ in seen]) == STEPS
        assert {t for _, t in seen} == {threading.current_thread()}

        def stop(update: mcpmux.Progress) -> None:
            raise ValueError("stop")

        with pytest.raises(ValueError, match="stop"):
            hub.call("mcp__t__slow", {"ms": 20000, "steps": 400}, progress=stop)
        assert seen_cancelled(log, "slow")
        assert hub.call("mcp__t__echo", {"text": "still"}).text == "still"


async def test_unread_progress_keeps_the_newest_thousand_not_every_notification() -> None:
    # A server may send progress faster than a harness reads it: the oldest unread are
    # dropped (progress is cumulative), so memory stays bounded.
    async with mcpmux.Hub({"t": testserver()}, ephemeral=True) as hub:
        call = hub.call_with_progress("mcp__t__flood", {"count": 5000})
        assert (await call).text == "flooded 5000"
        kept = [update.progress async for update in call]
        assert len(kept) == 1024
        assert kept == [float(i) for i in range(5000 - 1023, 5001)]

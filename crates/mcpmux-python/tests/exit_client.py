"""A script that exits with mcpmux work still going on, for tests/test_exit.py. Usage:
python exit_client.py MODE TESTSERVER, MODE one of:

- `in-flight`: 32 calls in flight (and a Python tool mid-call) when `asyncio.run` ends and
  the interpreter exits, the hub never shut down;
- `closed`: exits right after its last `async with Hub` closed, as the benchmark's client;
- `events`: exits with an event iteration and a progress stream waiting;
- `blocking`: a blocking hub's last call returned, the hub not shut down;
- `daemon`: daemon threads mid-call on a blocking hub as the main thread ends;
- `sync-tool`: synchronous Python tools mid-call (on the runtime's blocking threads).

It prints `exiting` last: the test checks the exit status and that line."""

from __future__ import annotations

import asyncio
import sys
import threading
import time

import mcpmux

mode, server = sys.argv[1], sys.argv[2]
spec = {"t": {"command": server, "args": []}}


class Slow:
    name = "py"

    def list_tools(self) -> list[dict[str, object]]:
        return [{"name": "nap", "inputSchema": {"type": "object"}}]

    async def call_tool(self, name: str, arguments: dict[str, object]) -> str:
        await asyncio.sleep(5)
        return "late"


class SyncSlow:
    name = "sync"

    def list_tools(self) -> list[dict[str, object]]:
        return [{"name": "nap", "inputSchema": {"type": "object"}}]

    def call_tool(self, name: str, arguments: dict[str, object]) -> str:
        time.sleep(0.05)
        return "late"


async def in_flight() -> None:
    hub = await mcpmux.Hub(spec, handlers=[Slow()], ephemeral=True).start()
    assert (await hub.call("mcp__t__echo", {"text": "first"})).text == "first"
    for i in range(32):
        asyncio.ensure_future(hub.call("mcp__t__slow", {"ms": 50 + i * 10}))
    asyncio.ensure_future(hub.call("mcp__t__hang"))
    asyncio.ensure_future(hub.call("nap"))
    await asyncio.sleep(0.1)


async def closed() -> None:
    async with mcpmux.Hub(spec, ephemeral=True) as hub:
        await asyncio.gather(*(hub.call("mcp__t__echo", {"text": str(i)}) for i in range(64)))


async def events() -> None:
    hub = await mcpmux.Hub(spec, ephemeral=True).start()
    stream = hub.events().__aiter__()
    asyncio.ensure_future(stream.__anext__())
    asyncio.ensure_future(hub.call("mcp__t__slow", {"ms": 2000}, progress=lambda p: None))
    asyncio.ensure_future(hub.resource_events().__anext__())
    await asyncio.sleep(0.1)


def blocking() -> None:
    hub = mcpmux.BlockingHub(spec, ephemeral=True).start()
    assert hub.call("mcp__t__echo", {"text": "last"}).text == "last"


def daemon() -> None:
    hub = mcpmux.BlockingHub(spec, ephemeral=True).start()
    for i in range(8):
        threading.Thread(target=hub.call, args=("mcp__t__slow", {"ms": 20 + 5 * i}), daemon=True).start()
    time.sleep(0.01)


async def sync_tool() -> None:
    hub = await mcpmux.Hub(spec, handlers=[SyncSlow()], ephemeral=True).start()
    for _ in range(8):
        asyncio.ensure_future(hub.call("nap"))
    await asyncio.sleep(0.02)


if mode == "blocking":
    blocking()
elif mode == "daemon":
    daemon()
else:
    asyncio.run({"in-flight": in_flight, "closed": closed, "events": events, "sync-tool": sync_tool}[mode]())
print("exiting", flush=True)

"""The official Python SDK client (handshake era) calling `mcpmux serve` replicas through a
load balancer while the test kills the replica its session lives on. Usage:
    python py-failover.py '{"url":U,"release":PATH,"calls":N}'
Prints one JSON line per step:
    {"phase":"before","pid":P,"tools":n}      the upstream test server's pid (which replica)
    then waits (20 s at most) until the file `release` exists (the test killed a replica)
    {"call":i,"ok":true,"text":T} | {"call":i,"ok":false,"error":E}   echo calls; after a
        failed call the client starts a new session (re-initializes) before the next one
    {"reinitialized":true}                     after each new session
    {"phase":"after","pid":P}                  the pid seen through the new session
"""

import asyncio
import json
import os
import sys
import time

import anyio
from mcp import Client

scenario = json.loads(sys.argv[1])


def emit(value) -> None:
    print(json.dumps(value), flush=True)


def text(result) -> str:
    return "".join(getattr(block, "text", "") for block in result.content)


async def main() -> None:
    calls = scenario["calls"]
    following = 0
    first = True
    done = False
    while not done:
        broken = False
        try:
            async with Client(scenario["url"], mode="legacy", read_timeout_seconds=10) as client:
                if first:
                    first = False
                    tools = await client.list_tools()
                    pid = text(await client.call_tool("mcp__t__pid", {}))
                    emit({"phase": "before", "pid": int(pid), "tools": len(tools.tools)})
                    deadline = time.monotonic() + 20
                    while not os.path.exists(scenario["release"]):
                        if time.monotonic() > deadline:
                            raise TimeoutError("never released")
                        await anyio.sleep(0.01)
                else:
                    emit({"reinitialized": True})
                while following < calls and not broken:
                    i = following
                    following += 1
                    try:
                        with anyio.fail_after(15):
                            result = await client.call_tool("mcp__t__echo", {"text": f"call {i}"})
                        emit({"call": i, "ok": not result.is_error, "text": text(result)})
                    except Exception as error:  # what the client was told, for the test to read
                        emit({"call": i, "ok": False, "error": f"{type(error).__name__}: {error}"})
                        # The session is gone with its replica: leave it, start a new one.
                        broken = True
                if not broken:
                    pid = text(await client.call_tool("mcp__t__pid", {}))
                    emit({"phase": "after", "pid": int(pid)})
                    done = True
        except Exception as error:
            # Leaving a broken session may raise; the next loop starts a new one.
            if not broken:
                raise
            print(f"closing the old session: {error!r}", file=sys.stderr)


asyncio.run(main())

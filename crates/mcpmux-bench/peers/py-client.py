"""The Python SDK's client in the side-by-side benchmark: the same phases as the other clients,
one JSON line of figures on stdout. Usage:
    python py-client.py '{"cold":N,"calls":N,"total":N,"in_flight":N,"servers":N,"server":[CMD, ARGS...]}'
"""

import asyncio
import json
import os
import resource
import sys
import time
from contextlib import AsyncExitStack

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

config = json.loads(sys.argv[1])
params = StdioServerParameters(command=config["server"][0], args=config["server"][1:])
devnull = open(os.devnull, "w")


async def connect(stack: AsyncExitStack) -> ClientSession:
    read, write = await stack.enter_async_context(stdio_client(params, errlog=devnull))
    session = await stack.enter_async_context(ClientSession(read, write))
    await session.initialize()
    tools = await session.list_tools()
    if not tools.tools:
        raise RuntimeError("the server listed no tools")
    return session


async def echo(session: ClientSession, text: str) -> None:
    result = await session.call_tool("echo", {"text": text})
    got = result.content[0].text
    if got != text:
        raise RuntimeError(f"asked {text!r}, got {got!r}")


def percentile(values: list[float], p: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, round((len(values) - 1) * p))]


async def main() -> None:
    cold = []
    for _ in range(config["cold"]):
        start = time.perf_counter()
        async with AsyncExitStack() as stack:
            await connect(stack)
            cold.append(time.perf_counter() - start)

    async with AsyncExitStack() as stack:
        session = await connect(stack)
        for i in range(200):
            await echo(session, f"warm {i}")
        latencies = []
        cpu_before = time.process_time()
        for i in range(config["calls"]):
            start = time.perf_counter()
            await echo(session, f"call {i}")
            latencies.append(time.perf_counter() - start)
        cpu_per_call = (time.process_time() - cpu_before) / config["calls"]
        per_worker = config["total"] // config["in_flight"]

        async def worker(w: int) -> None:
            for i in range(per_worker):
                await echo(session, f"w{w} c{i}")

        start = time.perf_counter()
        await asyncio.gather(*(worker(w) for w in range(config["in_flight"])))
        calls_per_sec = per_worker * config["in_flight"] / (time.perf_counter() - start)
    one_server_rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

    # anyio scopes must be left by the task that entered them: one task holds each connection.
    ready = asyncio.Semaphore(0)
    done = asyncio.Event()

    async def hold() -> None:
        try:
            async with AsyncExitStack() as stack:
                await connect(stack)
                ready.release()
                await done.wait()
        except BaseException:
            ready.release()  # so a failed connection ends the run instead of hanging it
            raise

    start = time.perf_counter()
    holders = [asyncio.create_task(hold()) for _ in range(config["servers"])]
    for _ in holders:
        await ready.acquire()
    servers_ms = (time.perf_counter() - start) * 1e3
    done.set()
    await asyncio.gather(*holders)

    print(
        json.dumps(
            {
                "cold_ms": percentile(cold, 0.5) * 1e3,
                "p50_us": percentile(latencies, 0.5) * 1e6,
                "p99_us": percentile(latencies, 0.99) * 1e6,
                "cpu_per_call_us": cpu_per_call * 1e6,
                "calls_per_sec": calls_per_sec,
                "servers_ms": servers_ms,
                "peak_rss_one_mb": one_server_rss_mb,
                "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            }
        ),
        flush=True,
    )


asyncio.run(main())

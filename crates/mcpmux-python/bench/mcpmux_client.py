"""The mcpmux package in the Python side-by-side benchmark: the same phases as
crates/mcpmux-bench/peers/py-client.py (the Python SDK's), one JSON line of figures on stdout.
Usage: python mcpmux_client.py '{"cold":N,"calls":N,"total":N,"in_flight":N,"servers":N,"server":[CMD, ARGS...]}'
"""

import asyncio
import json
import resource
import sys
import time

import mcpmux

config = json.loads(sys.argv[1])
spec = {"command": config["server"][0], "args": config["server"][1:]}


async def echo(hub: mcpmux.Hub, text: str) -> None:
    result = await hub.call("mcp__echo__echo", {"text": text})
    if result.text != text:
        raise RuntimeError(f"asked {text!r}, got {result.text!r}")


def percentile(values: list[float], p: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, round((len(values) - 1) * p))]


async def main() -> None:
    cold = []
    for _ in range(config["cold"]):
        start = time.perf_counter()
        # Ephemeral: no era or tool cache on disk, so every start is as cold as the SDK's.
        hub = await mcpmux.Hub({"echo": spec}, ephemeral=True).start()
        if not hub.tools():
            raise RuntimeError("the server listed no tools")
        cold.append(time.perf_counter() - start)
        await hub.shutdown()

    async with mcpmux.Hub({"echo": spec}, ephemeral=True) as hub:
        for i in range(200):
            await echo(hub, f"warm {i}")
        latencies = []
        for i in range(config["calls"]):
            start = time.perf_counter()
            await echo(hub, f"call {i}")
            latencies.append(time.perf_counter() - start)
        per_worker = config["total"] // config["in_flight"]

        async def worker(w: int) -> None:
            for i in range(per_worker):
                await echo(hub, f"w{w} c{i}")

        start = time.perf_counter()
        await asyncio.gather(*(worker(w) for w in range(config["in_flight"])))
        calls_per_sec = per_worker * config["in_flight"] / (time.perf_counter() - start)

    start = time.perf_counter()
    many = {f"echo{i}": spec for i in range(config["servers"])}
    async with mcpmux.Hub(many, ephemeral=True) as hub:
        servers_ms = (time.perf_counter() - start) * 1e3
        if len(hub.tools()) != config["servers"]:
            raise RuntimeError("not every server listed its tool")

    print(
        json.dumps(
            {
                "cold_ms": percentile(cold, 0.5) * 1e3,
                "p50_us": percentile(latencies, 0.5) * 1e6,
                "p99_us": percentile(latencies, 0.99) * 1e6,
                "calls_per_sec": calls_per_sec,
                "servers_ms": servers_ms,
                "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            }
        ),
        flush=True,
    )


asyncio.run(main())

"""What a Python tool costs per call: sequential calls through the async ``Hub`` to a custom
tool source answering synchronously, the same source answering with a coroutine, and the two
kinds of built-in function, each against a trivial body; medians over interleaved rounds. No
server: the figures are the package's own crossing (runtime → Python → runtime → the loop).

    test-deps/.venv-py/bin/python crates/mcpmux-python/bench/python_tools.py [--calls N] [--rounds N]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import time
from typing import Any

import mcpmux


class SyncSource:
    name = "syncsrc"

    def list_tools(self) -> list[dict[str, Any]]:
        return [{"name": "sync_echo"}]

    def call_tool(self, name: str, arguments: dict[str, Any]) -> str:
        return "ok"


class AsyncSource:
    name = "asyncsrc"

    def list_tools(self) -> list[dict[str, Any]]:
        return [{"name": "async_echo"}]

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> str:
        return "ok"


@mcpmux.builtin()
def sync_builtin() -> str:
    """A sync built-in."""
    return "ok"


@mcpmux.builtin()
async def async_builtin() -> str:
    """An async built-in."""
    return "ok"


TOOLS = ["sync_echo", "async_echo", "sync_builtin", "async_builtin"]


async def p50_us(hub: mcpmux.Hub, tool: str, calls: int) -> float:
    for _ in range(50):  # warm-up
        await hub.call(tool)
    times = []
    for _ in range(calls):
        started = time.perf_counter_ns()
        result = await hub.call(tool)
        times.append(time.perf_counter_ns() - started)
        if result.text != "ok":
            raise SystemExit(f"{tool} answered {result.text!r}")
    return statistics.median(times) / 1000


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    figures: dict[str, list[float]] = {t: [] for t in TOOLS}
    async with mcpmux.Hub(
        handlers=[SyncSource(), AsyncSource()], builtins=[sync_builtin, async_builtin], ephemeral=True
    ) as hub:
        for round_ in range(args.rounds):
            order = TOOLS[round_ % len(TOOLS):] + TOOLS[: round_ % len(TOOLS)]
            for tool in order:
                figures[tool].append(await p50_us(hub, tool, args.calls))
    medians = {t: statistics.median(v) for t, v in figures.items()}
    if args.json:
        print(json.dumps(medians))
        return
    print(f"{args.rounds} interleaved rounds of {args.calls} calls, load average {os.getloadavg()[0]:.1f}")
    print("| tool | call p50 (µs) |\n|---|---:|")
    for tool, value in medians.items():
        print(f"| {tool} | {value:.0f} |")


if __name__ == "__main__":
    asyncio.run(main())

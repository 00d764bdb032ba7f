"""The adapters side by side: one agent run of a framework (OpenAI Agents SDK, PydanticAI,
LangChain) through mcpmux's adapter — every tool, and with ``search=True`` (``search_tools`` +
``call_tool``) — against the same run through the framework's own MCP support (the Agents SDK's
``MCPServerStdio``, PydanticAI's ``MCPToolset``, LangChain's ``langchain-mcp-adapters`` — which
needs ``mcp`` < 2, so it runs in test-deps/.venv-lc, a process per run, ``langchain_native.py``,
timed inside that process after a warm-up run there). Same
server (the workspace's test server over stdio, every tool), same scripted model endpoint
(``mcpmux-testmodel``, OpenAI wire): a tool call, then the answer. Figures, medians of the
rounds after a warm-up one (so no import is counted): wall time from connecting to the answer (server spawned and closed inside), and the
tool-definition tokens sent to the model over the run (JSON bytes / 4, the agent crate's
estimate).

    scripts/build-test-programs.sh
    test-deps/.venv-py/bin/python crates/mcpmux-python/bench/adapters.py [--rounds N] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Awaitable, Callable

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
SERVER = str(ROOT / "target" / "debug" / "mcpmux-testserver")
MODEL = ROOT / "target" / "debug" / "mcpmux-testmodel"
LC_PYTHON = ROOT / "test-deps" / ".venv-lc" / "bin" / "python"


class Endpoint:
    """The scripted model endpoint for one run."""

    def __init__(self, steps: list[dict[str, Any]]) -> None:
        self.process = subprocess.Popen(
            [str(MODEL), "openai", json.dumps(steps)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        assert self.process.stdout is not None
        self.base_url = self.process.stdout.readline().strip()

    def report(self) -> dict[str, Any]:
        out, _ = self.process.communicate(timeout=10)
        return json.loads(out)


def script(tool: str, search: bool) -> list[dict[str, Any]]:
    call = lambda name, args: {"tool_calls": [[name, json.dumps(args)]]}  # noqa: E731
    if search:
        return [
            call("search_tools", {"query": "echo text back"}),
            call("call_tool", {"name": tool, "arguments": {"text": "bench"}}),
            {"text": "done"},
        ]
    return [call(tool, {"text": "bench"}), {"text": "done"}]


async def agents_native(base_url: str) -> str:
    from agents import Agent, OpenAIChatCompletionsModel, Runner
    from agents.mcp import MCPServerStdio
    from openai import AsyncOpenAI

    client = AsyncOpenAI(base_url=base_url, api_key="sk-bench")
    async with MCPServerStdio(params={"command": SERVER, "args": []}) as server:
        agent = Agent(name="b", model=OpenAIChatCompletionsModel(model="m", openai_client=client), mcp_servers=[server])
        result = await Runner.run(agent, "echo bench")
    await client.close()
    return str(result.final_output)


async def agents_mcpmux(base_url: str, search: bool) -> str:
    import mcpmux
    from agents import Agent, OpenAIChatCompletionsModel, Runner
    from mcpmux.adapters.openai_agents import function_tools
    from openai import AsyncOpenAI

    client = AsyncOpenAI(base_url=base_url, api_key="sk-bench")
    async with mcpmux.Hub({"t": {"command": SERVER}}, ephemeral=True) as hub:
        agent = Agent(
            name="b",
            model=OpenAIChatCompletionsModel(model="m", openai_client=client),
            tools=function_tools(hub, search=search),
        )
        result = await Runner.run(agent, "echo bench")
    await client.close()
    return str(result.final_output)


async def pydantic_native(base_url: str) -> str:
    from fastmcp.client.transports import StdioTransport
    from pydantic_ai import Agent
    from pydantic_ai.mcp import MCPToolset
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    model = OpenAIChatModel("m", provider=OpenAIProvider(base_url=base_url, api_key="sk-bench"))
    agent = Agent(model, toolsets=[MCPToolset(StdioTransport(SERVER, []))])
    async with agent:
        result = await agent.run("echo bench")
    return str(result.output)


async def pydantic_mcpmux(base_url: str, search: bool) -> str:
    import mcpmux
    from mcpmux.adapters.pydantic_ai import pydantic_ai_tools
    from pydantic_ai import Agent
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    model = OpenAIChatModel("m", provider=OpenAIProvider(base_url=base_url, api_key="sk-bench"))
    async with mcpmux.Hub({"t": {"command": SERVER}}, ephemeral=True) as hub:
        result = await Agent(model, tools=pydantic_ai_tools(hub, search=search)).run("echo bench")
    return str(result.output)


async def langchain_mcpmux(base_url: str, search: bool) -> str:
    import mcpmux
    from langchain_loop import agent_loop
    from mcpmux.adapters.langchain import langchain_tools

    async with mcpmux.Hub({"t": {"command": SERVER}}, ephemeral=True) as hub:
        return await agent_loop(langchain_tools(hub, search=search), base_url)


async def langchain_native(base_url: str) -> tuple[str, float]:
    """The run in test-deps/.venv-lc's interpreter, after a warm-up run there (its own endpoint);
    the wall time is measured there."""
    warm_up = Endpoint(script("echo", False))
    child = await asyncio.create_subprocess_exec(
        str(LC_PYTHON), str(HERE / "langchain_native.py"), SERVER, warm_up.base_url, base_url,
        stdout=asyncio.subprocess.PIPE,
    )
    out, _ = await asyncio.wait_for(child.communicate(), timeout=120)
    warm_up.report()
    if child.returncode != 0:
        raise SystemExit(f"langchain_native.py exited with {child.returncode}")
    result = json.loads(out.decode().strip().splitlines()[-1])
    return str(result["answer"]), float(result["wall_ms"])


# (framework, via, run, tool name the model calls, search); a run returns the answer, or the
# answer and its wall time when it is measured in another process.
RUNS: list[tuple[str, str, Callable[[str], Awaitable[str | tuple[str, float]]], str, bool]] = [
    ("OpenAI Agents", "own MCP (MCPServerStdio)", agents_native, "echo", False),
    ("OpenAI Agents", "mcpmux", lambda u: agents_mcpmux(u, False), "mcp__t__echo", False),
    ("OpenAI Agents", "mcpmux, search", lambda u: agents_mcpmux(u, True), "mcp__t__echo", True),
    ("PydanticAI", "own MCP (MCPToolset)", pydantic_native, "echo", False),
    ("PydanticAI", "mcpmux", lambda u: pydantic_mcpmux(u, False), "mcp__t__echo", False),
    ("PydanticAI", "mcpmux, search", lambda u: pydantic_mcpmux(u, True), "mcp__t__echo", True),
    ("LangChain", "own MCP (langchain-mcp-adapters)", langchain_native, "echo", False),
    ("LangChain", "mcpmux", lambda u: langchain_mcpmux(u, False), "mcp__t__echo", False),
    ("LangChain", "mcpmux, search", lambda u: langchain_mcpmux(u, True), "mcp__t__echo", True),
]


async def once(run: Callable[[str], Awaitable[str | tuple[str, float]]], tool: str, search: bool) -> tuple[float, int]:
    endpoint = Endpoint(script(tool, search))
    started = time.perf_counter()
    result = await run(endpoint.base_url)
    wall = (time.perf_counter() - started) * 1000
    answer = result if isinstance(result, str) else result[0]
    if isinstance(result, tuple):
        wall = result[1]
    report = endpoint.report()
    if answer != "done" or report["violations"] or report["remaining"]:
        raise SystemExit(f"run failed: answer {answer!r}, {report}")
    tokens = sum(-(-r["tool_bytes"] // 4) for r in report["requests"])
    return wall, tokens


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    from agents import set_tracing_disabled

    set_tracing_disabled(True)
    figures: dict[str, list[tuple[float, int]]] = {}
    for framework, via, run, tool, search in RUNS:  # warm-up: every library imported once
        await once(run, tool, search)
    for _ in range(args.rounds):
        for framework, via, run, tool, search in RUNS:
            figures.setdefault(f"{framework} | {via}", []).append(await once(run, tool, search))
    medians = {
        key: {"wall_ms": statistics.median(w for w, _ in runs), "tool_tokens": statistics.median(t for _, t in runs)}
        for key, runs in figures.items()
    }
    if args.json:
        print(json.dumps(medians))
        return
    print("| framework | via | agent run wall (ms) | tool-definition tokens sent |")
    print("|---|---|---:|---:|")
    for key, m in medians.items():
        print(f"| {key} | {m['wall_ms']:.0f} | {m['tool_tokens']:.0f} |")


if __name__ == "__main__":
    asyncio.run(main())

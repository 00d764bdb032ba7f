"""One quick run of the Python side-by-side benchmark (tiny load), so it cannot rot: every
client drives the Node echo server and reports every figure."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest

from conftest import ROOT


def test_the_benchmark_runs_every_client_with_a_tiny_load() -> None:
    if shutil.which("node") is None:
        pytest.skip("node is not installed")
    bench = ROOT / "crates" / "mcpmux-python" / "bench" / "bench.py"
    out = subprocess.run(
        [sys.executable, str(bench), "--quick", "--json"], check=True, capture_output=True, text=True, timeout=300
    )
    medians = json.loads(out.stdout)
    assert set(medians) == {"Python SDK", "fastmcp", "mcpmux"}
    for client, figures in medians.items():
        for key in ("import_ms", "cold_ms", "p50_us", "p99_us", "calls_per_sec", "servers_ms", "peak_rss_mb"):
            assert figures[key] > 0, f"{client}: {key}"


def test_the_adapter_benchmark_runs_every_framework_both_ways_and_search_sends_fewer_tokens() -> None:
    pytest.importorskip("langchain_openai")
    bench = ROOT / "crates" / "mcpmux-python" / "bench" / "adapters.py"
    out = subprocess.run(
        [sys.executable, str(bench), "--rounds", "1", "--json"], check=True, capture_output=True, text=True, timeout=300
    )
    medians = json.loads(out.stdout)
    assert "OpenAI Agents | own MCP (MCPServerStdio)" in medians and "PydanticAI | own MCP (MCPToolset)" in medians
    assert medians["LangChain | own MCP (langchain-mcp-adapters)"]["wall_ms"] > 0
    for framework in ("OpenAI Agents", "PydanticAI", "LangChain"):
        every, search = medians[f"{framework} | mcpmux"], medians[f"{framework} | mcpmux, search"]
        assert every["wall_ms"] > 0 and search["tool_tokens"] < every["tool_tokens"] / 2, framework

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

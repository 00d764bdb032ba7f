"""A script that uses the package and exits right after its last hub closes ends cleanly: no
crash while the interpreter finalizes (a runtime thread taking the GIL then kills the process;
the benchmark's client, which exits right after its last `async with Hub`, crashed in 3 of 4
runs before the package let the runtime settle at exit)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest

from conftest import ROOT


def test_a_script_exits_cleanly_right_after_its_last_hub_closes() -> None:
    if shutil.which("node") is None:
        pytest.skip("node is not installed")
    client = ROOT / "crates" / "mcpmux-python" / "bench" / "mcpmux_client.py"
    server = ROOT / "crates" / "mcpmux-bench" / "peers" / "echo-server.mjs"
    load = {"cold": 1, "calls": 20, "total": 64, "in_flight": 32, "servers": 2, "server": ["node", str(server)]}
    for run in range(6):
        out = subprocess.run(
            [sys.executable, str(client), json.dumps(load)], capture_output=True, text=True, timeout=120
        )
        assert out.returncode == 0, f"run {run}: exit {out.returncode}\n{out.stderr[-2000:]}"
        assert json.loads(out.stdout.strip().splitlines()[-1])["p50_us"] > 0

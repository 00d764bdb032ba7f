"""A script ends cleanly whatever mcpmux work is still going on when the interpreter exits:
calls in flight, a Python tool mid-call, an event or progress iteration waiting, a hub never
shut down, or right after the last hub closed. No runtime thread touches Python after it
delivered a result (results cross as plain Rust values, made into Python on the loop's
thread), so nothing needs to wait at exit: the package registers no exit hook. Before that
cure a runtime thread taking the GIL while the interpreter finalized killed the process
(the benchmark's client crashed at exit in 3 of 4 runs)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from conftest import testserver

CLIENT = Path(__file__).with_name("exit_client.py")
MODES = ["in-flight", "closed", "events", "blocking", "daemon", "sync-tool"]


def test_importing_the_package_registers_no_exit_hook() -> None:
    # The standard library's own hooks (logging's, which asyncio imports) counted first.
    count = (
        "import asyncio, atexit, logging; n = atexit._ncallbacks(); import mcpmux; "
        "print(atexit._ncallbacks() - n)"
    )
    out = subprocess.run([sys.executable, "-c", count], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "0"


def test_fifty_runs_exit_cleanly_with_work_in_flight() -> None:
    server = testserver()["command"]
    failures = []
    for run in range(50):
        mode = MODES[run % len(MODES)]
        out = subprocess.run(
            [sys.executable, str(CLIENT), mode, server], capture_output=True, text=True, timeout=60
        )
        if out.returncode != 0 or not out.stdout.strip().endswith("exiting"):
            failures.append(f"run {run} ({mode}): exit {out.returncode}\n{out.stderr[-1500:]}")
    assert not failures, "\n".join(failures[:3]) + f"\n({len(failures)} of 50 failed)"

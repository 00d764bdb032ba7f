"""Shared paths and server specs: the workspace's test server (built by
scripts/test-python.sh) and the reference servers of test-deps/ (installed by
scripts/install-test-deps.sh); and work done in a forked child under a deadline. Every test
talks to real processes."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path
from typing import Any, Callable

import pytest

ROOT = Path(__file__).resolve().parents[3]
TARGET = Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))
TESTSERVER = TARGET / "debug" / "mcpmux-testserver"
TESTMODEL = TARGET / "debug" / "mcpmux-testmodel"
NODE_BIN = ROOT / "test-deps" / "node_modules" / ".bin"
PY_TIME = ROOT / "test-deps" / ".venv" / "bin" / "mcp-server-time"


def testserver(*args: str, **options: Any) -> dict[str, Any]:
    """A `[servers.NAME]` table for the test server with `args`."""
    if not TESTSERVER.exists():
        pytest.skip(f"{TESTSERVER} is not built: run scripts/test-python.sh")
    return {"command": str(TESTSERVER), "args": list(args), **options}


def node_server(name: str, *args: str, **options: Any) -> dict[str, Any]:
    """A reference Node server of test-deps/node_modules."""
    path = NODE_BIN / name
    if not path.exists():
        pytest.skip(f"{path} is missing: run scripts/install-test-deps.sh")
    return {"command": str(path), "args": list(args), **options}


def time_server(**options: Any) -> dict[str, Any]:
    """The Python reference server mcp-server-time of test-deps/.venv."""
    if not PY_TIME.exists():
        pytest.skip(f"{PY_TIME} is missing: run scripts/install-test-deps.sh")
    return {"command": str(PY_TIME), "args": ["--local-timezone", "UTC"], **options}


def in_a_forked_child(work: Callable[[], object], within: float = 20.0) -> str:
    """What `work()` returned or raised in a forked child, as text; a child still running after
    `within` seconds is killed and the test fails (a hang fails rather than hangs the suite)."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child never returns into pytest
        os.close(read)
        try:
            outcome = f"returned {work()!r}"
        except BaseException as e:  # noqa: BLE001 - everything is reported to the parent
            outcome = f"{type(e).__name__}: {e}"
        os.write(write, outcome.encode())
        os._exit(0)
    os.close(write)
    deadline = time.monotonic() + within
    try:
        while os.waitpid(pid, os.WNOHANG) == (0, 0):
            if time.monotonic() > deadline:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                pytest.fail(f"the forked child still ran after {within} s: it hung")
            time.sleep(0.02)
        return os.read(read, 65536).decode()
    finally:
        os.close(read)


class ScriptedEndpoint:
    """The scripted model endpoint (`mcpmux-testmodel`, built by scripts/build-test-programs.sh)
    serving `steps` in one provider's wire format; :meth:`report` ends it and returns what it
    saw: the checks that failed (`violations`), steps left, and per request its tool names and
    definition bytes."""

    def __init__(self, wire: str, steps: list[dict[str, Any]]) -> None:
        import json
        import subprocess

        if not TESTMODEL.exists():
            pytest.skip(f"{TESTMODEL} is not built: run scripts/build-test-programs.sh")
        self.wire = wire
        self.process = subprocess.Popen(
            [str(TESTMODEL), wire, json.dumps(steps)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        assert self.process.stdout is not None
        self.base_url = self.process.stdout.readline().strip()
        self._report: dict[str, Any] | None = None

    @property
    def model(self) -> str:
        """The `PROVIDER:MODEL` text for this endpoint."""
        return f"{self.wire}:scripted"

    def report(self) -> dict[str, Any]:
        import json

        if self._report is None:
            out, _ = self.process.communicate(timeout=10)
            self._report = json.loads(out)
        return self._report

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()

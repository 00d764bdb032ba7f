"""Shared paths and server specs: the workspace's test server (built by
scripts/test-python.sh) and the reference servers of test-deps/ (installed by
scripts/install-test-deps.sh). Every test talks to real processes."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[3]
TARGET = Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))
TESTSERVER = TARGET / "debug" / "mcpmux-testserver"
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

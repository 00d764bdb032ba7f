"""Side by side from Python: the Python SDK's client (``mcp``), fastmcp's client and the
``mcpmux`` package, each driving the same dependency-free Node echo server over stdio
(crates/mcpmux-bench/peers/echo-server.mjs), each in its own process, interleaved round after
round (a different client first each round), medians printed as a Markdown table.

Figures per client: the import of its library, cold start (server spawned → tools listed,
inside the process), sequential call p50/p99, calls/s with 32 in flight via asyncio, 10 servers
started concurrently, and the process's peak RSS. Each library is imported from bytecode, as
pip leaves it at install: the peers' is in site-packages; mcpmux's is compiled first
(``compile_package``), since a ``maturin develop`` install has none and PYTHONDONTWRITEBYTECODE
(set in this project's environment) keeps the interpreter from writing it, which had every
fresh interpreter compile mcpmux's Python source again inside the measured import.

    scripts/install-test-deps.sh
    (cd crates/mcpmux-python && VIRTUAL_ENV=$PWD/../../test-deps/.venv-py \\
        ../../test-deps/.venv-py/bin/maturin develop --profile wheel)
    test-deps/.venv-py/bin/python crates/mcpmux-python/bench/bench.py [--rounds N] [--quick] [--json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
SERVER = ["node", str(ROOT / "crates" / "mcpmux-bench" / "peers" / "echo-server.mjs")]
CLIENTS = {
    "Python SDK": ROOT / "crates" / "mcpmux-bench" / "peers" / "py-client.py",
    "fastmcp": HERE / "fastmcp_client.py",
    "mcpmux": HERE / "mcpmux_client.py",
}
# What a program of each client imports before it can start a server.
IMPORTS = {
    "Python SDK": "from mcp import ClientSession; from mcp.client.stdio import stdio_client",
    "fastmcp": "from fastmcp import Client",
    "mcpmux": "import mcpmux",
}
ROWS = [
    ("import_ms", "import of the client library (ms)", "{:.0f}"),
    ("cold_ms", "cold start → tools listed (ms)", "{:.1f}"),
    ("p50_us", "sequential call p50 (µs)", "{:.0f}"),
    ("p99_us", "sequential call p99 (µs)", "{:.0f}"),
    ("calls_per_sec", "calls/s, 32 in flight", "{:,.0f}"),
    ("servers_ms", "10 servers started concurrently (ms)", "{:.0f}"),
    ("peak_rss_mb", "client peak RSS (MB)", "{:.1f}"),
]


def run(client: str, load: dict[str, object]) -> dict[str, float]:
    """One run of one client in its own process."""
    out = subprocess.run(
        [sys.executable, str(CLIENTS[client]), json.dumps(load)],
        check=True,
        capture_output=True,
        text=True,
        timeout=600,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def compile_package() -> None:
    """Compiles the mcpmux package's Python source to bytecode, as pip does when it installs a
    wheel (a no-op where it is compiled already)."""
    where = subprocess.run(
        [sys.executable, "-c", "import os, mcpmux; print(os.path.dirname(mcpmux.__file__))"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    subprocess.run([sys.executable, "-m", "compileall", "-q", where], check=True, capture_output=True)


def import_ms(client: str) -> float:
    """How long a fresh interpreter takes to import the client's library."""
    code = f"import time; t = time.perf_counter(); {IMPORTS[client]}; print((time.perf_counter() - t) * 1e3)"
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
    return float(out.stdout.strip())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="one round of a tiny load (a smoke test)")
    parser.add_argument("--json", action="store_true", help="print the medians as JSON")
    args = parser.parse_args()
    if args.quick:
        load = {"cold": 1, "calls": 50, "total": 320, "in_flight": 32, "servers": 2, "server": SERVER}
        rounds = 1
    else:
        load = {"cold": 10, "calls": 5000, "total": 20000, "in_flight": 32, "servers": 10, "server": SERVER}
        rounds = args.rounds
    compile_package()
    names = list(CLIENTS)
    runs: dict[str, list[dict[str, float]]] = {name: [] for name in names}
    for round_ in range(rounds):
        for k in range(len(names)):
            name = names[(round_ + k) % len(names)]
            figures = run(name, load)
            figures["import_ms"] = import_ms(name)
            runs[name].append(figures)
    medians = {
        name: {key: statistics.median(r[key] for r in runs[name]) for key, _, _ in ROWS if key in runs[name][0]}
        for name in names
    }
    if args.json:
        print(json.dumps(medians))
        return
    print(f"{rounds} interleaved rounds, medians; load: {json.dumps({k: v for k, v in load.items() if k != 'server'})}")
    print()
    print("| metric | " + " | ".join(names) + " | mcpmux vs Python SDK |")
    print("|---|" + "---:|" * (len(names) + 1))
    for key, label, fmt in ROWS:
        cells = [fmt.format(medians[n][key]) if key in medians[n] else "—" for n in names]
        sdk, ours = medians["Python SDK"].get(key), medians["mcpmux"].get(key)
        ratio = "—"
        if sdk and ours:
            ratio = f"{ours / sdk:.2f}×"
        print(f"| {label} | " + " | ".join(cells) + f" | {ratio} |")


if __name__ == "__main__":
    main()

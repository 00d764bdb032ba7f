#!/usr/bin/env python3
"""What an idle `/mcp` session of a running `mcpmux serve --http` costs, piece by piece: the
gateway's resident set (RSS, /proc) after each step, each step's sessions or connections left
idle until the gateway parked them (`/metrics`), divided by their count:

  1. N sessions, handshake done, over 4 kept-alive connections, no GET stream: the parked
     record (and what the allocator kept of the workers it let go);
  2. the GET stream of each of those, opened once they are parked (served from its outbox,
     no worker brought back): a stream and its connection alone, made of memory the parked
     workers freed;
  3. N sessions more, each opening its GET stream right after its handshake (as the rmcp and
     TypeScript SDK clients do), on a connection of its own, not read past the answer's head:
     a session as a client holds it; less step 1's, the stream and its connection;
  4. N kept-alive connections that asked `/healthz` once and sit idle (from 127.0.0.2): a bare
     connection, hyper's state and task and the gateway's clock, without a stream.

  scripts/session-pieces.py --url http://127.0.0.1:PORT/mcp --pid PID [--count 256]

`--hook CMD` runs `CMD STEP` after each step (base, records, late-streams,
sessions-with-streams, bare): gdb attached to the gateway calling glibc's `malloc_stats()`
tells what of it is live.

Start the gateway with `--max-sessions-per-client` and `--max-connections-per-peer` above
COUNT (the bench's `mcpmux serve` takes 0, no cap, for the latter). Standard library only;
loopback only."""

import argparse
import http.client
import json
import socket
import subprocess
import sys
import time
import urllib.parse

INIT = json.dumps({
    "jsonrpc": "2.0", "id": 1, "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {},
               "clientInfo": {"name": "pieces", "version": "1"}},
}).encode()
DONE = json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}).encode()
HEADERS = {"content-type": "application/json", "accept": "application/json, text/event-stream"}


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def metric(host, port, name):
    conn = http.client.HTTPConnection(host, port, timeout=10)
    conn.request("GET", "/metrics")
    text = conn.getresponse().read().decode()
    conn.close()
    for line in text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    return 0.0


def settle(host, port, parked, deadline=20.0):
    """Waits until `parked` sessions are parked (or `deadline` s), then a little more."""
    until = time.monotonic() + deadline
    while time.monotonic() < until:
        if metric(host, port, "mcpmux_gateway_sessions_parked") >= parked:
            break
        time.sleep(0.25)
    time.sleep(1.0)
    return int(metric(host, port, "mcpmux_gateway_sessions_parked"))


def sessions(host, port, path, count):
    ids = []
    conns = [http.client.HTTPConnection(host, port, timeout=30) for _ in range(4)]
    for i in range(count):
        conn = conns[i % 4]
        conn.request("POST", path, INIT, HEADERS)
        answer = conn.getresponse()
        answer.read()
        session = answer.getheader("mcp-session-id")
        conn.request("POST", path, DONE, dict(HEADERS, **{
            "mcp-session-id": session, "mcp-protocol-version": "2025-06-18"}))
        conn.getresponse().read()
        ids.append(session)
    return ids, conns


def read_head(sock):
    head = b""
    while b"\r\n\r\n" not in head:
        chunk = sock.recv(4096)
        if not chunk:
            raise RuntimeError("the connection closed before the answer's head")
        head += chunk
    return head.split(b"\r\n", 1)[0].decode()


def stream(host, port, path, session):
    sock = socket.create_connection((host, port))
    sock.sendall((f"GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\n"
                  "Accept: text/event-stream\r\n"
                  f"Mcp-Session-Id: {session}\r\nMcp-Protocol-Version: 2025-06-18\r\n\r\n").encode())
    status = read_head(sock)
    if " 200 " not in status:
        raise RuntimeError(f"GET stream refused: {status}")
    return sock


def bare(host, port):
    sock = socket.create_connection((host, port), source_address=("127.0.0.2", 0))
    sock.sendall(f"GET /healthz HTTP/1.1\r\nHost: {host}:{port}\r\n\r\n".encode())
    read_head(sock)
    return sock


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", required=True)
    parser.add_argument("--pid", type=int, required=True)
    parser.add_argument("--count", type=int, default=256)
    parser.add_argument("--hook", help="a command run after each step, its name appended "
                        "(to inspect the gateway: its heap, say)")
    parser.add_argument("--hold", type=float, default=0,
                        help="seconds to keep everything open after printing (to inspect)")
    args = parser.parse_args()
    def hook(step):
        if args.hook:
            subprocess.run(f"{args.hook} {step}", shell=True, check=False)

    parts = urllib.parse.urlsplit(args.url)
    host, port, path, n = parts.hostname, parts.port, parts.path, args.count
    # One session come and gone first: what the first costs once is not per session.
    ids, conns = sessions(host, port, path, 1)
    settle(host, port, 1)
    base = rss_kib(args.pid)
    hook("base")
    ids, conns = sessions(host, port, path, n)
    parked1 = settle(host, port, n + 1)
    records = rss_kib(args.pid)
    hook("records")
    late = [stream(host, port, path, session) for session in ids]
    time.sleep(1.0)
    with_late = rss_kib(args.pid)
    hook("late-streams")
    streams = []
    for _ in range(n):
        [session], more = sessions(host, port, path, 1)
        streams.append(stream(host, port, path, session))
        for conn in more:
            conn.close()
    parked2 = settle(host, port, 2 * n + 1)
    with_streams = rss_kib(args.pid)
    parked_late = int(metric(host, port, "mcpmux_gateway_sessions_parked"))
    hook("sessions-with-streams")
    bares = [bare(host, port) for _ in range(n)]
    time.sleep(2.0)
    with_bare = rss_kib(args.pid)
    hook("bare")
    print(json.dumps({
        "count": n, "rss_base_kib": base,
        "parked_after_handshake": parked1, "parked_with_streams": parked2,
        "per_parked_record_kib": round((records - base) / n, 1),
        "per_late_get_stream_and_connection_kib": round((with_late - records) / n, 1),
        "per_session_with_stream_kib": round((with_streams - with_late) / n, 1),
        "parked_at_the_end": parked_late,
        "per_bare_kept_alive_connection_kib": round((with_bare - with_streams) / n, 1),
    }))
    sys.stdout.flush()
    time.sleep(args.hold)
    for sock in late + streams + bares:
        sock.close()
    for conn in conns:
        conn.close()


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""A flood of `/mcp` sessions against a running `mcpmux serve --http`, and the gateway's memory
(RSS from /proc) before, at the peak and after the sessions expired: the figures of the
README's "Sessions" section. Standard library only.

  scripts/session-flood.py --url http://127.0.0.1:8080/mcp --pid PID --count 15000 \
      [--initialized] [--wait-expiry SECS]

With --initialized each session finishes its handshake (an idle session); without it the
sessions are half-open, as a flood's are."""

import argparse
import http.client
import json
import threading
import time
import urllib.parse

INIT = json.dumps({
    "jsonrpc": "2.0", "id": 1, "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {},
               "clientInfo": {"name": "flood", "version": "1"}},
}).encode()
DONE = json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}).encode()


def rss_mb(pid):
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def worker(url, count, initialized, tally, lock):
    parts = urllib.parse.urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
    headers = {"content-type": "application/json",
               "accept": "application/json, text/event-stream"}
    for _ in range(count):
        conn.request("POST", parts.path, INIT, headers)
        answer = conn.getresponse()
        answer.read()
        session = answer.getheader("mcp-session-id")
        with lock:
            tally[answer.status] = tally.get(answer.status, 0) + 1
        if initialized and session:
            conn.request("POST", parts.path, DONE,
                         dict(headers, **{"mcp-session-id": session,
                                          "mcp-protocol-version": "2025-06-18"}))
            conn.getresponse().read()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", required=True)
    parser.add_argument("--pid", type=int, required=True)
    parser.add_argument("--count", type=int, default=15000)
    parser.add_argument("--threads", type=int, default=8)
    parser.add_argument("--initialized", action="store_true")
    parser.add_argument("--wait-expiry", type=float, default=0)
    args = parser.parse_args()
    before = rss_mb(args.pid)
    tally, lock = {}, threading.Lock()
    started = time.monotonic()
    each = args.count // args.threads
    threads = [threading.Thread(target=worker,
                                args=(args.url, each, args.initialized, tally, lock))
               for _ in range(args.threads)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    took = time.monotonic() - started
    peak = rss_mb(args.pid)
    print(json.dumps({"sessions_asked": each * args.threads, "answers": tally,
                      "seconds": round(took, 1), "rss_before_mb": round(before, 1),
                      "rss_peak_mb": round(peak, 1)}))
    if args.wait_expiry:
        time.sleep(args.wait_expiry)
        print(json.dumps({"rss_after_expiry_mb": round(rss_mb(args.pid), 1)}))


if __name__ == "__main__":
    main()

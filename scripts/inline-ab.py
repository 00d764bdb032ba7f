#!/usr/bin/env python3
"""An A/B of the gateway's inline path in one `mcpmux serve --http` process: sequential `tools/call`
echo calls on one session, each answered inline (no progress token) in turn with the same call
sent through rmcp's session worker (a progress token sends it there); p50 per round and the
median of the rounds. The served server must have an `echo` tool taking `text` (mcpmux-testserver
does). Standard library only.

  scripts/inline-ab.py http://127.0.0.1:PORT/mcp ROUNDS CALLS_PER_ROUND
"""
import http.client, json, sys, time, urllib.parse, statistics
url = urllib.parse.urlsplit(sys.argv[1]); rounds = int(sys.argv[2]); n = int(sys.argv[3])
c = http.client.HTTPConnection(url.hostname, url.port)
H = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
def post(body, sid=None):
    h = dict(H)
    if sid: h.update({"mcp-session-id": sid, "mcp-protocol-version": "2025-06-18"})
    c.request("POST", url.path, json.dumps(body), h); r = c.getresponse(); data = r.read()
    return r, data
r, _ = post({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"ab","version":"1"}}})
sid = r.getheader("mcp-session-id")
post({"jsonrpc":"2.0","method":"notifications/initialized"}, sid)
_, tools = post({"jsonrpc":"2.0","id":1,"method":"tools/list"}, sid)
tools = json.loads(tools)["result"]["tools"]
echo = next(t["name"] for t in tools if t["name"].endswith("echo"))
i = 10
def call(progress):
    global i; i += 1
    p = {"name": echo, "arguments": {"text": f"t{i}"}}
    if progress: p["_meta"] = {"progressToken": i}
    t = time.perf_counter(); r, data = post({"jsonrpc":"2.0","id":i,"method":"tools/call","params":p}, sid)
    dt = time.perf_counter() - t
    assert f"t{i}".encode() in data and r.status == 200, data[:200]
    return dt, r.getheader("content-type")
for _ in range(100): call(False); call(True)
med = {False: [], True: []}; kinds = {}
for rnd in range(rounds):
    s = {False: [], True: []}
    for k in range(n):
        for prog in ((False, True) if k % 2 else (True, False)):
            dt, ct = call(prog); s[prog].append(dt); kinds[prog] = ct
    for prog in s: med[prog].append(statistics.median(s[prog]) * 1e6)
    print(f"round {rnd}: inline p50 {med[False][-1]:.0f} us, rmcp worker p50 {med[True][-1]:.0f} us")
print(json.dumps({"inline_p50_us": round(statistics.median(med[False])), "worker_p50_us": round(statistics.median(med[True])), "content_types": {str(k): v for k, v in kinds.items()}}))

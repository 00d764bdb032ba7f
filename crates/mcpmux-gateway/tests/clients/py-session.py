"""The official Python SDK client holding ONE connection to `mcpmux serve` while a test changes
things around it (the served config). Usage:
    python py-session.py '{"stdio":{"command":C,"args":[...],"env":{...}}|"url":U,"mode":"auto"|"legacy"}'
`mode` "legacy" forces the initialize handshake (tools/list_changed arrives as a notification on
the session); "auto" speaks 2026-07-28 with mcpmux, and a `subscriptions/listen` stream for
tools/list_changed is opened before anything else. Prints {"ready":true,"protocol":P} once
connected, then reads one JSON action per line on stdin and prints one JSON line for each:
    {"do":"list"}                              -> {"tools":[names]}
    {"do":"call","name":N,"arguments":{...}}   -> {"result":{...}} or {"error":message}
    {"do":"changed","within":S}                -> {"changed":bool}: whether tools/list_changed
        arrived since the last "changed" (waiting S seconds at most for it)
Ends when stdin closes.
"""

import json
import os
import sys

import anyio
from mcp import Client, StdioServerParameters, types

scenario = json.loads(sys.argv[1])
heard = {"count": 0, "event": None}


def target():
    if "url" in scenario:
        return scenario["url"]
    stdio = scenario["stdio"]
    return StdioServerParameters(
        command=stdio["command"], args=stdio.get("args", []), env={**os.environ, **stdio.get("env", {})}
    )


def emit(value) -> None:
    print(json.dumps(value), flush=True)


def tools_changed() -> None:
    heard["count"] += 1
    heard["event"].set()
    heard["event"] = anyio.Event()


async def on_message(message) -> None:
    if isinstance(message, types.ToolListChangedNotification):
        tools_changed()


async def listen(client, *, task_status=anyio.TASK_STATUS_IGNORED) -> None:
    async with client.listen(tools_list_changed=True) as subscription:
        task_status.started()
        async for _event in subscription:
            tools_changed()


async def wait_changed(seen: int, within: float) -> bool:
    with anyio.move_on_after(within):
        while heard["count"] <= seen:
            await heard["event"].wait()
    return heard["count"] > seen


async def main() -> None:
    heard["event"] = anyio.Event()
    mode = scenario.get("mode", "auto")
    async with Client(target(), mode=mode, read_timeout_seconds=20, message_handler=on_message) as client:
        async with anyio.create_task_group() as tasks:
            if mode != "legacy":
                await tasks.start(listen, client)
            emit({"ready": True, "protocol": client.protocol_version})
            seen = 0
            while True:
                line = await anyio.to_thread.run_sync(sys.stdin.readline)
                if not line:
                    break
                action = json.loads(line)
                kind = action["do"]
                if kind == "list":
                    tools = await client.list_tools()
                    emit({"tools": [t.name for t in tools.tools]})
                elif kind == "call":
                    try:
                        result = await client.call_tool(action["name"], action.get("arguments", {}))
                        emit({"result": result.model_dump(mode="json", by_alias=True)})
                    except Exception as error:  # the test reads what the client was told
                        emit({"error": str(error)})
                elif kind == "changed":
                    changed = await wait_changed(seen, action.get("within", 20))
                    seen = heard["count"]
                    emit({"changed": changed})
                else:
                    raise ValueError(f"unknown action {kind}")
            tasks.cancel_scope.cancel()


anyio.run(main)

"""The official Python SDK client driving `mcpmux serve` for the gateway's integration tests.
Usage:
    python py-client.py '{"stdio":{"command":C,"args":[...],"env":{...}}|"url":U|"sse":U,"mode":"auto"|"legacy","actions":[...]}'
`url` is streamable HTTP (`…/mcp`), `sse` the legacy HTTP+SSE transport (`…/sse`, handshake era).
`mode` "auto" probes server/discover and speaks 2026-07-28 with a server that answers it;
"legacy" forces the initialize handshake. Actions, run in order, each print one JSON line:
    {"do":"version"}                              -> {"protocol": negotiated version}
    {"do":"list"}                                 -> {"tools":[names]}
    {"do":"call","name":N,"arguments":{...}}      -> {"result":{...},"progress":n} or {"error":message}
    {"do":"progress_then_cancel","name":N,"arguments":{...}}
        cancels the call at its first progress step -> {"progress":n,"cancelled":bool}
    {"do":"listen_then_call","name":N,"arguments":{...}}
        (2026-07-28) opens a tools list-changed listen, calls, waits (10 s at most) for the event
        -> {"listChanged":bool}
    {"do":"capabilities"}                         -> {"capabilities":{...}} (the server's)
    {"do":"resources"}                            -> {"resources":[Resource]}
    {"do":"templates"}                            -> {"templates":[ResourceTemplate]}
    {"do":"read","uri":U}                         -> {"contents":[...]} or {"error":message,"code":n}
    {"do":"prompts"}                              -> {"prompts":[Prompt]}
    {"do":"get_prompt","name":N,"arguments":{...}} -> {"prompt":GetPromptResult} or {"error":message,"code":n}
"""

import asyncio
import json
import os
import sys

import anyio
from mcp import Client, MCPError, StdioServerParameters
from mcp.client.sse import sse_client

scenario = json.loads(sys.argv[1])


def target():
    if "url" in scenario:
        return scenario["url"]
    if "sse" in scenario:
        return sse_client(scenario["sse"])
    stdio = scenario["stdio"]
    return StdioServerParameters(
        command=stdio["command"], args=stdio.get("args", []), env={**os.environ, **stdio.get("env", {})}
    )


def dump(model) -> dict:
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)


def emit(value) -> None:
    print(json.dumps(value), flush=True)


async def main() -> None:
    async with Client(target(), mode=scenario.get("mode", "auto"), read_timeout_seconds=20) as client:
        for action in scenario["actions"]:
            kind = action["do"]
            if kind == "version":
                emit({"protocol": client.protocol_version})
            elif kind == "list":
                tools = await client.list_tools()
                emit({"tools": [t.name for t in tools.tools]})
            elif kind == "call":
                steps = []

                async def progress(value, total, message):
                    steps.append(value)

                try:
                    result = await client.call_tool(
                        action["name"], action.get("arguments", {}), progress_callback=progress
                    )
                    emit({"result": result.model_dump(mode="json", by_alias=True), "progress": len(steps)})
                except Exception as error:  # the test reads what the client was told
                    emit({"error": str(error)})
            elif kind == "progress_then_cancel":
                # Cancels the call at its first progress step, then makes one more round trip.
                steps = []
                with anyio.CancelScope() as scope:

                    async def progress(value, total, message):
                        steps.append(value)
                        scope.cancel()

                    await client.call_tool(action["name"], action.get("arguments", {}), progress_callback=progress)
                emit({"progress": len(steps), "cancelled": scope.cancelled_caught})
            elif kind == "listen_then_call":
                changed = False
                async with client.listen(tools_list_changed=True) as subscription:
                    await client.call_tool(action["name"], action.get("arguments", {}))
                    with anyio.move_on_after(10):
                        async for _event in subscription:
                            changed = True
                            break
                emit({"listChanged": changed})
            elif kind == "capabilities":
                emit({"capabilities": client.server_capabilities.model_dump(mode="json", by_alias=True, exclude_none=True)})
            elif kind == "resources":
                listed = await client.list_resources()
                emit({"resources": [dump(r) for r in listed.resources]})
            elif kind == "templates":
                listed = await client.list_resource_templates()
                emit({"templates": [dump(t) for t in listed.resource_templates]})
            elif kind == "read":
                try:
                    read = await client.read_resource(action["uri"])
                    emit({"contents": [dump(c) for c in read.contents]})
                except MCPError as error:
                    emit({"error": str(error), "code": error.code})
            elif kind == "prompts":
                listed = await client.list_prompts()
                emit({"prompts": [dump(p) for p in listed.prompts]})
            elif kind == "get_prompt":
                try:
                    prompt = await client.get_prompt(action["name"], action.get("arguments", {}))
                    emit({"prompt": dump(prompt)})
                except MCPError as error:
                    emit({"error": str(error), "code": error.code})
            else:
                raise ValueError(f"unknown action {kind}")


asyncio.run(main())

"""The official Python SDK client driving `mcpmux serve` for the gateway's integration tests.
Usage:
    python py-client.py '{"stdio":{"command":C,"args":[...],"env":{...}}|"url":U|"sse":U,"mode":"auto"|"legacy","actions":[...]}'
`url` is streamable HTTP (`…/mcp`), `sse` the legacy HTTP+SSE transport (`…/sse`, handshake era).
With "url", "headers":{...} are sent on every request (an `Authorization: Bearer` token).
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
    {"do":"listen_events","name":N,"arguments":{...},"filter":{...},"count":n}
        (2026-07-28) opens a listen with `filter` (tools_list_changed, resources_list_changed,
        prompts_list_changed, resource_subscriptions), collects "before" events (0 by default),
        calls N, then collects events until there are n in all (10 s at most each)
        -> {"events":[{"kind":type,"uri":U}]}
With "answers": {"name": N, "model": M, "roots": [URI...], "approve": bool} the client
declares elicitation, sampling and roots, and answers each such request with those (a name,
or `approve` to a form asking for it; "hello from N"; the roots); what it was asked is
printed by {"do":"asked"} -> {"asked":[method...]}.
"""

import asyncio
import json
import os
import sys

import anyio
from mcp import Client, MCPError, StdioServerParameters, types
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

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


answers = scenario.get("answers")
asked = []


async def on_elicitation(context, params):
    asked.append("elicitation/create")
    properties = (params.model_dump(by_alias=True).get("requestedSchema") or {}).get("properties") or {}
    if "approve" in properties:
        return types.ElicitResult(action="accept", content={"approve": answers.get("approve", False)})
    return types.ElicitResult(action="accept", content={"name": answers.get("name", "nobody")})


async def on_sampling(context, params):
    asked.append("sampling/createMessage")
    text = types.TextContent(type="text", text=f"hello from {answers.get('name', 'nobody')}")
    return types.CreateMessageResult(role="assistant", content=text, model=answers.get("model", "py-model"))


async def on_roots(context):
    asked.append("roots/list")
    return types.ListRootsResult(roots=[types.Root(uri=uri) for uri in answers.get("roots", [])])


def callbacks() -> dict:
    if answers is None:
        return {}
    return {"elicitation_callback": on_elicitation, "sampling_callback": on_sampling, "list_roots_callback": on_roots}


def dump(model) -> dict:
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)


def emit(value) -> None:
    print(json.dumps(value), flush=True)


async def main() -> None:
    headers = scenario.get("headers")
    if headers and "url" in scenario:
        async with create_mcp_http_client(headers=headers) as http:
            await run(streamable_http_client(scenario["url"], http_client=http))
    else:
        await run(target())


async def run(server) -> None:
    async with Client(server, mode=scenario.get("mode", "auto"), read_timeout_seconds=20, **callbacks()) as client:
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
            elif kind == "listen_events":
                events = []
                async with client.listen(**action.get("filter", {})) as subscription:
                    stream = aiter(subscription)

                    async def take(n):
                        with anyio.move_on_after(10):
                            while len(events) < n:
                                event = await anext(stream)
                                events.append({"kind": type(event).__name__, "uri": getattr(event, "uri", None)})

                    await take(action.get("before", 0))
                    await client.call_tool(action["name"], action.get("arguments", {}))
                    await take(action.get("count", 1))
                emit({"events": events})
            elif kind == "asked":
                emit({"asked": asked})
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

"""A small agent loop on the official Python SDK client: it connects to `mcpmux serve` (stdio
or streamable HTTP; `mode` "auto" speaks 2026-07-28 with a server that answers it, "legacy"
the initialize handshake), lists the tools, sends them as tool definitions to a model endpoint
speaking OpenAI Chat Completions, runs the tool calls the model asks for through the MCP
session and sends their results back, until the model answers with text. Usage:
    python py-agent.py '{"stdio":{...}|"url":U,"mode":M,"model":BASE_URL,"prompt":P,"relist":bool}'
With "relist": true the client lists the tools again before every model request (as agent
frameworks that do not cache the list do), so it calls what it found by name; without, it lists
once. Prints one JSON line per model request, {"turn":n,"bytes":B,"tool_bytes":T,"tools":[names]}
(B the request body's bytes, T those of its `tools`), then {"answer":text,"calls":[names],"protocol":the version spoken}.
"""

import asyncio
import json
import os
import sys
import urllib.request

from mcp import Client, StdioServerParameters

MAX_TURNS = 8
scenario = json.loads(sys.argv[1])


def target():
    if "url" in scenario:
        return scenario["url"]
    stdio = scenario["stdio"]
    return StdioServerParameters(
        command=stdio["command"], args=stdio.get("args", []), env={**os.environ, **stdio.get("env", {})}
    )


def emit(value) -> None:
    print(json.dumps(value), flush=True)


def definitions(tools) -> list:
    return [
        {
            "type": "function",
            "function": {"name": t.name, "description": t.description or "", "parameters": t.input_schema},
        }
        for t in tools
    ]


def post(body: str) -> dict:
    """The model's answer to `body` (an HTTP error raises, failing the run)."""
    request = urllib.request.Request(
        scenario["model"] + "/chat/completions",
        data=body.encode(),
        headers={"content-type": "application/json", "authorization": "Bearer test"},
    )
    with urllib.request.urlopen(request, timeout=20) as response:
        return json.loads(response.read())


async def main() -> None:
    messages = [{"role": "user", "content": scenario["prompt"]}]
    calls = []
    async with Client(target(), mode=scenario.get("mode", "auto"), read_timeout_seconds=20) as client:
        tools = (await client.list_tools()).tools
        for turn in range(1, MAX_TURNS + 1):
            if scenario.get("relist") and turn > 1:
                tools = (await client.list_tools()).tools
            defs = definitions(tools)
            body = json.dumps({"model": "scripted", "messages": messages, "tools": defs})
            emit(
                {
                    "turn": turn,
                    "bytes": len(body.encode()),
                    "tool_bytes": len(json.dumps(defs).encode()),
                    "tools": [t.name for t in tools],
                }
            )
            message = (await asyncio.to_thread(post, body))["choices"][0]["message"]
            messages.append(message)
            if not message.get("tool_calls"):
                emit({"answer": message.get("content") or "", "calls": calls, "protocol": client.protocol_version})
                return
            for call in message["tool_calls"]:
                name = call["function"]["name"]
                calls.append(name)
                result = await client.call_tool(name, json.loads(call["function"]["arguments"] or "{}"))
                text = "\n".join(c.text for c in result.content if c.type == "text")
                messages.append({"role": "tool", "tool_call_id": call["id"], "content": text})
    raise RuntimeError(f"no answer in {MAX_TURNS} turns")


asyncio.run(main())

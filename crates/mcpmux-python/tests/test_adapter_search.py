"""Tool search in the adapters (`search=True`): each framework is handed the pinned tools plus
`search_tools` and `call_tool` instead of every tool; a search finds a tool by what it does and
`call_tool` calls it through the hub (validation, scope and untrusted wrapping as a direct
call); and a framework's own agent, driven by the scripted model endpoint over HTTP, solves a
task with the search → call sequence."""

from __future__ import annotations

import json
from typing import Any, Iterator

import pytest

import mcpmux
from conftest import ScriptedEndpoint, testserver

SERVERS = {
    "t": testserver(tools={"allow": ["echo", "add", "fail"]}),
    "u": testserver(tools={"allow": ["echo"]}, stages=["other"]),
}


@pytest.fixture
async def hub() -> Any:
    async with mcpmux.Hub(SERVERS, ephemeral=True) as hub:
        yield hub


@pytest.fixture
def endpoints() -> Iterator[list[ScriptedEndpoint]]:
    made: list[ScriptedEndpoint] = []
    yield made
    for endpoint in made:
        endpoint.close()


def call(tool: str, **arguments: Any) -> dict[str, Any]:
    return {"tool_calls": [[tool, json.dumps(arguments)]]}


async def test_langchain_search_hands_over_the_pinned_tools_and_the_two_meta_tools(hub: mcpmux.Hub) -> None:
    from mcpmux.adapters.langchain import langchain_tools

    tools = {t.name: t for t in langchain_tools(hub, "build/x", search=True, pinned=["mcp__t__add"])}
    assert set(tools) == {"mcp__t__add", "search_tools", "call_tool"}
    found = json.loads(await tools["search_tools"].ainvoke({"query": "echo text back"}))
    names = [t["name"] for t in found["tools"]]
    assert names[0] == "mcp__t__echo" and "input_schema" in found["tools"][0]
    assert "mcp__u__echo" not in names, "a tool outside the scope is never found"
    answer = await tools["call_tool"].ainvoke({"name": "mcp__t__echo", "arguments": {"text": "via call_tool"}})
    assert "via call_tool" in answer and "<untrusted_content" in answer
    refused = await tools["call_tool"].ainvoke({"name": "mcp__t__add", "arguments": {"a": "x", "b": 1}})
    assert "invalid arguments" in refused
    outside = await tools["call_tool"].ainvoke({"name": "mcp__u__echo", "arguments": {"text": "no"}})
    assert "unknown tool" in outside and "search_tools" in outside


def test_langchain_search_tools_of_a_blocking_hub_invoke_synchronously() -> None:
    from mcpmux.adapters.langchain import langchain_tools

    with mcpmux.BlockingHub(SERVERS, ephemeral=True) as hub:
        tools = {t.name: t for t in langchain_tools(hub, search=True)}
        assert set(tools) == {"search_tools", "call_tool"}
        assert "mcp__t__add" in tools["search_tools"].invoke({"query": "add two numbers"})
        assert "sync" in tools["call_tool"].invoke({"name": "mcp__t__echo", "arguments": {"text": "sync"}})
        assert "limit" in tools["search_tools"].invoke({"query": "add", "limit": 99})


async def test_openai_agents_search_pins_by_server_and_calls_found_tools(hub: mcpmux.Hub) -> None:
    from agents.tool_context import ToolContext

    from mcpmux.adapters.openai_agents import function_tools

    tools = {t.name: t for t in function_tools(hub, search=True, pinned=["u:*"])}
    assert set(tools) == {"mcp__u__echo", "search_tools", "call_tool"}
    context = ToolContext(context=None, tool_name="search_tools", tool_call_id="c1", tool_arguments="{}")
    found = await tools["search_tools"].on_invoke_tool(context, json.dumps({"query": "fail with a message"}))
    assert json.loads(found)["tools"][0]["name"] == "mcp__t__fail"
    answer = await tools["call_tool"].on_invoke_tool(
        context, json.dumps({"name": "mcp__t__echo", "arguments": {"text": "agents"}})
    )
    assert "agents" in answer


async def test_pydantic_ai_search_tools_are_pydantic_tools_that_find_and_call(hub: mcpmux.Hub) -> None:
    from pydantic_ai import Tool

    from mcpmux.adapters.pydantic_ai import pydantic_ai_tools

    tools = {t.name: t for t in pydantic_ai_tools(hub, search=True)}
    assert set(tools) == {"search_tools", "call_tool"} and all(isinstance(t, Tool) for t in tools.values())
    assert "mcp__t__echo" in await tools["search_tools"].function(query="echo")  # type: ignore[misc]
    answer = await tools["call_tool"].function(name="mcp__t__echo", arguments={"text": "pyd"})  # type: ignore[misc]
    assert "pyd" in answer


async def test_an_openai_agent_with_search_finds_and_calls_a_tool_through_the_scripted_endpoint(
    hub: mcpmux.Hub, endpoints: list[ScriptedEndpoint]
) -> None:
    from agents import Agent, OpenAIChatCompletionsModel, Runner, set_tracing_disabled
    from openai import AsyncOpenAI

    from mcpmux.adapters.openai_agents import function_tools

    set_tracing_disabled(True)
    model = ScriptedEndpoint(
        "openai",
        [
            call("search_tools", query="echo text back"),
            call("call_tool", name="mcp__t__echo", arguments={"text": "searched"}),
            {"text": "done"},
        ],
    )
    endpoints.append(model)
    client = AsyncOpenAI(base_url=model.base_url, api_key="sk-test")
    agent = Agent(
        name="searcher",
        model=OpenAIChatCompletionsModel(model="scripted", openai_client=client),
        tools=function_tools(hub, search=True),
    )
    result = await Runner.run(agent, "echo 'searched'")
    await client.close()
    assert result.final_output == "done"
    report = model.report()
    assert report["violations"] == [] and report["remaining"] == 0
    assert [sorted(r["tools"]) for r in report["requests"]] == [["call_tool", "search_tools"]] * 3


async def test_a_pydantic_ai_agent_with_search_finds_and_calls_a_tool_through_the_scripted_endpoint(
    hub: mcpmux.Hub, endpoints: list[ScriptedEndpoint]
) -> None:
    from pydantic_ai import Agent
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    from mcpmux.adapters.pydantic_ai import pydantic_ai_tools

    model = ScriptedEndpoint(
        "openai",
        [
            call("search_tools", query="echo text back"),
            call("call_tool", name="mcp__t__echo", arguments={"text": "searched"}),
            {"text": "done"},
        ],
    )
    endpoints.append(model)
    chat = OpenAIChatModel("scripted", provider=OpenAIProvider(base_url=model.base_url, api_key="sk-test"))
    agent = Agent(chat, tools=pydantic_ai_tools(hub, search=True))
    result = await agent.run("echo 'searched'")
    assert result.output == "done"
    report = model.report()
    assert report["violations"] == [] and report["remaining"] == 0


async def test_a_langchain_model_with_search_finds_and_calls_a_tool_through_the_scripted_endpoint(
    hub: mcpmux.Hub, endpoints: list[ScriptedEndpoint]
) -> None:
    pytest.importorskip("langchain_openai")
    from langchain_core.messages import HumanMessage, ToolMessage
    from langchain_openai import ChatOpenAI

    from mcpmux.adapters.langchain import langchain_tools

    model = ScriptedEndpoint(
        "openai",
        [
            call("search_tools", query="echo text back"),
            call("call_tool", name="mcp__t__echo", arguments={"text": "searched"}),
            {"text": "done"},
        ],
    )
    endpoints.append(model)
    tools = {t.name: t for t in langchain_tools(hub, search=True)}
    chat = ChatOpenAI(model="scripted", base_url=model.base_url, api_key="sk-test").bind_tools(list(tools.values()))
    messages: list[Any] = [HumanMessage("echo 'searched'")]
    outputs = []
    for _ in range(5):
        reply = await chat.ainvoke(messages)
        messages.append(reply)
        if not reply.tool_calls:
            break
        for tool_call in reply.tool_calls:
            output = await tools[tool_call["name"]].ainvoke(tool_call["args"])
            outputs.append(output)
            messages.append(ToolMessage(output, tool_call_id=tool_call["id"]))
    assert reply.content == "done"
    assert "searched" in outputs[-1]
    assert model.report()["violations"] == []

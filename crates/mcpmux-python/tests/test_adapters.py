"""The adapters against the real libraries they adapt (installed in test-deps/.venv-py):
LangChain tools, OpenAI Agents SDK function tools, PydanticAI tools — each listing the hub's
tools with their schemas and calling through the hub, including an agent run where the
framework offers a model that needs no network."""

from __future__ import annotations

import json
from typing import Any

import pytest

import mcpmux
from conftest import testserver



@pytest.fixture
async def hub() -> Any:
    async with mcpmux.Hub({"t": testserver(tools={"allow": ["echo", "add", "fail"]})}, ephemeral=True) as hub:
        yield hub


async def test_langchain_tools_carry_the_schema_and_call_through_the_hub(hub: mcpmux.Hub) -> None:
    from langchain_core.tools import BaseTool
    from langchain_core.utils.function_calling import convert_to_openai_tool

    from mcpmux.adapters.langchain import langchain_tools

    tools = {t.name: t for t in langchain_tools(hub)}
    assert set(tools) == {"mcp__t__echo", "mcp__t__add", "mcp__t__fail"}
    echo = tools["mcp__t__echo"]
    assert isinstance(echo, BaseTool)
    assert convert_to_openai_tool(echo)["function"]["parameters"]["properties"]["text"]["type"] == "string"
    answer = await echo.ainvoke({"text": "from langchain"})
    assert "from langchain" in answer and "<untrusted_content" in answer
    refused = await tools["mcp__t__add"].ainvoke({"a": "x", "b": 1})
    assert "invalid arguments" in refused


def test_langchain_tools_of_a_blocking_hub_invoke_synchronously() -> None:
    from mcpmux.adapters.langchain import langchain_tools

    with mcpmux.BlockingHub({"t": testserver()}, ephemeral=True) as hub:
        echo = next(t for t in langchain_tools(hub) if t.name == "mcp__t__echo")
        assert "sync chain" in echo.invoke({"text": "sync chain"})


async def test_openai_agents_function_tools_are_invoked_as_the_sdk_invokes_them(hub: mcpmux.Hub) -> None:
    from agents import FunctionTool
    from agents.tool_context import ToolContext

    from mcpmux.adapters.openai_agents import function_tools

    tools = {t.name: t for t in function_tools(hub)}
    echo = tools["mcp__t__echo"]
    assert isinstance(echo, FunctionTool)
    assert echo.strict_json_schema is True
    assert echo.params_json_schema["additionalProperties"] is False
    arguments = json.dumps({"text": "from agents"})
    context = ToolContext(context=None, tool_name=echo.name, tool_call_id="call_1", tool_arguments=arguments)
    answer = await echo.on_invoke_tool(context, arguments)
    assert "from agents" in answer
    failed = await tools["mcp__t__fail"].on_invoke_tool(context, json.dumps({"message": "no luck"}))
    assert "no luck" in failed


async def test_an_openai_agent_run_calls_a_hub_tool_through_a_scripted_model(hub: mcpmux.Hub) -> None:
    from agents import Agent, Runner, set_tracing_disabled

    from mcpmux.adapters.openai_agents import function_tools
    from scripted_openai_model import ScriptedModel

    set_tracing_disabled(True)  # no trace export: the run never leaves this machine

    model = ScriptedModel(tool="mcp__t__echo", arguments={"text": "agent says hi"})
    agent = Agent(name="tester", model=model, tools=function_tools(hub))
    result = await Runner.run(agent, "say hi")
    assert "agent says hi" in model.tool_output
    assert result.final_output == "done"


async def test_pydantic_ai_tools_run_in_an_agent_with_its_test_model(hub: mcpmux.Hub) -> None:
    from pydantic_ai import Agent
    from pydantic_ai.models.test import TestModel

    from mcpmux.adapters.pydantic_ai import pydantic_ai_tools

    tools = pydantic_ai_tools(hub)
    assert {t.name for t in tools} == {"mcp__t__echo", "mcp__t__add", "mcp__t__fail"}
    agent = Agent(TestModel(call_tools=["mcp__t__echo", "mcp__t__add"]), tools=tools)
    result = await agent.run("use the tools")
    returns = [
        part.content
        for message in result.all_messages()
        for part in getattr(message, "parts", [])
        if getattr(part, "part_kind", "") == "tool-return"
    ]
    assert len(returns) == 2
    assert all("<untrusted_content" in r for r in returns)

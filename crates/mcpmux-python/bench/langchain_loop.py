"""The LangChain agent loop both LangChain runs of ``adapters.py`` time: the tools bound to a
chat model on the scripted endpoint, the model asked until it answers, each tool call's result
sent back. Shared by ``adapters.py`` (mcpmux's adapter, the package's venv) and
``langchain_native.py`` (``langchain-mcp-adapters``, test-deps/.venv-lc), so it imports
LangChain only, never mcpmux or the MCP SDK."""

from __future__ import annotations

from typing import Any, Sequence

from langchain_core.messages import HumanMessage, ToolMessage
from langchain_openai import ChatOpenAI


async def agent_loop(tools: Sequence[Any], base_url: str, prompt: str = "echo bench") -> str:
    """Runs ``prompt`` with ``tools`` against the model at ``base_url``; its final answer."""
    by_name = {t.name: t for t in tools}
    chat = ChatOpenAI(model="m", base_url=base_url, api_key="sk-bench").bind_tools(list(by_name.values()))
    messages: list[Any] = [HumanMessage(prompt)]
    while True:
        reply = await chat.ainvoke(messages)
        messages.append(reply)
        if not reply.tool_calls:
            return str(reply.content)
        for call in reply.tool_calls:
            result = await by_name[call["name"]].ainvoke(call["args"])
            messages.append(ToolMessage(result, tool_call_id=call["id"]))

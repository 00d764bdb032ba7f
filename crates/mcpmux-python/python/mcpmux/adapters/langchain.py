"""The hub's tools as LangChain tools (``langchain_core.tools.StructuredTool``).

::

    from mcpmux.adapters.langchain import langchain_tools

    async with mcpmux.Hub.from_config() as hub:
        tools = langchain_tools(hub, scope="build/coder")
        model_with_tools = chat_model.bind_tools(tools)
        answer = await tools[0].ainvoke({"text": "hi"})

Each tool's argument schema is the MCP tool's JSON schema; it answers the text a model should
read (the result as untrusted data, or the error rendered for a model). With a
:class:`mcpmux.BlockingHub` the tools can also be invoked synchronously.
"""

from __future__ import annotations

from typing import Any

from langchain_core.tools import StructuredTool

from .._hub import BlockingHub
from .._types import ScopeLike
from . import AnyHub, answer

__all__ = ["langchain_tools"]


def langchain_tools(hub: AnyHub, scope: ScopeLike = None) -> list[StructuredTool]:
    """One ``StructuredTool`` per tool of ``scope``, calling through ``hub``."""
    return [_tool(hub, tool.name, tool.description or "", dict(tool.input_schema)) for tool in hub.tools(scope)]


def _tool(hub: AnyHub, name: str, description: str, schema: dict[str, Any]) -> StructuredTool:
    async def call(**arguments: Any) -> str:
        return await answer(hub, name, arguments)

    def call_sync(**arguments: Any) -> str:
        assert isinstance(hub, BlockingHub)
        return hub.call_for_model(name, arguments)

    return StructuredTool.from_function(
        func=call_sync if isinstance(hub, BlockingHub) else None,
        coroutine=call,
        name=name,
        description=description or name,
        args_schema=schema,
        infer_schema=False,
    )

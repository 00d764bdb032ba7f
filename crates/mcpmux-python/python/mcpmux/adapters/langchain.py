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

from typing import Any, Iterable

from langchain_core.tools import StructuredTool

from .._hub import BlockingHub
from .._types import ScopeLike
from . import AnyHub, answer
from ._search import CALL_SCHEMA, CALL_TOOL, SEARCH_SCHEMA, SEARCH_TOOL, ToolSearch

__all__ = ["langchain_tools"]


def langchain_tools(
    hub: AnyHub, scope: ScopeLike = None, *, search: bool = False, pinned: Iterable[str] = ()
) -> list[StructuredTool]:
    """One ``StructuredTool`` per tool of ``scope``, calling through ``hub``; with ``search``,
    only the ``pinned`` tools (names or patterns, ``SERVER:*``) plus ``search_tools`` and
    ``call_tool``."""
    if not search:
        return [_tool(hub, t.name, t.description or "", dict(t.input_schema)) for t in hub.tools(scope)]
    index = ToolSearch(hub, scope, pinned)
    tools = [_tool(hub, n, index.tools[n].description or "", dict(index.tools[n].input_schema)) for n in index.pinned]
    return tools + _meta_tools(hub, index)


def _meta_tools(hub: AnyHub, index: ToolSearch) -> list[StructuredTool]:
    def search_sync(query: Any, limit: Any = None) -> str:
        return index.search(query, limit)

    async def search(query: Any, limit: Any = None) -> str:
        return index.search(query, limit)

    def call_sync(name: Any, arguments: Any = None) -> str:
        return index.call_blocking(name, arguments)

    async def call(name: Any, arguments: Any = None) -> str:
        return await index.call(name, arguments)

    blocking = isinstance(hub, BlockingHub)
    return [
        StructuredTool.from_function(
            func=search_sync, coroutine=search, name=SEARCH_TOOL, description=index.search_description,
            args_schema=SEARCH_SCHEMA, infer_schema=False,
        ),
        StructuredTool.from_function(
            func=call_sync if blocking else None, coroutine=call, name=CALL_TOOL,
            description=index.call_description, args_schema=CALL_SCHEMA, infer_schema=False,
        ),
    ]


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

"""The hub's tools as PydanticAI tools (``pydantic_ai.Tool``).

::

    from pydantic_ai import Agent
    from mcpmux.adapters.pydantic_ai import pydantic_ai_tools

    async with mcpmux.Hub.from_config() as hub:
        agent = Agent("openai:gpt-5", tools=pydantic_ai_tools(hub, scope="build/coder"))

Each tool takes the MCP tool's JSON schema as is (the hub validates the arguments) and answers
the text a model should read.
"""

from __future__ import annotations

from typing import Any, Iterable

from pydantic_ai import Tool

from .._types import ScopeLike
from . import AnyHub, answer
from ._search import CALL_SCHEMA, CALL_TOOL, SEARCH_SCHEMA, SEARCH_TOOL, ToolSearch

__all__ = ["pydantic_ai_tools"]


def pydantic_ai_tools(
    hub: AnyHub, scope: ScopeLike = None, *, search: bool = False, pinned: Iterable[str] = ()
) -> list[Tool[Any]]:
    """One ``Tool`` per tool of ``scope``, calling through ``hub``; with ``search``, only the
    ``pinned`` tools (names or patterns, ``SERVER:*``) plus ``search_tools`` and ``call_tool``."""
    if not search:
        return [_tool(hub, t.name, t.description or "", dict(t.input_schema)) for t in hub.tools(scope)]
    index = ToolSearch(hub, scope, pinned)
    tools = [_tool(hub, n, index.tools[n].description or "", dict(index.tools[n].input_schema)) for n in index.pinned]

    async def search_tools(query: Any, limit: Any = None) -> str:
        return index.search(query, limit)

    async def call_tool(name: Any, arguments: Any = None) -> str:
        return await index.call(name, arguments)

    return tools + [
        Tool.from_schema(search_tools, name=SEARCH_TOOL, description=index.search_description, json_schema=SEARCH_SCHEMA),
        Tool.from_schema(call_tool, name=CALL_TOOL, description=index.call_description, json_schema=CALL_SCHEMA),
    ]


def _tool(hub: AnyHub, name: str, description: str, schema: dict[str, Any]) -> Tool[Any]:
    async def call(**arguments: Any) -> str:
        return await answer(hub, name, arguments)

    return Tool.from_schema(call, name=name, description=description, json_schema=schema)

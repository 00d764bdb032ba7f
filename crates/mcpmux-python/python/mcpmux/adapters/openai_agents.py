"""The hub's tools as OpenAI Agents SDK function tools (``agents.FunctionTool``).

::

    from agents import Agent
    from mcpmux.adapters.openai_agents import function_tools

    async with mcpmux.Hub.from_config() as hub:
        agent = Agent(name="coder", tools=function_tools(hub, scope="build/coder"))

Schemas come from the hub's ``openai-strict`` export: a tool whose schema fits OpenAI's
Structured Outputs subset is strict, any other is sent non-strict. Names the export had to
change are mapped back when the model calls. Each tool answers the text a model should read.
"""

from __future__ import annotations

import json
from typing import Any, Iterable

from agents import FunctionTool
from agents.tool_context import ToolContext

from .._types import ScopeLike
from . import AnyHub, answer
from ._search import CALL_SCHEMA, CALL_TOOL, SEARCH_SCHEMA, SEARCH_TOOL, ToolSearch

__all__ = ["function_tools"]


def function_tools(
    hub: AnyHub,
    scope: ScopeLike = None,
    *,
    strict: bool = True,
    search: bool = False,
    pinned: Iterable[str] = (),
) -> list[FunctionTool]:
    """One ``FunctionTool`` per tool of ``scope``; ``strict=False`` sends every schema as the
    server gave it (the ``openai`` export). With ``search``, only the ``pinned`` tools (names
    or patterns, ``SERVER:*``) plus ``search_tools`` and ``call_tool``."""
    export = hub.export("openai-strict" if strict else "openai", scope)
    index = ToolSearch(hub, scope, pinned) if search else None
    tools = []
    for definition in export.definitions:
        function = definition["function"]
        if index is not None and export.names[function["name"]] not in index.pinned:
            continue
        tools.append(
            _tool(
                hub,
                function["name"],
                export.names[function["name"]],
                function.get("description") or "",
                function.get("parameters") or {"type": "object", "properties": {}},
                bool(function.get("strict", False)),
            )
        )
    if index is not None:
        tools += _meta_tools(index)
    return tools


def _meta_tools(index: ToolSearch) -> list[FunctionTool]:
    async def search(context: ToolContext[Any], arguments: str) -> str:
        parsed = _object(arguments)
        return index.search(parsed.get("query"), parsed.get("limit"))

    async def call(context: ToolContext[Any], arguments: str) -> str:
        parsed = _object(arguments)
        return await index.call(parsed.get("name"), parsed.get("arguments"))

    return [
        FunctionTool(
            name=SEARCH_TOOL, description=index.search_description, params_json_schema=SEARCH_SCHEMA,
            on_invoke_tool=search, strict_json_schema=False,
        ),
        FunctionTool(
            name=CALL_TOOL, description=index.call_description, params_json_schema=CALL_SCHEMA,
            on_invoke_tool=call, strict_json_schema=False,
        ),
    ]


def _object(arguments: str) -> dict[str, Any]:
    """The model's arguments text as an object (anything else as none)."""
    try:
        parsed = json.loads(arguments) if arguments else {}
    except ValueError:
        return {}
    return parsed if isinstance(parsed, dict) else {}


def _tool(
    hub: AnyHub, name: str, exposed: str, description: str, schema: dict[str, Any], strict: bool
) -> FunctionTool:
    async def invoke(context: ToolContext[Any], arguments: str) -> str:
        return await answer(hub, exposed, arguments)

    return FunctionTool(
        name=name,
        description=description,
        params_json_schema=schema,
        on_invoke_tool=invoke,
        strict_json_schema=strict,
    )

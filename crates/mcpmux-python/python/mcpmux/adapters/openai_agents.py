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

from typing import Any

from agents import FunctionTool
from agents.tool_context import ToolContext

from .._types import ScopeLike
from . import AnyHub, answer

__all__ = ["function_tools"]


def function_tools(hub: AnyHub, scope: ScopeLike = None, *, strict: bool = True) -> list[FunctionTool]:
    """One ``FunctionTool`` per tool of ``scope``; ``strict=False`` sends every schema as the
    server gave it (the ``openai`` export)."""
    export = hub.export("openai-strict" if strict else "openai", scope)
    tools = []
    for definition in export.definitions:
        function = definition["function"]
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
    return tools


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

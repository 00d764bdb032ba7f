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

from typing import Any

from pydantic_ai import Tool

from .._types import ScopeLike
from . import AnyHub, answer

__all__ = ["pydantic_ai_tools"]


def pydantic_ai_tools(hub: AnyHub, scope: ScopeLike = None) -> list[Tool[Any]]:
    """One ``Tool`` per tool of ``scope``, calling through ``hub``."""
    return [_tool(hub, t.name, t.description or "", dict(t.input_schema)) for t in hub.tools(scope)]


def _tool(hub: AnyHub, name: str, description: str, schema: dict[str, Any]) -> Tool[Any]:
    async def call(**arguments: Any) -> str:
        return await answer(hub, name, arguments)

    return Tool.from_schema(call, name=name, description=description, json_schema=schema)

"""The hub's tools as other frameworks' tool objects, each adapter small and importing its
framework only when used:

- :mod:`mcpmux.adapters.langchain` — LangChain ``StructuredTool`` (``langchain-core``);
- :mod:`mcpmux.adapters.openai_agents` — OpenAI Agents SDK ``FunctionTool`` (``openai-agents``);
- :mod:`mcpmux.adapters.pydantic_ai` — PydanticAI ``Tool`` (``pydantic-ai-slim``).

Each takes a started :class:`mcpmux.Hub` or :class:`mcpmux.BlockingHub` and a scope, and
answers the model with the result rendered as untrusted data (or the error's ``for_model``
text), so a failing tool or a refused call is something the model reads, not a crash.

With ``search=True`` each hands the framework only the ``pinned`` tools plus ``search_tools``
and ``call_tool`` (:mod:`mcpmux.adapters._search`), instead of every tool.
"""

from __future__ import annotations

import asyncio
from typing import Any, Mapping, Union

from .._hub import BlockingHub, Hub
from .._types import ScopeLike

AnyHub = Union[Hub, BlockingHub]


async def answer(
    hub: AnyHub, name: str, arguments: Mapping[str, Any] | str | None, scope: ScopeLike = None
) -> str:
    """The text a model should read for a call: the result wrapped as untrusted data, or the
    error rendered for a model. A blocking hub is called on a worker thread."""
    if isinstance(hub, BlockingHub):
        return await asyncio.to_thread(hub.call_for_model, name, arguments, scope=scope)
    return await hub.call_for_model(name, arguments, scope=scope)

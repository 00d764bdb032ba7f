"""Tool search for the adapters: instead of every tool, a framework is handed the pinned tools
and two meta-tools — ``search_tools`` (the BM25F index ``mcpmux run`` defers behind, from
``mcpmux-agent``) and ``call_tool`` (name + arguments: calls any tool of the scope, with the
same validation, policy and scope as a direct call) — so a catalog of hundreds of tools costs
a few hundred definition tokens per request. Frameworks fix their tool list when an agent is
made, so a found tool is called through ``call_tool``, not re-listed.
"""

from __future__ import annotations

import json
from typing import Any, Iterable, Mapping

from .. import _mcpmux
from .._types import ScopeLike, Tool, scope_text
from . import AnyHub, answer

SEARCH_TOOL = "search_tools"
CALL_TOOL = "call_tool"

SEARCH_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "query": {
            "type": "string",
            "description": 'What you want to do, in a few words ("create a calendar event", "read a file"), or a tool\'s name.',
        },
        "limit": {"type": "integer", "minimum": 1, "maximum": 20, "description": "How many tools to return (default 5)."},
    },
    "required": ["query"],
}

CALL_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "description": "The tool's name, as search_tools returned it."},
        "arguments": {"type": "object", "description": "The tool's arguments, as its input_schema describes them."},
    },
    "required": ["name"],
}


class ToolSearch:
    """A hub's tools of one scope split into pinned tools and the searchable rest."""

    def __init__(self, hub: AnyHub, scope: ScopeLike = None, pinned: Iterable[str] = ()) -> None:
        self.hub = hub
        self.scope = scope
        self.tools: dict[str, Tool] = {t.name: t for t in hub.tools(scope)}
        self._native = _mcpmux.ToolSearch(hub._hub, list(pinned), scope_text(scope))
        self.pinned: list[str] = self._native.pinned()

    @property
    def search_description(self) -> str:
        return (
            f"Search {len(self._native.deferred())} more tools that are available but not listed. Returns the "
            f"best matches with their input schemas; call one with {CALL_TOOL}. Search before saying a task "
            "cannot be done."
        )

    @property
    def call_description(self) -> str:
        return f"Call a tool that {SEARCH_TOOL} found: its name and its arguments."

    def search(self, query: Any, limit: Any = None) -> str:
        """The answer to a ``search_tools`` call: the matches' names, descriptions and input
        schemas as JSON, or how to call it when the arguments are wrong."""
        try:
            names = self._native.search(query, limit)
        except ValueError as e:
            return str(e)
        found = [
            {"name": n, "description": self.tools[n].description or "", "input_schema": dict(self.tools[n].input_schema)}
            for n in names
            if n in self.tools
        ]
        note = (
            f"{len(found)} tools found: call them with {CALL_TOOL}."
            if found
            else f"No tool matched {query!r}. Try other words: what the tool does and what it works on."
        )
        return json.dumps({"tools": found, "note": note})

    async def call(self, name: Any, arguments: Mapping[str, Any] | str | None) -> str:
        """The answer to a ``call_tool`` call: the tool's result for the model, or why not."""
        if not isinstance(name, str) or name not in self.tools:
            return f"unknown tool {name!r}: use {SEARCH_TOOL} to find a tool's exact name"
        return await answer(self.hub, name, arguments, self.scope)

    def call_blocking(self, name: Any, arguments: Mapping[str, Any] | str | None) -> str:
        """:meth:`call` for a blocking hub."""
        if not isinstance(name, str) or name not in self.tools:
            return f"unknown tool {name!r}: use {SEARCH_TOOL} to find a tool's exact name"
        return self.hub.call_for_model(name, arguments, scope=self.scope)  # type: ignore[return-value]

"""Built-in tools written in Python: a function with a name, a description and an input
schema, listed beside MCP tools (under its bare name) and routed like them. A custom handler
listing a tool of the same name overrides the built-in."""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, TypeVar

__all__ = ["Builtin", "builtin"]

F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True)
class Builtin:
    """A built-in tool: ``function(**arguments)`` (sync or async) answers a ``str``, a
    :class:`mcpmux.ToolResult`, an MCP ``CallToolResult`` dict, a list of content blocks, or
    any JSON value. Raising makes an error result the model sees. The hub validates the
    arguments against ``input_schema`` before the function runs."""

    name: str
    function: Callable[..., Any]
    description: str = ""
    input_schema: Mapping[str, Any] = field(
        default_factory=lambda: {"type": "object", "properties": {}}
    )
    #: MCP hints: ``readOnlyHint``, ``destructiveHint``, ``idempotentHint``, ``openWorldHint``.
    annotations: Mapping[str, Any] = field(default_factory=dict)


def builtin(
    name: str | None = None,
    *,
    description: str | None = None,
    input_schema: Mapping[str, Any] | None = None,
    read_only: bool | None = None,
) -> Callable[[Callable[..., Any]], Builtin]:
    """Decorator: the function as a :class:`Builtin` (its name and docstring by default)."""

    def wrap(function: Callable[..., Any]) -> Builtin:
        annotations: dict[str, Any] = {}
        if read_only is not None:
            annotations["readOnlyHint"] = read_only
        return Builtin(
            name=name or function.__name__,
            function=function,
            description=description if description is not None else inspect.getdoc(function) or "",
            input_schema=input_schema or {"type": "object", "properties": {}},
            annotations=annotations,
        )

    return wrap

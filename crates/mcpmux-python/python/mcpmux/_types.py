"""The records the hub hands a harness: tools, server status, events, provider exports, scopes
and approval requests. Plain frozen dataclasses built from the native module's dicts."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Union

__all__ = ["Tool", "ServerStatus", "Event", "Export", "Scope", "ApprovalRequest", "ScopeLike"]


@dataclass(frozen=True)
class Scope:
    """The stage and agent a tool list is for; ``None`` does not filter on that dimension.

    A server lists the ``stages`` and ``agents`` it is for (absent means all); a call made in a
    scope refuses a tool outside it (:class:`mcpmux.errors.OutOfScope`).
    """

    stage: str | None = None
    agent: str | None = None

    def __str__(self) -> str:
        return f"{self.stage or '*'}/{self.agent or '*'}"


#: A scope as the API takes it: ``"plan/coder"``, ``"plan"``, ``"*/coder"``, a :class:`Scope`,
#: a ``(stage, agent)`` pair, or ``None`` for every server.
ScopeLike = Union[str, Scope, "tuple[str | None, str | None]", None]


def scope_text(scope: ScopeLike) -> str | None:
    """The ``STAGE/AGENT`` text the native module reads."""
    if scope is None:
        return None
    if isinstance(scope, str):
        return scope
    if isinstance(scope, Scope):
        return str(scope)
    if isinstance(scope, tuple) and len(scope) == 2:
        return str(Scope(scope[0], scope[1]))
    raise TypeError(f"scope must be 'STAGE/AGENT', a Scope or a (stage, agent) pair, not {scope!r}")


@dataclass(frozen=True)
class Tool:
    """A tool as the harness sees it: ``name`` is what a model calls (``mcp__server__tool``)."""

    name: str
    server: str
    raw_name: str
    description: str | None = None
    title: str | None = None
    input_schema: Mapping[str, Any] = field(default_factory=dict)
    output_schema: Mapping[str, Any] | None = None
    annotations: Mapping[str, Any] = field(default_factory=dict)
    unusable: str | None = None
    cached: bool = False

    @classmethod
    def _from_native(cls, d: Mapping[str, Any]) -> "Tool":
        return cls(
            name=d["name"],
            server=d["server"],
            raw_name=d["raw_name"],
            description=d.get("description"),
            title=d.get("title"),
            input_schema=d.get("inputSchema") or {},
            output_schema=d.get("outputSchema"),
            annotations=d.get("annotations") or {},
            unusable=d.get("unusable"),
            cached=bool(d.get("cached", False)),
        )


@dataclass(frozen=True)
class ServerStatus:
    """One configured server and its state (``connected``, ``pending``, ``failed``,
    ``needs_auth``, ``disabled``, ``stopped``, ``idle``, ``untrusted``)."""

    name: str
    state: str
    transport: str
    target: str
    tools: int
    error: str | None = None
    era: str | None = None
    version: str | None = None
    source: str | None = None
    warnings: tuple[str, ...] = ()
    raw: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def _from_native(cls, d: Mapping[str, Any]) -> "ServerStatus":
        return cls(
            name=d["name"],
            state=d["state"],
            transport=d["transport"],
            target=d["target"],
            tools=int(d.get("tools") or 0),
            error=d.get("error"),
            era=d.get("era"),
            version=d.get("version"),
            source=d.get("source"),
            warnings=tuple(d.get("warnings") or ()),
            raw=d,
        )


@dataclass(frozen=True)
class Event:
    """Something that happened to a server: ``type`` is ``state_changed`` (``state`` is the new
    state's label, ``detail`` its fields), ``tools_changed`` (rebuild the model's tool list),
    or ``missed`` (this subscriber fell behind by ``missed`` events)."""

    type: str
    server: str | None = None
    state: str | None = None
    detail: Mapping[str, Any] = field(default_factory=dict)
    missed: int = 0

    @classmethod
    def _from_native(cls, d: Mapping[str, Any]) -> "Event":
        return cls(
            type=d["type"],
            server=d.get("server"),
            state=d.get("state"),
            detail=d.get("detail") or {},
            missed=int(d.get("missed") or 0),
        )


@dataclass(frozen=True)
class Export:
    """The tool set rendered for one provider (``openai``, ``openai-strict``, ``anthropic``,
    ``gemini``).

    ``definitions`` is the provider's ``tools`` array (Gemini: the function declarations);
    ``names`` maps each provider-side name to the exposed tool name the hub calls (names that
    had to change to fit the provider get a stable suffix); ``notes`` says what changed per
    tool; ``unusable`` lists tools left out, with the reason.
    """

    provider: str
    definitions: list[dict[str, Any]]
    names: dict[str, str]
    notes: dict[str, list[str]]
    unusable: dict[str, str]

    @classmethod
    def _from_native(cls, d: Mapping[str, Any]) -> "Export":
        tools = d.get("tools") or []
        return cls(
            provider=d["provider"],
            definitions=[t["definition"] for t in tools],
            names={t["name"]: t["tool"] for t in tools},
            notes={t["name"]: list(t.get("notes") or []) for t in tools if t.get("notes")},
            unusable={u["tool"]: u["reason"] for u in d.get("unusable") or []},
        )


@dataclass(frozen=True)
class ApprovalRequest:
    """A call that matched an ``ask`` policy rule, for the harness's approver to decide."""

    tool: str
    arguments: Mapping[str, Any]
    rule: str

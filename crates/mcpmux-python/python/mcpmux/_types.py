"""The records the hub hands a harness: tools, server status, events, provider exports, scopes
and approval requests. Plain frozen dataclasses built from the native module's dicts."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Generic, Iterator, Mapping, TypeVar, Union

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


# Resources, prompts, completions, progress and what servers ask of the host (`_resources`,
# `_host`).

__all__ += [
    "Listing",
    "Resource",
    "ResourceTemplate",
    "ResourceContents",
    "Prompt",
    "PromptArgument",
    "PromptMessage",
    "PromptResult",
    "Completion",
    "ResourceEvent",
    "Progress",
    "SamplingRequest",
    "ElicitationRequest",
]

T = TypeVar("T")


@dataclass(frozen=True)
class Listing(Generic[T]):
    """What every server asked gave (``items``, in server order), and one message per server
    that offers the capability but could not list (``errors``). Iterates over the items."""

    items: tuple[T, ...]
    errors: tuple[str, ...] = ()

    def __iter__(self) -> Iterator[T]:
        return iter(self.items)

    def __len__(self) -> int:
        return len(self.items)

    @classmethod
    def _from_native(cls, d: Mapping[str, Any], item: Callable[[Mapping[str, Any]], T]) -> "Listing[T]":
        return cls(tuple(item(i) for i in d.get("items") or ()), tuple(d.get("errors") or ()))


@dataclass(frozen=True)
class Resource:
    """A resource a server offers: read it with ``read_resource(uri)``."""

    server: str
    uri: str
    name: str
    title: str | None = None
    description: str | None = None
    mime_type: str | None = None
    size: int | None = None

    @classmethod
    def _from_native(cls, d: Mapping[str, Any]) -> "Resource":
        return cls(
            server=d.get("server", ""),
            uri=d["uri"],
            name=d["name"],
            title=d.get("title"),
            description=d.get("description"),
            mime_type=d.get("mimeType"),
            size=d.get("size"),
        )


@dataclass(frozen=True)
class ResourceTemplate:
    """A family of resources by URI template (RFC 6570), e.g. ``test://item/{id}``."""

    server: str
    uri_template: str
    name: str
    title: str | None = None
    description: str | None = None
    mime_type: str | None = None

    @classmethod
    def _from_native(cls, d: Mapping[str, Any]) -> "ResourceTemplate":
        return cls(
            server=d.get("server", ""),
            uri_template=d["uriTemplate"],
            name=d["name"],
            title=d.get("title"),
            description=d.get("description"),
            mime_type=d.get("mimeType"),
        )


@dataclass(frozen=True)
class ResourceContents:
    """One part of what a read gave: ``text``, or ``blob`` (base64; ``data`` decodes it)."""

    uri: str
    mime_type: str | None = None
    text: str | None = None
    blob: str | None = None

    @property
    def data(self) -> bytes:
        """The bytes: the blob decoded, or the text as UTF-8."""
        import base64

        if self.blob is not None:
            return base64.b64decode(self.blob)
        return (self.text or "").encode()

    @classmethod
    def _from_native(cls, d: Mapping[str, Any]) -> "ResourceContents":
        return cls(uri=d["uri"], mime_type=d.get("mimeType"), text=d.get("text"), blob=d.get("blob"))


@dataclass(frozen=True)
class PromptArgument:
    """One argument of a prompt."""

    name: str
    description: str | None = None
    required: bool = False


@dataclass(frozen=True)
class Prompt:
    """A prompt template a server offers. ``name`` is the server's; ``exposed_name`` is the
    one it is served under beside the tools (``mcp__SERVER__PROMPT``)."""

    server: str
    name: str
    exposed_name: str = ""
    title: str | None = None
    description: str | None = None
    arguments: tuple[PromptArgument, ...] = ()

    @classmethod
    def _from_native(cls, d: Mapping[str, Any]) -> "Prompt":
        return cls(
            server=d.get("server", ""),
            name=d["name"],
            exposed_name=d.get("exposedName", ""),
            title=d.get("title"),
            description=d.get("description"),
            arguments=tuple(
                PromptArgument(a["name"], a.get("description"), bool(a.get("required", False)))
                for a in d.get("arguments") or ()
            ),
        )


@dataclass(frozen=True)
class PromptMessage:
    """One message of a filled-in prompt: ``role`` (``user``/``assistant``) and one MCP
    content block; ``text`` is the block's text, if it is a text block."""

    role: str
    content: Mapping[str, Any]

    @property
    def text(self) -> str | None:
        return self.content.get("text") if self.content.get("type") == "text" else None


@dataclass(frozen=True)
class PromptResult:
    """A prompt filled in with its arguments: the messages to hand a model."""

    server: str
    messages: tuple[PromptMessage, ...]
    description: str | None = None

    @classmethod
    def _from_native(cls, d: Mapping[str, Any]) -> "PromptResult":
        return cls(
            server=d.get("server", ""),
            messages=tuple(PromptMessage(m["role"], m.get("content") or {}) for m in d.get("messages") or ()),
            description=d.get("description"),
        )


@dataclass(frozen=True)
class Completion:
    """A server's suggestions for an argument's value, best first."""

    values: tuple[str, ...]
    total: int | None = None
    has_more: bool | None = None

    @classmethod
    def _from_native(cls, d: Mapping[str, Any]) -> "Completion":
        return cls(tuple(d.get("values") or ()), d.get("total"), d.get("hasMore"))


@dataclass(frozen=True)
class ResourceEvent:
    """A notice about a server's resources: ``updated`` (a subscribed ``uri`` changed: read it
    again), ``subscription_lost`` (no more updates for ``uri``: ``reason``),
    ``resources_changed`` / ``prompts_changed`` (list again), or ``missed`` (this subscriber
    fell behind by ``missed`` notices)."""

    type: str
    server: str | None = None
    uri: str | None = None
    reason: str | None = None
    missed: int = 0

    @classmethod
    def _from_native(cls, d: Mapping[str, Any]) -> "ResourceEvent":
        return cls(d["type"], d.get("server"), d.get("uri"), d.get("reason"), int(d.get("missed") or 0))


@dataclass(frozen=True)
class Progress:
    """One progress notification of a running call."""

    progress: float
    total: float | None = None
    message: str | None = None

    @classmethod
    def _from_native(cls, d: Mapping[str, Any]) -> "Progress":
        return cls(d["progress"], d.get("total"), d.get("message"))


@dataclass(frozen=True)
class SamplingRequest:
    """A server asks the host for a model completion (``sampling/createMessage``).

    ``messages`` are ``{"role", "content": [blocks]}`` dicts, oldest first; ``params`` is the
    request's ``params`` as sent (model preferences, temperature, stop sequences …)."""

    server: str
    messages: tuple[Mapping[str, Any], ...]
    max_tokens: int
    system_prompt: str | None = None
    params: Mapping[str, Any] = field(default_factory=dict, repr=False)

    @property
    def last_user_text(self) -> str | None:
        """The text of the last user message, if it has any."""
        for message in reversed(self.messages):
            if message.get("role") == "user":
                texts = [b.get("text") for b in message.get("content") or () if isinstance(b.get("text"), str)]
                return "\n".join(texts) if texts else None
        return None

    @classmethod
    def _from_native(cls, d: Mapping[str, Any]) -> "SamplingRequest":
        return cls(
            server=d["server"],
            messages=tuple(d.get("messages") or ()),
            max_tokens=int(d.get("max_tokens") or 0),
            system_prompt=d.get("system_prompt"),
            params=d.get("params") or {},
        )


@dataclass(frozen=True)
class ElicitationRequest:
    """A server asks the user for input (``elicitation/create``): a form (``mode == "form"``,
    ``schema`` an object schema of primitive fields) or a URL to open (``mode == "url"``,
    only when the hub was started with ``elicit_urls=True``)."""

    server: str
    message: str
    mode: str
    schema: Mapping[str, Any] = field(default_factory=dict)
    url: str | None = None
    elicitation_id: str | None = None

    @classmethod
    def _from_native(cls, d: Mapping[str, Any]) -> "ElicitationRequest":
        return cls(
            server=d["server"],
            message=d.get("message", ""),
            mode=d.get("mode", "form"),
            schema=d.get("schema") or {},
            url=d.get("url"),
            elicitation_id=d.get("elicitation_id"),
        )

"""What a server may ask of the harness — the roots it may work in, a model completion
(sampling), input from the user (elicitation) — answered by Python callables, sync or async.

The native side calls a bridge here on a worker thread with the GIL held; a coroutine the
callable returns runs on the event loop the hub was started on (or a fresh loop for the
blocking hub). The library's rules hold: a capability is advertised only when its callable is
given, and a request for one that is not is refused ("method not found"). An answer that is not
one of those documented is never taken as a yes: a sampler's refuses, an elicitor's declines,
with a warning naming its type. The callable's exception is warned about here and the server
is told only that the host failed (its text may hold what a server must not see).
"""

from __future__ import annotations

import warnings
from typing import Any, Callable, Iterable, Mapping

from ._bridge import Runner
from ._types import ElicitationRequest, SamplingRequest

#: Answers a sampling request: the reply's text (``str``), a dict with ``model`` and ``text``
#: (or ``content``, one MCP block) and optionally ``stop_reason``; ``None`` or ``False``
#: refuses.
Sampler = Callable[[SamplingRequest], Any]
#: Answers an elicitation: a dict of the form's values accepts (fields left out get the
#: schema's defaults); ``"decline"``, ``None`` or ``False`` declines; ``"cancel"`` dismisses.
Elicitor = Callable[[ElicitationRequest], Any]
#: The roots: a list of directories (paths), ``file://`` URIs or ``{"uri", "name"}`` dicts, or
#: a callable given the server's name that returns one.
Roots = "Iterable[Any] | Callable[[str], Any]"


def _warn(why: str) -> None:
    warnings.warn(why, RuntimeWarning, stacklevel=3)


class SamplerBridge:
    def __init__(self, sampler: Sampler, runner: Runner) -> None:
        self.sampler = sampler
        self.runner = runner

    def sample(self, request: Mapping[str, Any]) -> Any:
        asked = SamplingRequest._from_native(request)
        return self.runner.submit(self.sampler, (asked,), self.reply, self.failed)

    def failed(self, e: Exception) -> dict[str, Any]:
        _warn(f"the sampler raised {type(e).__name__}: {e} (the server is told the host failed)")
        return {"fail": f"the host's sampler failed ({type(e).__name__})"}

    def reply(self, answer: Any) -> dict[str, Any]:
        if answer is None or answer is False:
            return {"reject": "the host declined to sample"}
        if isinstance(answer, str):
            return {"reply": {"model": "unknown", "content": {"type": "text", "text": answer}, "stop_reason": "endTurn"}}
        if isinstance(answer, Mapping) and isinstance(answer.get("model", "unknown"), str):
            content = answer.get("content")
            if content is None and isinstance(answer.get("text"), str):
                content = {"type": "text", "text": answer["text"]}
            if isinstance(content, Mapping):
                return {
                    "reply": {
                        "model": answer.get("model", "unknown"),
                        "content": dict(content),
                        "stop_reason": answer.get("stop_reason", "endTurn"),
                    }
                }
        why = (
            f"the sampler answered {type(answer).__name__}, not a str or a dict with `text` or "
            "`content`: refused"
        )
        _warn(why)
        return {"reject": why}


class ElicitorBridge:
    def __init__(self, elicitor: Elicitor, runner: Runner, urls: bool) -> None:
        self.elicitor = elicitor
        self.runner = runner
        self.urls = urls

    def elicit(self, request: Mapping[str, Any]) -> Any:
        asked = ElicitationRequest._from_native(request)
        return self.runner.submit(self.elicitor, (asked,), self.reply, self.failed)

    def failed(self, e: Exception) -> dict[str, Any]:
        _warn(f"the elicitor raised {type(e).__name__}: {e} (the request is cancelled)")
        return {"cancel": None}

    def reply(self, answer: Any) -> dict[str, Any]:
        if isinstance(answer, Mapping):
            return {"accept": dict(answer)}
        if answer is None or answer is False or answer == "decline":
            return {"decline": None}
        if answer == "cancel":
            return {"cancel": None}
        _warn(
            f"the elicitor answered {type(answer).__name__}, not a dict, 'decline' or 'cancel': "
            "declined"
        )
        return {"decline": None}


class RootsBridge:
    def __init__(self, roots: Callable[[str], Any], runner: Runner) -> None:
        self.callable = roots
        self.runner = runner

    def roots(self, server: str) -> Any:
        return self.runner.submit(self.callable, (server,), self.listed, self.failed)

    def listed(self, roots: Iterable[Any]) -> list[Any]:
        try:
            return [_root(r) for r in roots]
        except Exception as e:  # noqa: BLE001 - any failure of the harness's code
            return self.failed(e)

    def failed(self, e: Exception) -> list[Any]:
        _warn(f"the roots callable raised {type(e).__name__}: {e} (no roots offered)")
        return []


def _root(entry: Any) -> Any:
    """A root as the native side reads it: a path (``os.PathLike`` too), a URI, or a dict."""
    import os

    if isinstance(entry, os.PathLike):
        return os.fspath(entry)
    return entry


def host_options(
    roots: Any, sampler: Sampler | None, elicitor: Elicitor | None, elicit_urls: bool, runner: Runner
) -> dict[str, Any]:
    """The native options of the host callbacks (none given: a host that offers nothing)."""
    if roots is None or callable(roots):
        native_roots: Any = None if roots is None else RootsBridge(roots, runner)
    else:
        native_roots = [_root(r) for r in roots]
    return {
        "roots": native_roots,
        "sampler": None if sampler is None else SamplerBridge(sampler, runner),
        "elicitor": None if elicitor is None else ElicitorBridge(elicitor, runner, elicit_urls),
    }

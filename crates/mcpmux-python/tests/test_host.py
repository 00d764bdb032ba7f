"""What a server asks of the harness — elicitation, sampling, roots — answered by Python
callables (sync or async) under the library's rules: nothing advertised or answered without a
callable, only the documented answers taken, a callable's failure never shown to the server.
Against the test server's `ask_client` (handshake-era server→client requests) and `ask`
(2026-07-28 input rounds)."""

from __future__ import annotations

import asyncio
import warnings
from pathlib import Path

import pytest

import mcpmux
from conftest import testserver


def handshake() -> dict[str, dict[str, object]]:
    return {"t": testserver("--era", "handshake")}


async def asked(hub: mcpmux.Hub, what: str) -> str:
    return (await hub.call("mcp__t__ask_client", {"what": what})).text


async def test_sync_and_async_callables_answer_elicitation_sampling_and_roots(tmp_path: Path) -> None:
    seen: list[object] = []

    async def sampler(request: mcpmux.SamplingRequest) -> dict[str, str]:
        seen.append(request)
        await asyncio.sleep(0)
        return {"model": "scripted", "text": f"hello, {request.last_user_text}"}

    def elicitor(request: mcpmux.ElicitationRequest) -> dict[str, str]:
        seen.append(request)
        return {"name": "Ada"}

    async with mcpmux.Hub(
        handshake(), ephemeral=True, sampler=sampler, elicitor=elicitor, roots=[tmp_path, "file:///srv/data"]
    ) as hub:
        assert await asked(hub, "elicitation") == "name: Ada"
        assert await asked(hub, "sampling") == "reply: hello, Say hello (model scripted)"
        assert await asked(hub, "roots") == f"roots: file://{tmp_path} file:///srv/data"
    elicited, sampled = seen
    assert isinstance(elicited, mcpmux.ElicitationRequest)
    assert (elicited.server, elicited.mode, elicited.message) == ("t", "form", "What is your name?")
    assert elicited.schema["required"] == ["name"]
    assert isinstance(sampled, mcpmux.SamplingRequest)
    assert (sampled.server, sampled.max_tokens) == ("t", 50)


async def test_without_a_callable_nothing_is_offered_and_the_request_is_refused() -> None:
    async with mcpmux.Hub(handshake(), ephemeral=True) as hub:
        for what in ["elicitation", "sampling", "roots"]:
            answer = await asked(hub, what)
            assert answer.startswith("refused: -32601 ") and "no host callback" in answer, answer


async def test_a_roots_callable_is_asked_per_server_by_name() -> None:
    servers = {"a": testserver("--era", "handshake"), "b": testserver("--era", "handshake")}
    async with mcpmux.Hub(servers, ephemeral=True, roots=lambda server: [f"/work/{server}"]) as hub:
        assert (await hub.call("mcp__a__ask_client", {"what": "roots"})).text == "roots: file:///work/a"
        assert (await hub.call("mcp__b__ask_client", {"what": "roots"})).text == "roots: file:///work/b"


async def test_a_sampler_that_says_none_refuses_and_one_that_raises_fails_without_its_text() -> None:
    answers = iter([None, False])

    async with mcpmux.Hub(handshake(), ephemeral=True, sampler=lambda _: next(answers)) as hub:
        for _ in range(2):
            assert (await asked(hub, "sampling")) == "refused: -1 the host declined to sample"

    def broken(_: mcpmux.SamplingRequest) -> str:
        raise KeyError("the secret key sk-123")

    async with mcpmux.Hub(handshake(), ephemeral=True, sampler=broken) as hub:
        with pytest.warns(RuntimeWarning, match="the sampler raised KeyError"):
            answer = await asked(hub, "sampling")
        assert answer == "refused: -32603 the host's sampler failed (KeyError)"
        assert "sk-123" not in answer


@pytest.mark.parametrize("answer", [42, ["hi"], {"model": "m"}], ids=["int", "list", "dict-without-text"])
async def test_a_sampler_answer_that_is_not_a_reply_refuses_with_a_warning(answer: object) -> None:
    async with mcpmux.Hub(handshake(), ephemeral=True, sampler=lambda _: answer) as hub:
        with pytest.warns(RuntimeWarning, match=f"the sampler answered {type(answer).__name__}"):
            refused = await asked(hub, "sampling")
        assert refused.startswith("refused: -1 the sampler answered"), refused


@pytest.mark.parametrize(
    ("answer", "shown", "warned"),
    [
        ("decline", "name: (decline)", False),
        (None, "name: (decline)", False),
        (False, "name: (decline)", False),
        ("cancel", "name: (cancel)", False),
        ("yes", "name: (decline)", True),
        ([True], "name: (decline)", True),
        (True, "name: (decline)", True),
    ],
    ids=["decline", "None", "False", "cancel", "str-yes", "list", "True"],
)
async def test_only_a_dict_accepts_an_elicitation(answer: object, shown: str, warned: bool) -> None:
    async with mcpmux.Hub(handshake(), ephemeral=True, elicitor=lambda _: answer) as hub:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            assert await asked(hub, "elicitation") == shown
        assert any("the elicitor answered" in str(w.message) for w in caught) == warned


async def test_an_elicitor_that_raises_cancels_the_request_with_a_warning() -> None:
    def broken(_: mcpmux.ElicitationRequest) -> dict[str, str]:
        raise RuntimeError("no terminal")

    async with mcpmux.Hub(handshake(), ephemeral=True, elicitor=broken) as hub:
        with pytest.warns(RuntimeWarning, match="the elicitor raised RuntimeError"):
            assert await asked(hub, "elicitation") == "name: (cancel)"


async def test_a_2026_server_s_input_rounds_are_answered_by_the_same_callables() -> None:
    async def elicitor(request: mcpmux.ElicitationRequest) -> dict[str, str]:
        return {"name": "Grace"}

    async with mcpmux.Hub(
        {"t": testserver()},
        ephemeral=True,
        elicitor=elicitor,
        sampler=lambda _: "hi",
        roots=["/srv"],
    ) as hub:
        text = (await hub.call("mcp__t__ask", {})).text
        assert "name: Grace" in text and "reply: hi (model unknown)" in text and "roots: file:///srv" in text


def test_a_blocking_hub_s_callables_answer_too() -> None:
    with mcpmux.BlockingHub(
        handshake(),
        ephemeral=True,
        elicitor=lambda _: {"name": "Bo"},
        sampler=lambda r: {"model": "m", "content": {"type": "text", "text": "ok"}},
        roots=lambda server: [{"uri": "file:///r", "name": "r"}],
    ) as hub:
        ask = lambda what: hub.call("mcp__t__ask_client", {"what": what}).text  # noqa: E731
        assert ask("elicitation") == "name: Bo"
        assert ask("sampling") == "reply: ok (model m)"
        assert ask("roots") == "roots: file:///r"


async def test_url_mode_elicitation_is_refused_unless_the_elicitor_takes_urls() -> None:
    asked: list[mcpmux.ElicitationRequest] = []

    def elicitor(request: mcpmux.ElicitationRequest) -> str:
        asked.append(request)
        return "decline"

    async with mcpmux.Hub(handshake(), ephemeral=True, elicitor=elicitor) as hub:
        refused = await asked_url(hub)
        assert refused.startswith("refused: -32601 ") and "URL-mode" in refused, refused
        assert asked == []
    async with mcpmux.Hub(handshake(), ephemeral=True, elicitor=elicitor, elicit_urls=True) as hub:
        assert await asked_url(hub) == "url: (decline)"
    [request] = asked
    assert (request.mode, request.url, request.elicitation_id) == (
        "url",
        "https://example.com/sign-in?state=1",
        "elicit-1",
    )


async def asked_url(hub: mcpmux.Hub) -> str:
    return (await hub.call("mcp__t__ask_client", {"what": "elicitation_url"})).text

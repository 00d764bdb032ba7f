"""The agent loop from Python (`Hub.run`, `BlockingHub.run`) against the scripted model endpoint
(`mcpmux-testmodel`, a real HTTP server checking every request as the provider would), in both
providers' wire formats, over the real test server: events, transcript, stop reasons, tool
search, cancellation."""

from __future__ import annotations

import asyncio
import json
from typing import Any, Iterator

import pytest

import mcpmux
from conftest import ScriptedEndpoint, testserver

SERVERS = {"t": testserver(tools={"allow": ["echo", "add", "hang"]})}


def call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"tool_calls": [[name, json.dumps(arguments)]]}


@pytest.fixture
def endpoints() -> Iterator[list[ScriptedEndpoint]]:
    made: list[ScriptedEndpoint] = []
    yield made
    for endpoint in made:
        endpoint.close()


def endpoint(made: list[ScriptedEndpoint], wire: str, steps: list[dict[str, Any]]) -> ScriptedEndpoint:
    made.append(ScriptedEndpoint(wire, steps))
    return made[-1]


@pytest.mark.parametrize("wire", ["openai", "anthropic"])
async def test_a_run_calls_a_hub_tool_and_ends_with_the_models_answer_and_its_events(
    wire: str, endpoints: list[ScriptedEndpoint]
) -> None:
    model = endpoint(endpoints, wire, [call("mcp__t__echo", text="hi from the model"), {"text": "It said hi."}])
    events: list[mcpmux.AgentEvent] = []
    async with mcpmux.Hub(SERVERS, ephemeral=True) as hub:
        result = await hub.run("Say hi", model=model.model, base_url=model.base_url, api_key="sk-test", on_event=events.append)
    assert result.is_final and result.stop == "final", result.stop_message
    assert result.answer == "It said hi."
    assert (result.iterations, result.tool_calls) == (2, 1)
    assert result.usage["input_tokens"] > 0
    types = [e.type for e in events]
    assert "tool_call" in types and "turn" in types and "text" in types
    tool_result = next(e for e in events if e.type == "tool_result")
    assert tool_result.tool == "mcp__t__echo" and not tool_result.is_error
    assert "hi from the model" in (tool_result.text or "")
    roles = [m["role"] for m in result.transcript.messages]
    assert roles == ["user", "assistant", "user", "assistant"]
    report = model.report()
    assert report["violations"] == [] and report["remaining"] == 0
    assert "mcp__t__echo" in report["requests"][0]["tools"]


async def test_a_transcript_continues_in_the_next_run_and_round_trips_as_jsonl(
    endpoints: list[ScriptedEndpoint],
) -> None:
    model = endpoint(endpoints, "openai", [{"text": "first"}, {"text": "second"}])
    async with mcpmux.Hub(SERVERS, ephemeral=True) as hub:
        first = await hub.run("one", model=model.model, base_url=model.base_url, api_key="sk-test")
        kept = mcpmux.Transcript.from_jsonl(first.transcript.to_jsonl())
        assert kept == first.transcript
        second = await hub.run("two", model=model.model, base_url=model.base_url, api_key="sk-test", transcript=kept)
    assert second.answer == "second"
    assert len(second.transcript.messages) == 4
    assert second.transcript.usage["input_tokens"] > first.transcript.usage["input_tokens"]
    assert model.report()["violations"] == []


async def test_a_model_still_calling_tools_after_the_last_turn_stops_at_the_iteration_limit(
    endpoints: list[ScriptedEndpoint],
) -> None:
    model = endpoint(endpoints, "anthropic", [call("mcp__t__echo", text="again")])
    async with mcpmux.Hub(SERVERS, ephemeral=True) as hub:
        result = await hub.run("loop", model=model.model, base_url=model.base_url, api_key="sk-test", max_iterations=1)
    assert result.stop == "iteration_limit" and not result.is_final
    assert "1 turns" in result.stop_message


def test_a_blocking_hub_runs_the_loop_and_reports_events() -> None:
    model = ScriptedEndpoint("openai", [call("mcp__t__add", a=2, b=3), {"text": "5"}])
    try:
        seen: list[str] = []
        with mcpmux.BlockingHub(SERVERS, ephemeral=True) as hub:
            result = hub.run("add", model=model.model, base_url=model.base_url, api_key="sk-test", on_event=lambda e: seen.append(e.type))
        assert result.answer == "5" and result.tool_calls == 1
        assert "tool_result" in seen
        assert model.report()["violations"] == []
    finally:
        model.close()


async def test_with_search_the_model_is_sent_the_pinned_tools_and_search_tools_and_finds_the_rest(
    endpoints: list[ScriptedEndpoint],
) -> None:
    model = endpoint(
        endpoints,
        "openai",
        [call("search_tools", query="echo text back"), call("mcp__t__echo", text="found"), {"text": "ok"}],
    )
    async with mcpmux.Hub(SERVERS, ephemeral=True) as hub:
        result = await hub.run(
            "echo", model=model.model, base_url=model.base_url, api_key="sk-test", search=True, pinned=["mcp__t__add"]
        )
    assert result.is_final, result.stop_message
    requests = model.report()["requests"]
    assert sorted(requests[0]["tools"]) == ["mcp__t__add", "search_tools"]
    assert "mcp__t__echo" in requests[1]["tools"]
    assert requests[0]["tool_bytes"] < requests[1]["tool_bytes"]


async def test_an_unknown_provider_is_refused_with_the_ones_that_exist() -> None:
    async with mcpmux.Hub(SERVERS, ephemeral=True) as hub:
        with pytest.raises(mcpmux.McpmuxError, match="openai:MODEL") as refused:
            await hub.run("hi", model="mistral:large")
    assert refused.value.kind == "provider"


async def test_cancelling_the_task_cancels_the_run_and_its_tool_call(endpoints: list[ScriptedEndpoint]) -> None:
    model = endpoint(endpoints, "openai", [call("mcp__t__hang"), {"text": "never"}])
    started = asyncio.Event()

    def on_event(event: mcpmux.AgentEvent) -> None:
        if event.type == "tool_call":
            started.set()

    async with mcpmux.Hub(SERVERS, ephemeral=True) as hub:
        task = asyncio.create_task(hub.run("hang", model=model.model, base_url=model.base_url, api_key="sk-test", on_event=on_event))
        await asyncio.wait_for(started.wait(), 10)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await asyncio.wait_for(task, 10)
        # The hub still answers: the hung call was cancelled, not left holding the server.
        assert "still here" in (await hub.call("mcp__t__echo", {"text": "still here"})).text

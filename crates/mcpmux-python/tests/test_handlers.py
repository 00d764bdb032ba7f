"""Python tool sources beside MCP servers: custom handlers (a class with list_tools and
call_tool, sync or async) and built-in functions, one tool list and one call path; a custom
handler overrides a built-in of the same name; failures become error results."""

from __future__ import annotations

import asyncio
import warnings
from typing import Any

import pytest

import mcpmux
from conftest import testserver

NOTE_SCHEMA = {
    "type": "object",
    "properties": {"text": {"type": "string"}},
    "required": ["text"],
}


class Notes:
    """A sync handler."""

    name = "notes"

    def __init__(self) -> None:
        self.notes: list[str] = []

    def list_tools(self) -> list[dict[str, Any]]:
        return [
            {"name": "note", "description": "Keeps a note.", "input_schema": NOTE_SCHEMA},
            {"name": "notes", "description": "Lists the notes.", "annotations": {"readOnlyHint": True}},
            {"name": "explode", "description": "Raises."},
        ]

    def call_tool(self, name: str, arguments: dict[str, Any]) -> Any:
        if name == "note":
            self.notes.append(arguments["text"])
            return f"noted {arguments['text']}"
        if name == "notes":
            return {"notes": self.notes}
        raise RuntimeError("the handler broke")


class AsyncWeather:
    """An async handler answering MCP result dicts."""

    name = "weather"

    async def list_tools(self) -> list[dict[str, Any]]:
        await asyncio.sleep(0)
        return [{"name": "forecast", "inputSchema": {"type": "object", "properties": {"city": {"type": "string"}}}}]

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        await asyncio.sleep(0.01)
        return {
            "content": [{"type": "text", "text": f"sunny in {arguments.get('city')}"}],
            "structuredContent": {"sky": "sunny"},
        }


@mcpmux.builtin(input_schema=NOTE_SCHEMA)
def note(text: str) -> str:
    """The harness's own note tool."""
    return f"built-in noted {text}"


@mcpmux.builtin(read_only=True)
async def clock() -> list[dict[str, Any]]:
    """Tells the time."""
    return [{"type": "text", "text": "noon"}]


async def test_custom_handlers_are_listed_beside_mcp_tools_and_called_like_them() -> None:
    notes = Notes()
    async with mcpmux.Hub({"t": testserver()}, handlers=[notes, AsyncWeather()], ephemeral=True) as hub:
        tools = {t.name: t for t in hub.tools()}
        assert {"note", "notes", "forecast", "mcp__t__echo"} <= set(tools)
        assert tools["note"].server == "notes"
        assert tools["notes"].annotations == {"readOnlyHint": True}
        assert (await hub.call("note", {"text": "milk"})).text == "noted milk"
        listed = await hub.call("notes")
        assert listed.structured_content == {"notes": ["milk"]}
        sunny = await hub.call("forecast", {"city": "Oslo"})
        assert sunny.text == "sunny in Oslo" and sunny.structured_content == {"sky": "sunny"}
        # The hub validates against the handler's schema before the handler runs.
        with pytest.raises(mcpmux.InvalidArguments):
            await hub.call("note", {})
        assert notes.notes == ["milk"]
        defs = hub.tool_definitions("openai")
        assert any(d["function"]["name"] == "note" for d in defs)


async def test_a_handler_that_raises_answers_an_error_result_the_model_sees() -> None:
    async with mcpmux.Hub(handlers=[Notes()], ephemeral=True) as hub:
        result = await hub.call("explode")
        assert result.is_error
        assert "RuntimeError: the handler broke" in result.text


async def test_builtins_are_listed_and_a_custom_handler_overrides_one_by_name() -> None:
    async with mcpmux.Hub(builtins=[note, clock], ephemeral=True) as hub:
        tools = {t.name: t for t in hub.tools()}
        assert tools["note"].server == "builtin"
        assert tools["note"].description == "The harness's own note tool."
        assert tools["clock"].annotations == {"readOnlyHint": True}
        assert (await hub.call("note", {"text": "a"})).text == "built-in noted a"
        assert (await hub.call("clock")).content == [{"type": "text", "text": "noon"}]
    async with mcpmux.Hub(builtins=[note, clock], handlers=[Notes()], ephemeral=True) as hub:
        assert {t.name: t.server for t in hub.tools()}["note"] == "notes"
        assert (await hub.call("note", {"text": "a"})).text == "noted a"


async def test_a_handler_whose_list_fails_keeps_no_tools_and_warns() -> None:
    class Broken:
        name = "broken"

        def list_tools(self) -> list[Any]:
            raise ConnectionError("API down")

        def call_tool(self, name: str, arguments: dict[str, Any]) -> str:
            return ""

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        async with mcpmux.Hub(handlers=[Broken(), Notes()], ephemeral=True) as hub:
            assert "note" in {t.name for t in hub.tools()}
    assert any("broken" in str(w.message) and "API down" in str(w.message) for w in caught)


async def test_a_list_that_raises_is_kept_as_a_typed_error_naming_the_source_and_the_fix() -> None:
    secret = "hunter2-in-a-local"

    class Broken:
        name = "broken"

        def list_tools(self) -> list[Any]:
            token = secret  # a local a traceback would show; the error must not
            raise ConnectionError("API down " + "x" * 2000 + token[:0])

        def call_tool(self, name: str, arguments: dict[str, Any]) -> str:
            return ""

    class Wrong:
        name = "wrong"

        def list_tools(self) -> Any:
            return [{"description": "a tool without a name"}]

        def call_tool(self, name: str, arguments: dict[str, Any]) -> str:
            return ""

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        async with mcpmux.Hub(handlers=[Broken(), Wrong()], ephemeral=True) as hub:
            raised = hub.source_errors["broken"]
            wrong = hub.source_errors["wrong"]
    assert isinstance(raised, mcpmux.ToolSourceError)
    assert isinstance(raised, mcpmux.ServerUnavailable)
    assert raised.kind == "tool_source"
    assert raised.server == "broken"
    assert raised.exception_type == "ConnectionError"
    assert raised.exception_message.startswith("API down xxx")
    assert raised.exception_message.endswith("… (cut)")
    assert len(raised.exception_message) < 600
    text = str(raised)
    assert "`broken`" in text and "list_tools raised ConnectionError" in text
    assert "start the hub again" in text
    assert secret not in text and "Traceback" not in text
    assert type(wrong) is mcpmux.ServerUnavailable
    assert "no string `name`" in str(wrong)


async def test_a_handler_without_the_two_methods_is_refused() -> None:
    with pytest.raises(TypeError):
        await mcpmux.Hub(handlers=[object()], ephemeral=True).start()


async def test_slow_python_handlers_run_concurrently_without_blocking_the_loop() -> None:
    class Slow:
        name = "slow"

        def list_tools(self) -> list[dict[str, Any]]:
            return [{"name": "nap"}]

        async def call_tool(self, name: str, arguments: dict[str, Any]) -> str:
            await asyncio.sleep(0.2)
            return "rested"

    async with mcpmux.Hub(handlers=[Slow()], ephemeral=True) as hub:
        loop = asyncio.get_running_loop()
        start = loop.time()
        results = await asyncio.gather(*(hub.call("nap") for _ in range(8)))
        assert [r.text for r in results] == ["rested"] * 8
        assert loop.time() - start < 1.0


def test_results_are_read_from_what_python_tools_return() -> None:
    assert mcpmux.tool_result("hi").content == [{"type": "text", "text": "hi"}]
    structured = mcpmux.tool_result({"a": 1})
    assert structured.structured_content == {"a": 1} and structured.text == '{"a":1}'
    failed = mcpmux.tool_result({"content": [{"type": "text", "text": "no"}], "isError": True})
    assert failed.is_error
    blocks = mcpmux.tool_result([{"type": "image", "data": "AAAA", "mimeType": "image/png"}])
    assert blocks.content[0]["type"] == "image"
    with pytest.raises(ValueError):
        mcpmux.tool_result(float("nan"))
    deep: list[Any] = []
    deep.append(deep)
    with pytest.raises(ValueError):
        mcpmux.tool_result(deep)

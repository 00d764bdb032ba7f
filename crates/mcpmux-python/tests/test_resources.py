"""Resources, resource templates, prompts and completions through both hubs, against the test
server (`--prompts` adds a prompt, a template and completions to its `test://counter`
resource): listing, reading, filling in, completing, and subscribing with updates arriving as
events."""

from __future__ import annotations

import asyncio

import pytest

import mcpmux
from conftest import testserver


def prompting() -> dict[str, dict[str, object]]:
    return {"t": testserver("--prompts")}


async def test_resources_and_templates_are_listed_and_read_by_uri() -> None:
    async with mcpmux.Hub(prompting(), ephemeral=True) as hub:
        resources = await hub.resources()
        assert [(r.server, r.uri, r.mime_type) for r in resources] == [("t", "test://counter", "text/plain")]
        assert resources.errors == ()
        templates = await hub.resource_templates("t")
        assert [t.uri_template for t in templates] == ["test://item/{id}"]
        [counter] = await hub.read_resource("test://counter")
        assert (counter.uri, counter.text, counter.data) == ("test://counter", "0", b"0")
        # No server given: the one whose template matches the URI answers.
        [item] = await hub.read_resource("test://item/42")
        assert item.text == "item 42"
        with pytest.raises(mcpmux.ServerError):
            await hub.read_resource("test://nothing", server="t")
        with pytest.raises(mcpmux.UnknownServer):
            await hub.resources("nope")


async def test_prompts_are_listed_and_filled_in_by_exposed_name_record_or_server_name() -> None:
    async with mcpmux.Hub(prompting(), ephemeral=True) as hub:
        [greet] = await hub.prompts()
        assert (greet.server, greet.name, greet.exposed_name) == ("t", "greet", "mcp__t__greet")
        assert [(a.name, a.required) for a in greet.arguments] == [("name", True)]
        for name, server in [("mcp__t__greet", None), (greet, None), ("greet", "t")]:
            filled = await hub.get_prompt(name, {"name": "Ada"}, server=server)
            assert filled.server == "t"
            assert [(m.role, m.text) for m in filled.messages] == [("user", "Say hello to Ada.")]
        with pytest.raises(mcpmux.McpmuxError, match="no server lists a prompt"):
            await hub.get_prompt("mcp__t__nothing")
        with pytest.raises(mcpmux.ServerError):
            await hub.get_prompt("greet", {}, server="t")


async def test_completions_suggest_values_for_prompt_and_template_arguments() -> None:
    async with mcpmux.Hub(prompting(), ephemeral=True) as hub:
        [greet] = await hub.prompts()
        assert (await hub.complete("name", "G", prompt=greet)).values == ("Grace", "Guido")
        [template] = await hub.resource_templates()
        assert (await hub.complete("id", "4", template=template)).values == ("42",)
        by_name = await hub.complete("id", "", template="test://item/{id}", server="t")
        assert by_name.values == ("1", "2", "3", "42")
        with pytest.raises(TypeError, match="one of prompt= or template="):
            await hub.complete("name", "G")
        with pytest.raises(TypeError, match="needs server="):
            await hub.complete("name", "G", prompt="greet")


async def test_a_subscribed_resource_s_updates_arrive_as_events_until_unsubscribed() -> None:
    async with mcpmux.Hub(prompting(), ephemeral=True) as hub:
        events = hub.resource_events()
        await hub.subscribe("test://counter")
        await hub.call("mcp__t__bump")
        update = await asyncio.wait_for(events.__anext__(), 10)
        assert (update.type, update.server, update.uri) == ("updated", "t", "test://counter")
        [counter] = await hub.read_resource("test://counter")
        assert counter.text == "1"
        await hub.unsubscribe("test://counter", server="t")
        await hub.call("mcp__t__change_lists")
        changes = {(await asyncio.wait_for(events.__anext__(), 10)).type for _ in range(2)}
        assert changes == {"resources_changed", "prompts_changed"}
        await hub.shutdown()
        with pytest.raises(StopAsyncIteration):
            await asyncio.wait_for(events.__anext__(), 10)


def test_a_blocking_hub_lists_reads_fills_in_completes_and_sees_updates() -> None:
    with mcpmux.BlockingHub(prompting(), ephemeral=True) as hub:
        assert [r.uri for r in hub.resources()] == ["test://counter"]
        assert [t.name for t in hub.resource_templates()] == ["item"]
        assert hub.read_resource("test://item/7")[0].text == "item 7"
        [greet] = hub.prompts()
        assert hub.get_prompt(greet, {"name": "Bo"}).messages[0].text == "Say hello to Bo."
        assert hub.complete("name", "A", prompt=greet).values == ("Ada", "Alan")
        events = hub.resource_events(timeout=10)
        hub.subscribe("test://counter")
        hub.call("mcp__t__bump")
        update = next(events)
        assert (update.type, update.uri) == ("updated", "test://counter")
        hub.unsubscribe("test://counter")
        assert list(hub.resource_events(timeout=0.2)) == []

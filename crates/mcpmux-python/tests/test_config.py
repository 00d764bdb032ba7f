"""`Hub.from_config` takes what the CLI's config takes, read by the library's own loader:
other tools' files (`imports=`, and `import = [...]` in `mcpmux.toml`), per-call scope from the
config's stages, the tool cache, and `reconfigure` of a running hub with a new config."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import mcpmux
from conftest import TESTSERVER, testserver


def toml_server(name: str, *args: str, extra: str = "") -> str:
    testserver()  # skips when the test server is not built
    return f'[servers.{name}]\ncommand = {json.dumps(str(TESTSERVER))}\nargs = {json.dumps(list(args))}\n{extra}\n'


def codex_project(tmp_path: Path) -> Path:
    """A project whose only server is in Codex's own file (`.codex/config.toml`)."""
    project = tmp_path / "project"
    (project / ".codex").mkdir(parents=True)
    testserver()
    (project / ".codex" / "config.toml").write_text(
        f'[mcp_servers.cx]\ncommand = {json.dumps(str(TESTSERVER))}\nargs = []\n'
    )
    return project


async def test_imports_reads_another_tools_config_as_the_cli_import_flag_does(tmp_path: Path) -> None:
    project = codex_project(tmp_path)
    home = tmp_path / "home"
    home.mkdir()
    async with mcpmux.Hub.from_config(home=home, project_dir=project, trust_project=True, ephemeral=True) as hub:
        assert not any(t.server == "cx" for t in hub.tools()), "no other tool's file is read unasked"
    async with mcpmux.Hub.from_config(
        home=home, project_dir=project, trust_project=True, imports=["codex"], ephemeral=True
    ) as hub:
        assert any(t.name == "mcp__cx__echo" for t in hub.tools())


async def test_an_import_list_in_the_projects_mcpmux_toml_is_honoured(tmp_path: Path) -> None:
    project = codex_project(tmp_path)
    (project / "mcpmux.toml").write_text('import = ["codex"]\n')
    home = tmp_path / "home"
    home.mkdir()
    async with mcpmux.Hub.from_config(home=home, project_dir=project, trust_project=True, ephemeral=True) as hub:
        assert any(t.name == "mcp__cx__echo" for t in hub.tools())


def test_an_unknown_import_name_is_a_config_error_listing_the_valid_ones(tmp_path: Path) -> None:
    with pytest.raises(mcpmux.ConfigError, match='"codex"'):
        mcpmux.BlockingHub.from_config(home=tmp_path, project_dir=tmp_path, imports=["emacs"]).start()


async def test_a_call_outside_its_scope_is_refused_by_the_configs_stages(tmp_path: Path) -> None:
    config = tmp_path / "mcpmux.toml"
    config.write_text(toml_server("planner", extra='stages = ["plan"]'))
    async with mcpmux.Hub.from_config([config], home=tmp_path, project_dir=tmp_path, ephemeral=True) as hub:
        assert [t.server for t in hub.tools(scope="build")] == []
        assert "in plan" in (await hub.call("mcp__planner__echo", {"text": "in plan"}, scope="plan")).text
        with pytest.raises(mcpmux.OutOfScope):
            await hub.call("mcp__planner__echo", {"text": "in build"}, scope="build")


async def test_the_tool_cache_is_written_to_the_folder_given_and_to_none_when_off(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    async with mcpmux.Hub({"t": testserver()}, ephemeral=True, tool_cache=cache, tool_cache_max_age=60) as hub:
        assert hub.tools()
    assert any(cache.rglob("*")), "the tool list was cached in the folder given"
    off = tmp_path / "off"
    async with mcpmux.Hub({"t": testserver()}, tool_cache=False, ephemeral=True) as hub:
        assert hub.tools()
    assert not off.exists()


async def test_reconfigure_swaps_the_inline_servers_and_says_what_changed() -> None:
    async with mcpmux.Hub({"a": testserver(), "k": testserver()}, ephemeral=True) as hub:
        changed = await hub.reconfigure({"b": testserver(), "k": testserver()})
        assert changed["added"] == ["b"] and changed["removed"] == ["a"] and changed["kept"] == ["k"]
        await hub.wait_ready()
        servers = {t.server for t in hub.tools()}
        assert servers == {"b", "k"}
        assert "swapped" in (await hub.call("mcp__b__echo", {"text": "swapped"})).text


def test_a_blocking_hub_reconfigure_rereads_its_config_files(tmp_path: Path) -> None:
    config = tmp_path / "mcpmux.toml"
    config.write_text(toml_server("one"))
    with mcpmux.BlockingHub.from_config([config], home=tmp_path, project_dir=tmp_path, ephemeral=True) as hub:
        assert {t.server for t in hub.tools()} == {"one"}
        config.write_text(toml_server("one") + toml_server("two", "--tools", "echo"))
        changed = hub.reconfigure()
        assert changed["added"] == ["two"] and changed["kept"] == ["one"]


async def test_an_invalid_new_config_changes_nothing_and_raises() -> None:
    async with mcpmux.Hub({"a": testserver()}, ephemeral=True) as hub:
        with pytest.raises(mcpmux.ConfigError):
            await hub.reconfigure({"b": {"command": str(TESTSERVER), "nonsense_key": 1}})
        assert {t.server for t in hub.tools()} == {"a"}

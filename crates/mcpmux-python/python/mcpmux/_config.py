"""``reconfigure`` on a running hub: the config files re-read (the ones the hub was made from,
or new ones) and the inline servers (the same, or new ones), swapped in as the CLI's
``mcpmux serve`` does on a reload — unchanged servers keep their sessions, removed ones drain
and stop, changed ones restart. Answers what changed, by server name.
"""

from __future__ import annotations

import os
from typing import Any, Iterable, Mapping

from . import _mcpmux

__all__ = ["AsyncReconfigure", "BlockingReconfigure"]


def _options(
    base: "Any",
    servers: Mapping[str, Mapping[str, Any]] | None,
    config_files: "Iterable[str | os.PathLike[str]] | None",
    imports: Iterable[str] | None,
) -> dict[str, Any]:
    config = dict(base._config)
    if config_files is not None:
        config["use_config"] = True
        config["config_files"] = [os.fspath(p) for p in config_files]
    if imports is not None:
        config["use_config"] = True
        config["import"] = list(imports)
    if servers is not None:
        base._servers = dict(servers)
    base._config = config
    return {**config, "servers": base._servers}


class AsyncReconfigure:
    """:meth:`reconfigure` for :class:`mcpmux.Hub`."""

    _hub: "_mcpmux.NativeHub"

    async def reconfigure(
        self,
        servers: Mapping[str, Mapping[str, Any]] | None = None,
        *,
        config_files: "Iterable[str | os.PathLike[str]] | None" = None,
        imports: Iterable[str] | None = None,
    ) -> dict[str, Any]:
        """Swaps to a new config: the config files re-read (``config_files``/``imports``
        replace the ones given before), and ``servers`` replacing the inline servers (the same
        ones when ``None``). Answers ``{"added", "removed", "restarted", "updated", "kept":
        [names], "policy_changed": bool}``. An invalid config changes nothing and raises."""
        return await _mcpmux.reconfigure(self._hub, _options(self, servers, config_files, imports))


class BlockingReconfigure:
    """:meth:`reconfigure` for :class:`mcpmux.BlockingHub`."""

    _hub: "_mcpmux.NativeHub"

    def reconfigure(
        self,
        servers: Mapping[str, Mapping[str, Any]] | None = None,
        *,
        config_files: "Iterable[str | os.PathLike[str]] | None" = None,
        imports: Iterable[str] | None = None,
    ) -> dict[str, Any]:
        """:meth:`Hub.reconfigure`, blocking with the GIL released."""
        return _mcpmux.reconfigure_blocking(self._hub, _options(self, servers, config_files, imports))

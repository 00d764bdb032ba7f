"""The completer's wake-up on event loops without ``add_reader`` (Windows' proactor loop).

A finished call writes a byte to one end of a socket pair (``awaitable.rs``); this task awaits
the other end with ``loop.sock_recv``, which every asyncio loop offers, and drains the
completer's queue on the loop's own thread each time bytes arrive.
"""

from __future__ import annotations

import asyncio
import socket
from typing import Callable

__all__ = ["pump"]


async def _pump(loop: asyncio.AbstractEventLoop, sock: socket.socket, drain: Callable[[], None]) -> None:
    try:
        while await loop.sock_recv(sock, 256):
            drain()
    finally:
        sock.close()


def pump(loop: asyncio.AbstractEventLoop, sock: socket.socket, drain: Callable[[], None]) -> "asyncio.Task[None]":
    """Starts the task that drains the completer whenever its socket is written to."""
    return loop.create_task(_pump(loop, sock, drain))

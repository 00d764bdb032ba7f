"""The wake-up pump used where the event loop has no add_reader (Windows' proactor loop): run
here on Linux against a real socket pair, since that loop exists only on Windows."""

import asyncio
import socket

from mcpmux._wake import pump


async def test_the_pump_drains_once_per_wake_up_and_stops_when_the_writer_closes() -> None:
    loop = asyncio.get_running_loop()
    read_end, write_end = socket.socketpair()
    read_end.setblocking(False)
    drained = asyncio.Queue()
    task = pump(loop, read_end, lambda: drained.put_nowait(True))
    write_end.send(b"\x01")
    await asyncio.wait_for(drained.get(), 5)
    write_end.send(b"\x01")
    await asyncio.wait_for(drained.get(), 5)
    write_end.close()
    await asyncio.wait_for(task, 5)
    assert read_end.fileno() == -1, "the pump closes its end when it stops"


async def test_a_cancelled_pump_closes_its_socket() -> None:
    loop = asyncio.get_running_loop()
    read_end, write_end = socket.socketpair()
    read_end.setblocking(False)
    task = pump(loop, read_end, lambda: None)
    await asyncio.sleep(0)
    task.cancel()
    try:
        await task
    except asyncio.CancelledError:
        pass
    assert read_end.fileno() == -1
    write_end.close()

"""A server for the sandbox tests (Python `mcp` SDK): tools that try what a sandbox forbids
and answer what the system said, so the test sees EACCES rather than a crash."""

import os
import socket
import sys
import traceback

from mcp.server.mcpserver import MCPServer

mcp = MCPServer("sandboxed")


def failed(error: OSError) -> str:
    return f"error: {os.strerror(error.errno or 0)} (errno {error.errno})"


@mcp.tool()
def read(path: str) -> str:
    """Reads a file."""
    try:
        with open(path, encoding="utf-8") as f:
            return "ok: " + f.read()
    except OSError as e:
        return failed(e)


@mcp.tool()
def read_or_die(path: str) -> str:
    """Reads a file, and dies of an error it does not handle (as many servers do), with the
    traceback on stderr."""
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except OSError:
        traceback.print_exc()
        sys.stderr.flush()
        os._exit(1)


@mcp.tool()
def write(path: str, text: str) -> str:
    """Writes a file."""
    try:
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        return "ok"
    except OSError as e:
        return failed(e)


@mcp.tool()
def connect(port: int) -> str:
    """Connects to 127.0.0.1:port over TCP."""
    try:
        socket.create_connection(("127.0.0.1", port), timeout=2).close()
        return "connected"
    except OSError as e:
        return failed(e)


@mcp.tool()
def own_loopback() -> str:
    """Listens on 127.0.0.1 and connects to itself."""
    try:
        with socket.socket() as server:
            server.bind(("127.0.0.1", 0))
            server.listen(1)
            socket.create_connection(server.getsockname(), timeout=2).close()
        return "connected"
    except OSError as e:
        return failed(e)


@mcp.tool()
def allocate(mib: int) -> str:
    """Holds mib MiB of memory."""
    try:
        block = bytearray(mib * 1024 * 1024)
        return f"allocated {len(block) >> 20} MiB"
    except MemoryError:
        return "error: out of memory"


@mcp.tool()
def fork_bomb(tries: int) -> str:
    """Starts up to `tries` processes at once, each waiting until this call is over (or this
    server is gone), and says how many the system let it start."""
    read_end, write_end = os.pipe()
    started = []
    refused = None
    for _ in range(tries):
        try:
            pid = os.fork()
        except OSError as e:
            refused = e
            break
        if pid == 0:
            os.close(write_end)
            os.read(read_end, 1)
            os._exit(0)
        started.append(pid)
    os.close(write_end)
    os.close(read_end)
    for pid in started:
        os.waitpid(pid, 0)
    if refused is not None:
        return f"started {len(started)}, then {failed(refused)}"
    return f"started {len(started)}"


@mcp.tool()
def spin() -> str:
    """Burns CPU until stopped."""
    while True:
        pass


@mcp.tool()
def tmpdir() -> str:
    """Where temp files go."""
    return os.environ.get("TMPDIR", "")


mcp.run()

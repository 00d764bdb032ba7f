"""LangChain's own MCP support (``langchain-mcp-adapters``) for one agent run of
``adapters.py``: run by the interpreter of test-deps/.venv-lc (it needs ``mcp`` < 2, where the
package's environment pins the SDK 2.3), one process per run. A warm-up run against its own
endpoint comes first, untimed, as the in-process runs have one (imports, first-use set-ups of
the libraries); the timed run is ``langchain_loop.agent_loop``, the loop ``adapters.py``'s
``langchain_mcpmux`` runs: one server session for the run, the tools loaded from it, the model
asked until it answers. Prints the answer and the wall time as JSON.

    test-deps/.venv-lc/bin/python langchain_native.py SERVER WARM_UP_URL BASE_URL
"""

from __future__ import annotations

import asyncio
import json
import sys
import time

from langchain_loop import agent_loop
from langchain_mcp_adapters.client import MultiServerMCPClient
from langchain_mcp_adapters.tools import load_mcp_tools


async def run(server: str, base_url: str) -> str:
    client = MultiServerMCPClient({"t": {"command": server, "args": [], "transport": "stdio"}})
    # One session for the whole run (`get_tools()` without one would spawn the server per call).
    async with client.session("t") as session:
        return await agent_loop(await load_mcp_tools(session), base_url)


def main() -> None:
    server, warm_up, base_url = sys.argv[1], sys.argv[2], sys.argv[3]
    if asyncio.run(run(server, warm_up)) != "done":
        raise SystemExit("the warm-up run did not answer")
    started = time.perf_counter()
    answer = asyncio.run(run(server, base_url))
    print(json.dumps({"answer": answer, "wall_ms": (time.perf_counter() - started) * 1000}))


if __name__ == "__main__":
    main()

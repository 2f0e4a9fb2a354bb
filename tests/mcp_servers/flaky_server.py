"""A tiny stdio MCP server that misbehaves on request, for tests/test_mcp_lifecycle.py
(the official SDK's MCPServer). Run as a script: `python flaky_server.py`."""

from __future__ import annotations

import os
import sys
import time

from mcp.server.mcpserver import Context, MCPServer

server = MCPServer("flaky")


@server.tool()
def ping() -> str:
    """Answer pong."""
    return "pong"


@server.tool()
def pid() -> int:
    """This server's process id (to see that it is gone after close)."""
    return os.getpid()


@server.tool()
def crash(last_words: str) -> str:
    """Write `last_words` to stderr and exit at once, mid-call (a server that dies)."""
    print(last_words, file=sys.stderr, flush=True)
    os._exit(3)


@server.tool()
def hang(seconds: float) -> str:
    """Say so on stderr, then block (a server that hangs)."""
    print(f"hanging for {seconds}s", file=sys.stderr, flush=True)
    time.sleep(seconds)
    return "back"


@server.tool()
async def grow(name: str, ctx: Context) -> str:
    """Add a tool `name` (it answers its own name) and tell the client the list changed."""

    def added() -> str:
        return name

    server.add_tool(added, name=name, description=f"Added at run time: {name}.")
    await ctx.session.send_tool_list_changed()
    return f"added {name}"


if __name__ == "__main__":
    server.run("stdio")

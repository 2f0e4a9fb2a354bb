"""A tiny stdio MCP server for tests/test_mcp.py, written with the official SDK's MCPServer
(mcp 2.x's name for FastMCP). Run as a script: `python notes_server.py`."""

from __future__ import annotations

import time

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

server = MCPServer("notes")


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@server.tool()
def shout(text: str) -> str:
    """Return the text in upper case."""
    return text.upper()


@server.tool()
def fail(reason: str) -> str:
    """Always fails, so the bridge's isError mapping can be tested (a ToolError's message
    reaches the client; any other exception is reported as a bare "Error executing tool")."""
    raise ToolError(f"refused: {reason}")


@server.tool()
def nap(seconds: float) -> str:
    """Sleeps, so the bridge's per-call timeout can be tested."""
    time.sleep(seconds)
    return "awake"


if __name__ == "__main__":
    server.run("stdio")

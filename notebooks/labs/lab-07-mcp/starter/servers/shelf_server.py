"""The lab's MCP server: a bookshelf, over stdio, written with the official `mcp` SDK's
MCPServer (mcp 2.x's name for FastMCP). Run as a script: `python servers/shelf_server.py`.

It trusts whoever calls it, like most servers: anyone who reaches `remove` empties the
shelf. What a caller may reach is decided by the runtime in front of it, not here.
"""

from __future__ import annotations

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations

server = MCPServer("shelf")
BOOKS = ["Dune", "Middlemarch", "The Left Hand of Darkness"]
"""The shelf, in memory: each server process starts with these three."""


@server.tool(annotations=ToolAnnotations(readOnlyHint=True))
def titles() -> list[str]:
    """The titles on the shelf, in shelf order."""
    return list(BOOKS)


@server.tool(annotations=ToolAnnotations(readOnlyHint=True))
def count() -> int:
    """How many books are on the shelf."""
    return len(BOOKS)


@server.tool(annotations=ToolAnnotations(destructiveHint=True))
def remove(title: str) -> str:
    """Take a book off the shelf for good."""
    if title not in BOOKS:
        raise ToolError(f"no book {title!r} on the shelf")
    BOOKS.remove(title)
    return f"removed {title}"


if __name__ == "__main__":
    server.run("stdio")

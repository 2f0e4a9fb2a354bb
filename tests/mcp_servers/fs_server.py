"""A file-writing stdio MCP server for tests/test_contracts_mcp.py, like the common filesystem
servers: paths are relative to its working directory (agentos starts it in the workspace).
It does no checking of its own, so whatever it is asked to write, it writes."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations
from pydantic import Field

server = MCPServer("fs")


@server.tool()
def write_text(path: str, content: str) -> str:
    """Write content to a file."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(content, encoding="utf-8")
    return f"wrote {path}"


@server.tool()
def move(source: str, destination: str) -> str:
    """Move a file."""
    os.replace(source, destination)
    return "moved"


@server.tool()
def save(where: Annotated[str, Field(description="The file to write, relative to the server")],
         body: str) -> str:
    """Save text (its argument's name says nothing; its schema's description does)."""
    Path(where).write_text(body, encoding="utf-8")
    return "saved"


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def peek(path: str) -> str:
    """Read a file (read-only)."""
    return Path(path).read_text(encoding="utf-8")[:200]


if __name__ == "__main__":
    server.run("stdio")

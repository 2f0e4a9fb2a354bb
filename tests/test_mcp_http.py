"""The streamable-HTTP transport: an `mcp_servers` entry with `url:` bridges a running MCP
server (the official SDK's MCPServer, served by uvicorn on 127.0.0.1 inside the test)."""

from __future__ import annotations

import contextlib
import io
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

pytest.importorskip("mcp", reason="the MCP bridge needs the official `mcp` SDK (pip install mcp)")

from mcp.server.mcpserver import MCPServer

from agentos_kernel import Runtime
from agentos_kernel.cli.main import main as cli_main
from agentos_kernel.errors import ContractError, Err, Ok
from agentos_kernel.tools.dispatch import ToolCall, dispatch_tool


def _app() -> Any:
    web = MCPServer("web")

    @web.tool()
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    return web.streamable_http_app()


@pytest.fixture(scope="module")
def loopback_url() -> Iterator[str]:
    """An MCP server on 127.0.0.1 (an OS-chosen port) for the module, in a thread."""
    import uvicorn  # a dependency of the mcp SDK's HTTP server

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(_app(), log_level="warning", lifespan="on"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.02)
    assert server.started, "the loopback MCP server did not start"
    yield f"http://127.0.0.1:{port}/mcp"
    server.should_exit = True
    thread.join(10)
    sock.close()


def _workspace(root: Path, servers: list[dict[str, Any]]) -> Path:
    with contextlib.redirect_stdout(io.StringIO()):
        assert cli_main(["init", str(root)]) == 0
    config = root / "agentos.yaml"
    doc = yaml.safe_load(config.read_text(encoding="utf-8"))
    doc["mcp_servers"] = servers
    config.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    return root


def test_a_url_entry_bridges_a_streamable_http_server(loopback_url: str, tmp_path: Path) -> None:
    ws = _workspace(tmp_path / "ws", [{"name": "web", "url": loopback_url, "timeout_s": 60}])
    with Runtime.from_workspace(ws) as rt:
        assert rt.tools["web__add"].schema_in == "mcp_web__add_in"
        session = rt.start_session("add over http", "http")
        assert not isinstance(session, Err)
        try:
            got = dispatch_tool(ToolCall("t1", "web__add", {"a": 2, "b": 40}), tools=rt.tools,
                                allowed_tools=frozenset({"web__add"}), hooks=rt.hooks,
                                log=session.log, context=session.tool_context)
        finally:
            session.log.close()
        assert isinstance(got, Ok) and got.value["structuredContent"] == {"result": 42}
        done = [e.payload for e in rt.events("http") if e.type == "tool.result"]
        assert [(d["name"], d["ok"]) for d in done] == [("web__add", True)]


def test_an_unreachable_url_names_its_entry(tmp_path: Path) -> None:
    with socket.socket() as closed:  # a port that nothing listens on
        closed.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{closed.getsockname()[1]}/mcp"
    ws = _workspace(tmp_path / "ws", [{"name": "gone", "url": url, "timeout_s": 30}])
    with pytest.raises(ContractError) as caught:
        Runtime.from_workspace(ws)
    (problem,) = caught.value.problems
    assert problem.field == "mcp_servers[0]"
    assert problem.message.startswith(f"cannot start MCP server 'gone' ({url}): ")


@pytest.mark.parametrize("entry, problem", [
    ({"name": "both", "command": ["x"], "url": "http://127.0.0.1:1/mcp"},
     'mcp_servers.0.command: {"description":"a server has a command or a url, not both"} is '
     'not allowed for ["x"]'),
    ({"name": "neither"}, 'mcp_servers.0: "command" is a required property'),
    ({"name": "ftp", "url": "ftp://127.0.0.1/mcp"}, 'mcp_servers.0.url: "ftp://127.0.0.1/mcp" '
                                                    'does not match "^https?://[^\\s]+$"'),
])
def test_validate_wants_a_command_or_a_url(entry: dict[str, Any], problem: str, tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    ws = _workspace(tmp_path / "ws", [entry])
    capsys.readouterr()
    assert cli_main(["validate", str(ws)]) == 1
    assert capsys.readouterr().out.splitlines() == [f"agentos.yaml: {problem}"]

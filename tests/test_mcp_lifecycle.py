"""The bridged MCP servers' lifecycle: Runtime.close() (a context manager) stops them; a
server that dies or hangs mid-call is a TOOL_ERROR quoting its stderr, never a hang; a
`tools/list_changed` notification refreshes the registry for the next session. The server
is tests/mcp_servers/flaky_server.py (official SDK), which misbehaves on request."""

from __future__ import annotations

import contextlib
import dataclasses
import io
import os
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

pytest.importorskip("mcp", reason="the MCP bridge needs the official `mcp` SDK (pip install mcp)")

from agentos_kernel import Runtime
from agentos_kernel.cli.main import main as cli_main
from agentos_kernel.errors import Err, Ok
from agentos_kernel.store.events import Event
from agentos_kernel.tools.dispatch import ToolCall, dispatch_tool

FLAKY = Path(__file__).resolve().parent / "mcp_servers" / "flaky_server.py"


@pytest.fixture
def flaky_ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    with contextlib.redirect_stdout(io.StringIO()):
        assert cli_main(["init", str(root)]) == 0
    config = root / "agentos.yaml"
    doc = yaml.safe_load(config.read_text(encoding="utf-8"))
    # generous: the SDK server's first call takes a second or two on a loaded machine
    doc["mcp_servers"] = [{"name": "flaky", "command": [sys.executable, str(FLAKY)],
                           "timeout_s": 60}]
    config.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    return root


def _call(rt: Runtime, name: str, args: Any, sid: str) -> tuple[Any, list[Event]]:
    session = rt.start_session(f"direct call of {name}", sid)
    assert not isinstance(session, Err), session
    try:
        result = dispatch_tool(ToolCall("t1", name, args), tools=rt.tools,
                               allowed_tools=frozenset({name}), hooks=rt.hooks, log=session.log,
                               context=session.tool_context)
    finally:
        session.log.close()
    return result, rt.events(sid)


def _gone(pid: int, within_s: float = 15.0) -> bool:
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.05)
    return False


def test_closing_the_runtime_stops_its_servers(flaky_ws: Path) -> None:
    with Runtime.from_workspace(flaky_ws) as rt:
        got, _ = _call(rt, "flaky__pid", {}, "pid")
        assert isinstance(got, Ok)
        pid = got.value["structuredContent"]["result"]
        os.kill(pid, 0)  # alive while the runtime is open
    assert _gone(pid), f"MCP server {pid} still runs after Runtime.close()"
    after, _ = _call(rt, "flaky__pid", {}, "after")
    assert isinstance(after, Err) and after.error.code == "TOOL_ERROR"
    assert "MCP server 'flaky' is not running" in after.error.message
    rt.close()  # idempotent


def test_a_server_that_dies_mid_call_is_a_tool_error_with_its_stderr(flaky_ws: Path) -> None:
    with Runtime.from_workspace(flaky_ws) as rt:
        died, events = _call(rt, "flaky__crash", {"last_words": "out of memory (simulated)"}, "c")
        # not "timed out": the failure is reported when the pipe closes, not after timeout_s
        assert isinstance(died, Err) and died.error.code == "TOOL_ERROR"
        assert died.error.message == ("flaky__crash: MCP call failed: MCPError: Connection closed; "
                                      "server stderr: out of memory (simulated)")
        done = next(e for e in events if e.type == "tool.result")
        assert done.payload["ok"] is False and done.payload["error"]["code"] == "TOOL_ERROR"
        assert events[-1].type == "domain.error"
        again, _ = _call(rt, "flaky__ping", {}, "c2")
        assert isinstance(again, Err) and again.error.code == "TOOL_ERROR"
        assert "out of memory (simulated)" in again.error.message


def test_a_server_that_hangs_is_a_tool_error_after_timeout_s(flaky_ws: Path) -> None:
    with Runtime.from_workspace(flaky_ws) as rt:
        assert isinstance(_call(rt, "flaky__pid", {}, "warm")[0], Ok)
        (bridge,) = rt.bridged.bridges
        bridge.config = dataclasses.replace(bridge.config, timeout_s=0.5)
        hung, events = _call(rt, "flaky__hang", {"seconds": 600}, "h")
        assert isinstance(hung, Err) and hung.error.code == "TOOL_ERROR"
        assert hung.error.message == ("flaky__hang timed out after 0.5s; server stderr: "
                                      "hanging for 600.0s")
        assert [e.payload["ok"] for e in events if e.type == "tool.result"] == [False]
        pid = _call(rt, "flaky__pid", {}, "still")[0].value["structuredContent"]["result"]
    assert _gone(pid)  # close() stops a server that is still inside a call


def test_tools_list_changed_refreshes_the_registry_for_the_next_session(flaky_ws: Path) -> None:
    with Runtime.from_workspace(flaky_ws) as rt:
        assert "flaky__extra" not in rt.tools
        grown, _ = _call(rt, "flaky__grow", {"name": "extra"}, "grow")
        assert isinstance(grown, Ok)
        (bridge,) = rt.bridged.bridges
        deadline = time.monotonic() + 30
        while bridge.generation < 2 and time.monotonic() < deadline:  # the re-list is async
            time.sleep(0.05)
        assert bridge.generation == 2 and "extra" in [t.name for t in bridge.tools]
        used, events = _call(rt, "flaky__extra", {}, "use")  # opening the session refreshes
        assert isinstance(used, Ok), used
        assert used.value["structuredContent"] == {"result": "extra"}
        assert "mcp_flaky__extra_in" in rt.schemas
        assert [e.payload["name"] for e in events if e.type == "tool.invoke"] == ["flaky__extra"]
        assert rt.refresh_tools() is False  # nothing new since

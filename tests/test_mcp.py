"""L1 MCP bridge: a real stdio MCP server (tests/mcp_servers/notes_server.py, built with the
official SDK) whose tools a skill calls through dispatch_tool's nine steps."""

from __future__ import annotations

import contextlib
import dataclasses
import io
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

pytest.importorskip("mcp", reason="the MCP bridge needs the official `mcp` SDK (pip install mcp)")

from agentos_kernel import Runtime
from agentos_kernel.cli.main import main as cli_main
from agentos_kernel.config import McpServerConfig
from agentos_kernel.errors import ContractError, Err, Ok
from agentos_kernel.tools.dispatch import ToolCall, dispatch_tool
from agentos_kernel.tools.mcp_client import McpBridge, close_all

SERVER = Path(__file__).resolve().parent / "mcp_servers" / "notes_server.py"
SKILL = """---
name: mcp-math
description: Adds two numbers with the demo MCP server's add tool.
triggers:
  - sum
allowed-tools:
  - demo__add
schema_version: v1
---

# mcp-math

Worker calls demo__add with the two numbers and reports its result.
"""


def _workspace(root: Path, servers: list[dict[str, Any]]) -> Path:
    with contextlib.redirect_stdout(io.StringIO()):
        assert cli_main(["init", str(root)]) == 0
    config = root / "agentos.yaml"
    doc = yaml.safe_load(config.read_text(encoding="utf-8"))
    doc["mcp_servers"] = servers
    config.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    (root / "skills" / "mcp-math").mkdir()
    (root / "skills" / "mcp-math" / "SKILL.md").write_text(SKILL, encoding="utf-8")
    return root


DEMO = {"name": "demo", "command": [sys.executable, str(SERVER)]}


@pytest.fixture(scope="module")
def mcp_ws(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _workspace(tmp_path_factory.mktemp("mcp") / "ws", [DEMO])


@pytest.fixture(scope="module")
def mcp_rt(mcp_ws: Path) -> Iterator[Runtime]:
    """One runtime (one server process) for the module: the server takes ~2 s to start."""
    rt = Runtime.from_workspace(mcp_ws)
    yield rt
    close_all()


def _dispatch(rt: Runtime, name: str, args: Any, session_id: str) -> tuple[Any, list[Any]]:
    session = rt.start_session(f"direct call of {name}", session_id)
    assert not isinstance(session, Err), session
    try:
        result = dispatch_tool(ToolCall("t1", name, args), tools=rt.tools,
                               allowed_tools=frozenset({name}), hooks=rt.hooks, log=session.log,
                               context=session.tool_context)
    finally:
        session.log.close()
    return result, rt.events(session_id)


def test_import_does_not_load_the_sdk() -> None:
    probe = "import sys, agentos_kernel; print('mcp' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_tools_are_registered_with_their_schemas(mcp_rt: Runtime) -> None:
    for tool in ("add", "shout", "fail", "nap"):
        t = mcp_rt.tools[f"demo__{tool}"]
        assert t.schema_in == f"mcp_demo__{tool}_in" and t.schema_in in mcp_rt.schemas
        assert t.schema_out == "mcp_tool_result_v1"
    assert mcp_rt.schemas.schema("mcp_demo__add_in")["required"] == ["a", "b"]
    assert mcp_rt.tools["demo__add"].description == "Add two integers."
    assert "echo" in mcp_rt.tools  # the builtins are still there


def test_dispatch_runs_the_nine_steps(mcp_rt: Runtime) -> None:
    result, events = _dispatch(mcp_rt, "demo__add", {"a": 2, "b": 3}, "add-ok")
    assert isinstance(result, Ok)
    assert result.value["structuredContent"] == {"result": 5}
    assert result.value["content"] == [{"type": "text", "text": "5"}] and not result.value["isError"]
    types = [e.type for e in events]
    assert types.index("tool.invoke") < types.index("tool.result")
    hooks = [e.payload["hook"] for e in events if e.type == "hook.fired"]
    assert "PreToolUse" in hooks and "PostToolUse" in hooks
    done = next(e for e in events if e.type == "tool.result")
    assert done.payload["ok"] and done.payload["result"]["structuredContent"] == {"result": 5}


def test_schema_in_rejects_bad_args_before_the_server_is_called(mcp_rt: Runtime) -> None:
    result, events = _dispatch(mcp_rt, "demo__add", {"a": "two", "b": 3}, "add-bad")
    assert isinstance(result, Err) and result.error.code == "SCHEMA_INVALID"
    assert "mcp_demo__add_in" in result.error.message
    assert not [e for e in events if e.type in ("tool.invoke", "tool.result")]


def test_an_is_error_result_is_a_logged_tool_error(mcp_rt: Runtime) -> None:
    result, events = _dispatch(mcp_rt, "demo__fail", {"reason": "no"}, "fail")
    assert isinstance(result, Err) and result.error.code == "TOOL_ERROR"
    assert result.error.message == "demo__fail: Error executing tool fail: refused: no"
    done = next(e for e in events if e.type == "tool.result")
    assert done.payload["ok"] is False and done.payload["error"]["code"] == "TOOL_ERROR"
    assert [e.payload["code"] for e in events if e.type == "domain.error"] == ["TOOL_ERROR"]


def test_end_to_end_the_worker_calls_the_mcp_tool(mcp_rt: Runtime) -> None:
    result = mcp_rt.handle_user_request("sum two numbers", session_id="e2e")
    assert isinstance(result, Ok), result
    events = mcp_rt.events("e2e")
    assert [e.payload["skill"] for e in events if e.type == "skill.invoke"] == ["mcp-math"]
    assert [e.payload["name"] for e in events if e.type == "tool.invoke"] == ["demo__add"]
    assert events[-1].type == "session.close" and events[-1].payload["ok"] is True
    assert '"structuredContent": {"result": 0}' in result.value.output


def test_a_call_that_overruns_timeout_s_is_a_tool_error(tmp_path: Path) -> None:
    bridge = McpBridge(McpServerConfig("slow", (sys.executable, str(SERVER)), timeout_s=30),
                       "agentos.yaml", tmp_path)
    try:
        bridge.start()
        assert isinstance(bridge.call("add", {"a": 1, "b": 1}), Ok)
        bridge.config = dataclasses.replace(bridge.config, timeout_s=0.5)
        late = bridge.call("nap", {"seconds": 3})
        assert isinstance(late, Err) and late.error.code == "TOOL_ERROR"
        assert late.error.message == "slow__nap timed out after 0.5s"
    finally:
        bridge.close()
    gone = bridge.call("add", {"a": 1, "b": 1})
    assert isinstance(gone, Err) and "not running" in gone.error.message


def test_a_server_that_does_not_start_names_its_entry(tmp_path: Path) -> None:
    ws = _workspace(tmp_path / "ws", [DEMO, {"name": "ghost", "command": ["no-such-mcp-server-x"]}])
    with pytest.raises(ContractError) as caught:
        Runtime.from_workspace(ws)
    (problem,) = caught.value.problems
    assert problem.file == "agentos.yaml" and problem.field == "mcp_servers[1]"
    assert "cannot start MCP server 'ghost' (no-such-mcp-server-x)" in problem.message


def test_validate_accepts_bridged_tools_and_reports_bad_entries(
        mcp_ws: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli_main(["validate", str(mcp_ws)]) == 0  # starts no server
    bad = _workspace(tmp_path / "bad", [{"name": "Bad Name", "command": []}])
    capsys.readouterr()
    assert cli_main(["validate", str(bad)]) == 1
    out = capsys.readouterr().out.splitlines()
    assert "agentos.yaml: mcp_servers.0.command: [] has less than 1 item" in out
    assert any(line.startswith("agentos.yaml: mcp_servers.0.name: ") for line in out), out
    twice = _workspace(tmp_path / "twice", [DEMO, DEMO])
    assert cli_main(["validate", str(twice)]) == 1
    assert ("agentos.yaml: mcp_servers[1].name: server name 'demo' is used by an earlier entry"
            in capsys.readouterr().out.splitlines())

"""Fail-closed cases from the spec's table: each ends in its error code, never a silent pass."""

from pathlib import Path

from runtime.agents import Runtime
from runtime.mcp import ToolDef, dispatch_tool
from runtime.provider import MockProvider
from runtime.result import Err

ROOT = Path(__file__).resolve().parents[1]


def test_unknown_tool_is_tool_not_found(tmp_path):
    runtime = Runtime(ROOT, tmp_path / "sessions", provider=MockProvider(tool="teleport"))
    result = runtime.handle_user_request("hello, greet Ada")
    assert isinstance(result, Err) and result.error.code == "TOOL_NOT_FOUND"


def test_prose_from_a_role_is_malformed_agent_message(tmp_path):
    prose = MockProvider(faults={"planner": "Sure! Step one..."})
    runtime = Runtime(ROOT, tmp_path / "sessions", provider=prose)
    result = runtime.handle_user_request("hello, greet Ada")
    assert isinstance(result, Err) and result.error.code == "MALFORMED_AGENT_MESSAGE"


def test_pre_tool_use_hook_deny_is_gate_denied(tmp_path):
    runtime = Runtime(ROOT, tmp_path / "sessions")
    runtime.mcp.tools["rm"] = ToolDef("rm", "tool_echo_in_v1", lambda args: args)
    runtime.session_id = "s1"
    call = {"id": "t1", "name": "rm", "args": {"text": "/"}}
    result = dispatch_tool(call, runtime.mcp, runtime.schemas, runtime.hooks, runtime.events, "s1", {"rm"})
    assert isinstance(result, Err) and result.error.code == "GATE_DENIED"
    assert not (tmp_path / "sessions" / "s1").exists() or all(
        e.type != "tool.invoke" for e in runtime.events.read_all("s1"))

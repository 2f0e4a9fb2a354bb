"""`agentos mcp serve`: an MCP client (the official SDK's own stdio client) calls the
workspace's gated tools; every call runs dispatch_tool's nine steps in one logged session."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
import yaml

pytest.importorskip("mcp", reason="agentos mcp serve needs the official `mcp` SDK")

from mcp import ClientSession, StdioServerParameters, types
from mcp.client.stdio import stdio_client

from agentos_kernel.cli.main import main as cli_main
from agentos_kernel.store.events import read_log
from agentos_kernel.tools.mcp_serve import SERVE_PROMPT, SERVED_ACTOR

# The student's gate: a command hook that refuses write_file to anything outside notes/.
GUARD = """import json, sys
call = json.load(sys.stdin)["input"]
path = call["args"].get("path", "")
if call["tool"] == "write_file" and not path.startswith("notes/"):
    print(json.dumps({"decision": "deny", "reason": f"writes go to notes/ only, not {path}"}))
else:
    print(json.dumps({"decision": "allow"}))
"""
DENY_REASON = "writes go to notes/ only, not secrets.txt"


def _gated(ws: Path) -> Path:
    config = ws / "agentos.yaml"
    doc = yaml.safe_load(config.read_text(encoding="utf-8"))
    doc["hooks"].append({"event": "PreToolUse", "command": ["python", "hooks/guard.py"],
                         "priority": 90, "timeout_s": 10, "id": "notes_only"})
    config.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    (ws / "hooks").mkdir()
    (ws / "hooks" / "guard.py").write_text(GUARD, encoding="utf-8")
    return ws


def _client_session(ws: Path, calls: list[tuple[str, Any]], *extra: str
                    ) -> tuple[list[types.Tool], list[types.CallToolResult], str]:
    """Spawn `python -m agentos_kernel mcp serve` as an MCP client would, list its tools and
    make `calls`; returns the tools, the results and the server's stderr."""
    errlog = ws.parent / "serve.stderr"
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "agentos_kernel", "mcp", "serve", "--workspace", str(ws), *extra],
        cwd=ws.parent)

    async def go() -> tuple[list[types.Tool], list[types.CallToolResult]]:
        with errlog.open("w", encoding="utf-8") as err:
            async with stdio_client(params, errlog=err) as (read, write), \
                    ClientSession(read, write) as session:
                await session.initialize()
                tools = (await session.list_tools()).tools
                results = [await session.call_tool(name, args) for name, args in calls]
        return tools, results

    tools, results = anyio.run(go)
    return tools, results, errlog.read_text(encoding="utf-8")


def _text(result: types.CallToolResult) -> str:
    return " ".join(c.text for c in result.content if isinstance(c, types.TextContent))


def test_an_mcp_client_uses_the_gated_tools(workspace: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    ws = _gated(workspace)
    write = {"path": "secrets.txt", "content": "x",
             "claim": {"who": "client", "why": "test", "expected_hash": "", "schema_version": "v1"}}
    tools, (echoed, denied, bad), stderr = _client_session(
        ws, [("echo", {"text": "hi"}), ("write_file", write), ("echo", {"text": 5})],
        "--session", "served")
    by_name = {t.name: t for t in tools}
    assert {"echo", "read_file", "write_file", "list_dir"} <= set(by_name)
    assert by_name["echo"].input_schema["required"] == ["text"]
    assert "session served" in stderr

    # allowed: the result as text and structured content
    assert not echoed.is_error and echoed.structured_content == {"text": "hi"}
    assert json.loads(_text(echoed)) == {"text": "hi"}
    # the PreToolUse deny reaches the client as an error result with the hook's reason
    assert denied.is_error
    assert _text(denied) == f"GATE_DENIED: PreToolUse denied write_file: {DENY_REASON}"
    # bad arguments are refused by schema_in before the tool runs
    assert bad.is_error and _text(bad).startswith("SCHEMA_INVALID: ")

    log = ws / "sessions" / "served" / ".events.jsonl"
    events = list(read_log(log))
    start, close = events[0], events[-1]
    assert start.type == "session.start" and start.actor == SERVED_ACTOR
    assert start.payload["prompt"] == SERVE_PROMPT
    assert close.type == "session.close" and close.payload["ok"] is True
    assert close.payload["reason"] == ("MCP client disconnected after 3 tool call(s), "
                                       "2 refused or failed")
    invokes = [e for e in events if e.type == "tool.invoke"]
    assert [(e.actor, e.payload["name"], e.payload["args"]) for e in invokes] == [
        (SERVED_ACTOR, "echo", {"text": "hi"})]  # neither refused call reached the tool
    deny = [e.payload for e in events if e.type == "hook.fired" and e.payload["decision"] == "deny"]
    assert [(d["hook"], d["handler"], d["reason"]) for d in deny] == [
        ("PreToolUse", "notes_only", DENY_REASON)]
    assert [e.payload["code"] for e in events if e.type == "domain.error"] == [
        "GATE_DENIED", "SCHEMA_INVALID"]  # the bad-args refusal is logged after its violation
    assert [(e.payload["schema_id"], e.payload["where"]) for e in events
            if e.type == "schema.violation"] == [("tool_echo_in_v1", "tool echo input")]
    assert [e.type for e in events][-3:] == ["schema.violation", "domain.error", "session.close"]
    assert not (ws / "secrets.txt").exists()
    # the log verifies and audits like any other
    assert cli_main(["--workspace", str(ws), "verify", "served"]) == 0
    assert cli_main(["audit", str(log)]) == 0
    assert cli_main(["--workspace", str(ws), "replay", "served", "--strict"]) == 0
    # the client's calls are not a request to repeat: rerun refuses, naming why
    capsys.readouterr()
    assert cli_main(["--workspace", str(ws), "rerun", "served"]) == 2
    assert "it was served to an MCP client (agentos mcp serve)" in capsys.readouterr().err


def test_a_fault_preset_denies_every_call(workspace: Path) -> None:
    _, (res,), stderr = _client_session(workspace, [("echo", {"text": "hi"})],
                                        "--faults", "hook_deny", "--session", "f")
    assert stderr.splitlines()[-1] == ("agentos mcp serve: MCP client disconnected after 1 tool "
                                       "call(s), 1 refused or failed; session f closed")
    assert res.is_error and _text(res) == ("GATE_DENIED: PreToolUse denied echo: denied by "
                                           "deny_all (fault injection)")


def test_a_session_start_deny_serves_nothing(workspace: Path, tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    plan = tmp_path / "deny_start.yaml"
    plan.write_text(yaml.safe_dump({"hooks": [{"event": "SessionStart",
                                               "handler": "agentos_kernel.hooks.builtin:deny_all"}]}),
                    encoding="utf-8")
    code = cli_main(["mcp", "serve", "--workspace", str(workspace), "--faults", str(plan),
                     "--session", "no"])
    assert code == 1
    assert "SessionStart denied: denied by deny_all" in capsys.readouterr().err
    events = list(read_log(workspace / "sessions" / "no" / ".events.jsonl"))
    assert events[-1].type == "session.close" and events[-1].payload["ok"] is False
    assert "GATE_DENIED" in events[-1].payload["reason"]
    assert cli_main(["audit", str(workspace / "sessions" / "no")]) == 0


FLAKY = Path(__file__).resolve().parent / "mcp_servers" / "flaky_server.py"
PROXY_SKILL = """---
name: grow-tools
description: Uses the flaky server's tools, one of which it adds at run time.
triggers:
  - grow
allowed-tools:
  - flaky__grow
  - flaky__extra
schema_version: v1
---

# grow-tools

Worker calls flaky__grow, then the tool it added.
"""


def test_bridged_tools_are_served_and_their_list_follows_the_server(workspace: Path) -> None:
    config = workspace / "agentos.yaml"
    doc = yaml.safe_load(config.read_text(encoding="utf-8"))
    doc["mcp_servers"] = [{"name": "flaky", "command": [sys.executable, str(FLAKY)],
                           "timeout_s": 60}]
    config.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    (workspace / "skills" / "grow-tools").mkdir()
    (workspace / "skills" / "grow-tools" / "SKILL.md").write_text(PROXY_SKILL, encoding="utf-8")
    errlog = workspace.parent / "proxy.stderr"
    params = StdioServerParameters(
        command=sys.executable, cwd=workspace.parent,
        args=["-m", "agentos_kernel", "mcp", "serve", "--workspace", str(workspace),
              "--session", "proxy"])

    async def go() -> tuple[list[str], list[str], types.CallToolResult, types.CallToolResult]:
        with errlog.open("w", encoding="utf-8") as err:
            async with stdio_client(params, errlog=err) as (read, write), \
                    ClientSession(read, write) as session:
                await session.initialize()
                before = [t.name for t in (await session.list_tools()).tools]
                grown = await session.call_tool("flaky__grow", {"name": "extra"})
                after: list[str] = []
                with anyio.move_on_after(30):  # the server re-lists after its notification
                    while "flaky__extra" not in after:
                        after = [t.name for t in (await session.list_tools()).tools]
                        await anyio.sleep(0.05)
                used = await session.call_tool("flaky__extra", {})
        return before, after, grown, used

    before, after, grown, used = anyio.run(go)
    assert "flaky__grow" in before and "flaky__extra" not in before
    assert "flaky__extra" in after
    assert not grown.is_error and _text(grown) == "added extra"
    assert not used.is_error and used.structured_content == {"result": "extra"}
    events = list(read_log(workspace / "sessions" / "proxy" / ".events.jsonl"))
    assert [e.payload["name"] for e in events if e.type == "tool.invoke"] == [
        "flaky__grow", "flaky__extra"]
    assert events[-1].type == "session.close" and events[-1].payload["ok"] is True

"""What a student adds to a runtime without touching its code: an own L1 tool (a ToolDef
whose schemas are files in the workspace) and an L6 command hook run by `python`."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from agentos_kernel import ContractError, Err, ErrorCode, Ok, Runtime, ToolDef
from agentos_kernel.errors import DomainError, Result
from agentos_kernel.tools.dispatch import ToolContext

from .helpers import CANONICAL, Run, finish

SHOUT_SKILL = """---
name: shout
description: Shouts the prompt back with the shout tool.
triggers: [shout]
allowed-tools: [shout]
schema_version: v1
---
1. Worker calls shout with the prompt as its message.
"""


def shout(args: dict[str, Any], ctx: ToolContext) -> Result[Any]:
    if not args["message"].strip():
        return Err(DomainError("tool", ErrorCode.TOOL_ERROR, "nothing to shout"))
    return Ok({"text": args["message"].upper()})


SHOUT = ToolDef("shout", "tool_shout_in_v1", "tool_shout_out_v1", shout, "Upper-case a message.")


def _schema(sid: str, props: dict[str, Any]) -> dict[str, Any]:
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": sid, "type": "object",
            "required": sorted(props), "properties": props, "additionalProperties": False}


@pytest.fixture
def shout_ws(workspace: Path) -> Path:
    """The workspace with the shout tool's two schemas and a skill that allows it."""
    for sid, field in (("tool_shout_in_v1", "message"), ("tool_shout_out_v1", "text")):
        doc = _schema(sid, {field: {"type": "string"}})
        (workspace / "schemas" / "tools" / f"{sid}.json").write_text(json.dumps(doc))
    (workspace / "skills" / "shout").mkdir()
    (workspace / "skills" / "shout" / "SKILL.md").write_text(SHOUT_SKILL)
    return workspace


def test_an_own_tool_goes_through_dispatch_like_a_builtin(shout_ws: Path) -> None:
    rt = Runtime.from_workspace(shout_ws, tools=[SHOUT])
    assert rt.tools.names() == ["echo", "list_dir", "read_file", "shout", "write_file"]
    run = finish(rt, rt.handle_user_request("shout hello there"))
    assert run.ok, run.result
    assert run.invoked() == ["shout"]
    result = run.of("tool.result")[0].payload
    assert result["ok"] and result["result"] == {"text": "SHOUT HELLO THERE"}
    assert run.result.value.output == "SHOUT HELLO THERE"


def test_an_own_tool_stays_inside_its_skill_scope(shout_ws: Path) -> None:
    rt = Runtime.from_workspace(shout_ws, tools=[SHOUT])
    run = finish(rt, rt.handle_user_request(CANONICAL))
    assert run.ok and run.invoked() == ["echo"]  # greet's scope: the new tool is not offered
    assert "shout" not in json.dumps([e.payload for e in run.of("llm.request")])


def test_an_own_tool_without_its_schemas_is_refused_at_load(workspace: Path) -> None:
    with pytest.raises(ContractError) as exc:
        Runtime.from_workspace(workspace, tools=[SHOUT])
    fields = {(p.field, p.message) for p in exc.value.problems}
    assert ("tool_shout_in_v1", "no schema 'tool_shout_in_v1' is loaded; tool 'shout' (schema_in) "
            "needs it") in fields
    assert any(f == "tool_shout_out_v1" for f, _ in fields)


def test_an_own_tool_cannot_replace_a_builtin(shout_ws: Path) -> None:
    fake_echo = ToolDef("echo", "tool_shout_in_v1", "tool_shout_out_v1", shout)
    with pytest.raises(ValueError, match="tool 'echo' is already registered"):
        Runtime.from_workspace(shout_ws, tools=[fake_echo])


def test_without_own_tools_the_registry_is_the_builtin_one(runtime: Runtime) -> None:
    assert runtime.tools.names() == ["echo", "list_dir", "read_file", "write_file"]


# -- a command hook named `python` runs on the runtime's own interpreter -------------------------


def test_a_python_command_hook_runs_without_python_on_path(workspace: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    script = workspace / "hooks" / "gate.py"
    script.parent.mkdir()
    script.write_text("import json, sys\nreq = json.load(sys.stdin)\n"
                      "print(json.dumps({'decision': 'deny', 'reason': sys.executable}))\n")
    cfg = workspace / "agentos.yaml"
    entry = {"event": "PreToolUse", "command": ["python", "hooks/gate.py"], "priority": 1000,
             "timeout_s": 30}
    cfg.write_text(cfg.read_text().replace("hooks:\n", f"hooks:\n  - {json.dumps(entry)}\n", 1))
    monkeypatch.setenv("PATH", "")  # no `python` (nor anything else) to find on PATH
    rt = Runtime.from_workspace(workspace)
    run: Run = finish(rt, rt.handle_user_request(CANONICAL))
    denies = [h for h in run.hooks("PreToolUse") if h["decision"] == "deny"]
    assert denies and denies[0]["reason"] == sys.executable
    assert denies[0]["handler"] == "python hooks/gate.py"  # the id is what agentos.yaml says
    assert "echo" not in run.invoked()

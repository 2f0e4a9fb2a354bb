"""`agentos mcp serve` as an MCP client reads it: every tool's outputSchema (which the SDK
client checks each result against) and annotations, a bridged server's own passed through,
and an unknown tool refused as the JSON-RPC error MCP prescribes (-32602)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import jsonschema
import pytest
import yaml

pytest.importorskip("mcp", reason="agentos mcp serve needs the official `mcp` SDK")

from mcp import ClientSession, MCPError, StdioServerParameters, types
from mcp.client.stdio import stdio_client

from agentos_kernel import Runtime
from agentos_kernel.errors import Ok
from agentos_kernel.store.events import read_log
from agentos_kernel.tools.dispatch import ToolDef
from agentos_kernel.tools.mcp_client import close_all
from agentos_kernel.tools.mcp_serve import served_tool, to_call_result

FS = Path(__file__).resolve().parent / "mcp_servers" / "fs_server.py"
FS_SKILL = """---
name: fs-tools
description: Uses the fs server's tools.
triggers:
  - files
allowed-tools:
  - fs__peek
  - fs__write_text
schema_version: v1
---

# fs-tools

Worker peeks and writes.
"""


def _serve_args(ws: Path, session: str) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable, cwd=ws.parent,
        args=["-m", "agentos_kernel", "mcp", "serve", "--workspace", str(ws), "--session", session])


def _list(params: StdioServerParameters, call: str = "") -> tuple[list[types.Tool], MCPError | None]:
    """The tools `params`' server lists, and the MCPError a call of `call` raised (if asked)."""
    async def go() -> tuple[list[types.Tool], MCPError | None]:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as s:
            await s.initialize()
            tools = (await s.list_tools()).tools
            if not call:
                return tools, None
            with pytest.raises(MCPError) as refused:
                await s.call_tool(call, {"source": "a", "destination": "b"})
            return tools, refused.value
    return anyio.run(go)


def test_every_tool_has_an_object_output_schema_and_its_annotations(workspace: Path) -> None:
    (workspace / "notes").mkdir(exist_ok=True)
    (workspace / "notes" / "a.txt").write_text("hello", encoding="utf-8")
    write = {"path": "notes/b.txt", "content": "x",
             "claim": {"who": "client", "why": "test", "expected_hash": "", "schema_version": "v1"}}

    async def go() -> tuple[list[types.Tool], list[types.CallToolResult], MCPError]:
        async with stdio_client(_serve_args(workspace, "schemas")) as (read, write_), \
                ClientSession(read, write_) as s:
            await s.initialize()
            tools = (await s.list_tools()).tools
            # the SDK client validates each structuredContent against the listed outputSchema
            # (a RuntimeError here would be a result that does not match its schema)
            results = [await s.call_tool("echo", {"text": "hi"}),
                       await s.call_tool("read_file", {"path": "notes/a.txt"}),
                       await s.call_tool("list_dir", {"path": "notes"}),
                       await s.call_tool("write_file", write)]
            with pytest.raises(MCPError) as unknown:
                await s.call_tool("no_such_tool", {})
            after = await s.call_tool("echo", {"text": "still served"})  # the session goes on
            return tools, [*results, after], unknown.value

    tools, results, unknown = anyio.run(go)
    by_name = {t.name: t for t in tools}
    for tool in tools:
        schema = tool.output_schema
        assert schema is not None and schema["type"] == "object", tool.name
        assert "$ref" not in json.dumps(schema), tool.name  # nothing a client cannot follow
        jsonschema.Draft202012Validator.check_schema(schema)
    for name, result in zip(["echo", "read_file", "list_dir", "write_file", "echo"], results,
                            strict=True):
        assert not result.is_error, result
        jsonschema.validate(result.structured_content, by_name[name].output_schema)
    assert results[2].structured_content == {"path": "notes", "entries": [
        {"name": "a.txt", "kind": "file", "size": 5}]}

    hints = {n: by_name[n].annotations.model_dump(exclude_none=True, by_alias=True)  # type: ignore[union-attr]
             for n in ("echo", "read_file", "write_file", "list_dir")}
    assert hints["read_file"] == {"title": "Read a workspace file", "readOnlyHint": True,
                                  "openWorldHint": False}
    assert hints["list_dir"]["readOnlyHint"] is True and hints["echo"]["readOnlyHint"] is True
    assert hints["write_file"] == {"title": "Write a workspace file", "destructiveHint": True,
                                   "idempotentHint": True, "openWorldHint": False}

    # the unknown tool: a JSON-RPC error, not a result; still logged as the refusal it is
    assert unknown.code == types.INVALID_PARAMS and unknown.message == "Unknown tool: no_such_tool"
    events = list(read_log(workspace / "sessions" / "schemas" / ".events.jsonl"))
    assert [e.payload["code"] for e in events if e.type == "domain.error"] == ["TOOL_NOT_FOUND"]
    assert events[-1].payload["reason"] == ("MCP client disconnected after 6 tool call(s), "
                                            "1 refused or failed")


def test_a_result_that_is_not_an_object_is_wrapped_and_described(runtime: Runtime) -> None:
    schemas = runtime.schemas.with_schemas({"count_out_v1": {"type": "integer", "minimum": 0},
                                            "count_in_v1": {"type": "object"}}, "test")
    tool = ToolDef("count", "count_in_v1", "count_out_v1", lambda a, c: Ok(3), "Count.",
                   read_only=True)
    served = served_tool(tool, schemas)
    assert served.output_schema is not None
    assert served.output_schema["type"] == "object"
    assert served.output_schema["properties"] == {"result": {"type": "integer", "minimum": 0}}
    assert "not a JSON object" in served.output_schema["description"]
    assert served.annotations == types.ToolAnnotations(read_only_hint=True)
    result = to_call_result(Ok(3), bridged=False, wrapped=True)
    assert result.structured_content == {"result": 3}
    jsonschema.validate(result.structured_content, served.output_schema)
    # a tool that declares nothing has no annotations at all (no made-up defaults)
    bare = served_tool(ToolDef("count", "count_in_v1", "count_out_v1", lambda a, c: Ok(3)), schemas)
    assert bare.annotations is None


def test_a_bridged_servers_output_schema_and_annotations_pass_through(workspace: Path) -> None:
    config = workspace / "agentos.yaml"
    doc = yaml.safe_load(config.read_text(encoding="utf-8"))
    doc["mcp_servers"] = [{"name": "fs", "command": [sys.executable, str(FS)], "timeout_s": 60}]
    config.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    (workspace / "skills" / "fs-tools").mkdir()
    (workspace / "skills" / "fs-tools" / "SKILL.md").write_text(FS_SKILL, encoding="utf-8")
    try:
        listed, _ = _list(StdioServerParameters(command=sys.executable, args=[str(FS)]))
        upstream = {t.name: t for t in listed}
        # fs__move is registered but no skill lists it: not served, so unknown to the client
        listed, unserved = _list(_serve_args(workspace, "bridged"), call="fs__move")
        served = {t.name: t for t in listed}
    finally:
        close_all()
    assert "fs__move" not in served
    assert unserved is not None and unserved.code == types.INVALID_PARAMS
    assert unserved.message == "Unknown tool: fs__move"
    assert not (workspace / "b").exists()
    for name in ("peek", "write_text"):
        mine, theirs = served[f"fs__{name}"], upstream[name]
        assert theirs.output_schema is not None  # the fixture server declares one
        assert mine.output_schema == {k: v for k, v in theirs.output_schema.items() if k != "$schema"}
    assert upstream["peek"].annotations == types.ToolAnnotations(read_only_hint=True)
    assert served["fs__peek"].annotations == upstream["peek"].annotations
    assert served["fs__write_text"].annotations is None  # the server said nothing


INSPECTOR = shutil.which("mcp-inspector")


@pytest.mark.skipif(INSPECTOR is None, reason="the MCP Inspector CLI is not installed "
                    "(npm install -g @modelcontextprotocol/inspector; .ci/run does)")
def test_the_mcp_inspector_cli_lists_and_calls(workspace: Path) -> None:
    base = [str(INSPECTOR), "--cli", sys.executable, "-m", "agentos_kernel", "mcp", "serve",
            "--workspace", str(workspace)]

    def inspect(*method: str) -> Any:
        done = subprocess.run([*base, *method], capture_output=True, text=True, timeout=120,
                              cwd=workspace.parent)
        return done.returncode, done.stdout, done.stderr

    code, out, err = inspect("--method", "tools/list")
    assert code == 0, err
    listed = {t["name"]: t for t in json.loads(out)["tools"]}
    assert listed["read_file"]["annotations"]["readOnlyHint"] is True
    assert listed["write_file"]["annotations"]["destructiveHint"] is True
    assert listed["echo"]["outputSchema"]["required"] == ["text"]
    code, out, err = inspect("--method", "tools/call", "--tool-name", "echo", "--tool-arg", "text=hi")
    assert code == 0, err
    assert json.loads(out)["structuredContent"] == {"text": "hi"}
    code, out, err = inspect("--method", "tools/call", "--tool-name", "no_such_tool")
    assert code != 0 and "-32602" in out + err

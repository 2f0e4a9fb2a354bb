"""L1: `dispatch_tool` runs the spec's nine steps in the spec's order, and the builtin tools
stay inside the workspace and write only under a valid write claim."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from agentos_kernel import (
    DomainError,
    Err,
    ErrorCode,
    HookBus,
    HookDecision,
    HookHandler,
    Ok,
    Runtime,
    ToolCall,
    ToolDef,
    ToolRegistry,
    dispatch_tool,
)
from agentos_kernel.roles.session import Session
from agentos_kernel.tools.builtin import BUILTIN_TOOLS, list_dir, read_file, sha256_of, write_file
from agentos_kernel.tools.dispatch import ToolContext

from .helpers import NOTE_PROMPT, RunRequest

SID = "tools"


@pytest.fixture
def session(runtime: Runtime) -> Iterator[Session]:
    s = runtime.open_session(SID)
    yield s
    s.log.close()


class Probe:
    """A tool plus PreToolUse/PostToolUse gates that note when each ran (by log length)."""

    def __init__(self, runtime: Runtime, result: Any = None, pre: HookDecision | None = None,
                 post: HookDecision | None = None) -> None:
        self.runtime = runtime
        self.calls: list[tuple[str, int, Any]] = []
        self.result = result
        self.tools = ToolRegistry([ToolDef("probe", "tool_echo_in_v1", "tool_echo_out_v1", self._invoke),
                                   *BUILTIN_TOOLS])
        self.hooks = HookBus()
        self.hooks.register("PreToolUse", HookHandler("pre", self._gate("pre", pre)))
        self.hooks.register("PostToolUse", HookHandler("post", self._gate("post", post)))

    def _logged(self) -> int:
        return len(self.runtime.events(SID)) if self.runtime.store.exists(SID) else 0

    def _invoke(self, args: dict[str, Any], ctx: ToolContext) -> Any:
        self.calls.append(("tool", self._logged(), args))
        return self.result if self.result is not None else Ok({"text": args["text"].upper()})

    def _gate(self, name: str, decision: HookDecision | None) -> Callable[[Any], HookDecision]:
        def fn(input: Any) -> HookDecision:
            self.calls.append((name, self._logged(), dict(input)))
            return decision or HookDecision("allow")
        return fn

    def dispatch(self, session: Session, name: str = "probe", args: Any = None,
                 allowed: frozenset[str] = frozenset({"probe"})) -> Any:
        return dispatch_tool(ToolCall("t1", name, {"text": "hi"} if args is None else args),
                             tools=self.tools, allowed_tools=allowed, hooks=self.hooks,
                             log=session.log, context=session.tool_context)

    def events(self) -> list[tuple[str, str | None]]:
        """(type, hook or code) of each event logged."""
        out = []
        for e in self.runtime.events(SID) if self.runtime.store.exists(SID) else []:
            p = e.payload
            out.append((e.type, p.get("hook") or p.get("code") or p.get("schema_id")))
        return out

    def order(self) -> list[str]:
        return [c[0] for c in self.calls]


def test_the_nine_steps_run_in_order(runtime: Runtime, session: Session) -> None:
    probe = Probe(runtime)
    got = probe.dispatch(session)
    assert got == Ok({"text": "HI"})
    assert probe.events() == [("hook.fired", "PreToolUse"), ("tool.invoke", None),
                              ("tool.result", None), ("hook.fired", "PostToolUse")]
    assert probe.order() == ["pre", "tool", "post"]
    pre, tool, post = probe.calls
    assert pre[1] == 0, "PreToolUse (4) runs before anything is logged for the call"
    assert tool[1] == 2, "the tool (6) runs after its hook.fired and tool.invoke (5)"
    assert post[1] == 3, "PostToolUse (8) runs after tool.result (7)"
    assert post[2]["result"] == {"text": "HI"}
    invoke, result = runtime.events(SID)[1:3]
    assert result.parent_id == invoke.id and invoke.payload == {"id": "t1", "name": "probe",
                                                                "args": {"text": "hi"}}


def test_step_1_registry_before_step_2_scope(runtime: Runtime, session: Session) -> None:
    probe = Probe(runtime)
    got = probe.dispatch(session, name="nope", allowed=frozenset())
    assert isinstance(got, Err) and got.error.code == ErrorCode.TOOL_NOT_FOUND
    assert probe.events() == [("domain.error", ErrorCode.TOOL_NOT_FOUND)] and probe.calls == []


def test_step_2_scope_before_step_3_schema_in(runtime: Runtime, session: Session) -> None:
    probe = Probe(runtime)
    got = probe.dispatch(session, args={"wrong": 1}, allowed=frozenset({"echo"}))
    assert isinstance(got, Err) and got.error.code == ErrorCode.TOOL_NOT_ALLOWED
    assert "probe" in got.error.message and "echo" in got.error.message
    assert probe.events() == [("domain.error", ErrorCode.TOOL_NOT_ALLOWED)] and probe.calls == []


def test_step_3_schema_in_before_step_4_pre_tool_use(runtime: Runtime, session: Session) -> None:
    probe = Probe(runtime)
    got = probe.dispatch(session, args={"txt": 1})
    assert isinstance(got, Err) and got.error.code == ErrorCode.SCHEMA_INVALID
    assert probe.events() == [("schema.violation", "tool_echo_in_v1")] and probe.calls == []


def test_step_4_deny_stops_before_step_5(runtime: Runtime, session: Session) -> None:
    probe = Probe(runtime, pre=HookDecision("deny", "not today"))
    got = probe.dispatch(session)
    assert isinstance(got, Err) and got.error.code == ErrorCode.GATE_DENIED
    assert "not today" in got.error.message
    assert probe.events() == [("hook.fired", "PreToolUse"), ("domain.error", ErrorCode.GATE_DENIED)]
    assert probe.order() == ["pre"]


def test_step_4_transform_replaces_the_args_which_must_pass_schema_in(runtime: Runtime,
                                                                      session: Session) -> None:
    probe = Probe(runtime, pre=HookDecision("transform", output={"args": {"text": "rewritten"}}))
    assert probe.dispatch(session) == Ok({"text": "REWRITTEN"})
    assert probe.calls[1][2] == {"text": "rewritten"}
    assert runtime.events(SID)[1].payload["args"] == {"text": "rewritten"}


def test_step_4_transform_failing_schema_in_is_a_deny(runtime: Runtime, session: Session) -> None:
    probe = Probe(runtime, pre=HookDecision("transform", output={"args": {"text": 7}}))
    got = probe.dispatch(session)
    assert isinstance(got, Err) and got.error.code == ErrorCode.GATE_DENIED
    assert probe.order() == ["pre"]
    assert ("schema.violation", "tool_echo_in_v1") in probe.events()
    assert "tool.invoke" not in [t for t, _ in probe.events()]


def test_step_9_schema_out_is_checked_after_step_8(runtime: Runtime, session: Session) -> None:
    probe = Probe(runtime, result=Ok({"wrong": "shape"}))
    got = probe.dispatch(session)
    assert isinstance(got, Err) and got.error.code == ErrorCode.SCHEMA_INVALID
    assert probe.events() == [("hook.fired", "PreToolUse"), ("tool.invoke", None),
                              ("tool.result", None), ("hook.fired", "PostToolUse"),
                              ("schema.violation", "tool_echo_out_v1")]
    violation = runtime.events(SID)[-1]
    assert violation.payload["where"] == "tool probe output"
    assert violation.parent_id == runtime.events(SID)[1].id


def test_step_8_post_tool_use_may_redact_the_result(runtime: Runtime, session: Session) -> None:
    probe = Probe(runtime, post=HookDecision("transform", output={"result": {"text": "[redacted]"}}))
    assert probe.dispatch(session) == Ok({"text": "[redacted]"})
    assert runtime.events(SID)[2].payload["result"] == {"text": "HI"}  # the log keeps what happened


def test_step_8_post_tool_use_deny_withholds_the_result(runtime: Runtime, session: Session) -> None:
    probe = Probe(runtime, post=HookDecision("deny", "secret"))
    got = probe.dispatch(session)
    assert isinstance(got, Err) and got.error.code == ErrorCode.GATE_DENIED
    assert "withheld" in got.error.message


def test_a_tool_error_is_a_failed_result_not_an_exception(runtime: Runtime, session: Session) -> None:
    probe = Probe(runtime, result=Err(DomainError("tool", ErrorCode.TOOL_ERROR, "disk on fire")))
    got = probe.dispatch(session)
    assert isinstance(got, Err) and got.error.code == ErrorCode.TOOL_ERROR
    result = runtime.events(SID)[2]
    assert result.payload["ok"] is False and result.payload["error"]["message"] == "disk on fire"
    assert probe.events()[-1] == ("domain.error", ErrorCode.TOOL_ERROR)
    assert runtime.events(SID)[-1].parent_id == runtime.events(SID)[1].id


def test_a_tool_that_raises_is_reported_once_as_tool_error(runtime: Runtime, session: Session) -> None:
    def broken(args: dict[str, Any], ctx: ToolContext) -> Any:
        raise OSError("no such device")

    tools = ToolRegistry([ToolDef("broken", "tool_echo_in_v1", "tool_echo_out_v1", broken)])
    got = dispatch_tool(ToolCall("t1", "broken", {"text": "x"}), tools=tools,
                        allowed_tools=frozenset({"broken"}), hooks=HookBus(), log=session.log,
                        context=session.tool_context)
    assert isinstance(got, Err) and got.error.code == ErrorCode.TOOL_ERROR
    assert "OSError: no such device" in got.error.message
    types = [e.type for e in runtime.events(SID)]
    assert types.count("tool.result") == 1 and types.count("domain.error") == 1


# -- the registry ------------------------------------------------------------------------------


def test_registry_names_the_bad_key_and_refuses_duplicates() -> None:
    reg = ToolRegistry(BUILTIN_TOOLS)
    assert reg.names() == ["echo", "list_dir", "read_file", "write_file"]
    assert "echo" in reg and "rm" not in reg and reg.find("rm") is None
    with pytest.raises(KeyError, match=r"'rm'.*echo, list_dir"):
        reg["rm"]
    with pytest.raises(ValueError, match="'echo' is already registered"):
        reg.register(BUILTIN_TOOLS[0])


def test_every_builtin_tool_has_input_and_output_schemas(runtime: Runtime) -> None:
    for tool in BUILTIN_TOOLS:
        assert tool.schema_in in runtime.schemas and tool.schema_out in runtime.schemas
        assert tool.schema_in != tool.schema_out and tool.description


# -- builtin tools -----------------------------------------------------------------------------


@pytest.fixture
def ctx(workspace: Path) -> ToolContext:
    return ToolContext(workspace, "s1")


def claim(expected: str) -> dict[str, str]:
    return {"who": "worker", "why": "test", "expected_hash": expected, "schema_version": "v1"}


def test_read_file_reports_content_and_hash_with_a_relative_path(ctx: ToolContext) -> None:
    (ctx.workspace / "docs").mkdir()
    (ctx.workspace / "docs" / "a.md").write_text("héllo\n", encoding="utf-8")
    got = read_file({"path": "docs/a.md"}, ctx)
    assert got == Ok({"path": "docs/a.md", "content": "héllo\n", "sha256": sha256_of("héllo\n"),
                      "exists": True})


def test_a_missing_file_reads_as_empty_so_a_first_write_can_claim_it(ctx: ToolContext) -> None:
    got = read_file({"path": "notes/new.md"}, ctx)
    assert got.value == {"path": "notes/new.md", "content": "", "sha256": sha256_of(""),
                         "exists": False}
    written = write_file({"path": "notes/new.md", "content": "x\n",
                          "claim": claim(got.value["sha256"])}, ctx)
    assert isinstance(written, Ok) and (ctx.workspace / "notes" / "new.md").read_text() == "x\n"


def test_read_file_refuses_non_text_and_directories(ctx: ToolContext) -> None:
    (ctx.workspace / "blob.bin").write_bytes(b"\xff\xfe\x00")
    for path in ("blob.bin", "skills"):
        got = read_file({"path": path}, ctx)
        assert isinstance(got, Err) and got.error.code == ErrorCode.TOOL_ERROR


def test_write_file_is_a_protected_write(ctx: ToolContext) -> None:
    target = ctx.workspace / "notes" / "notes.md"
    first = write_file({"path": "notes/notes.md", "content": "one\n", "claim": claim("")}, ctx)
    assert first == Ok({"path": "notes/notes.md", "sha256": sha256_of("one\n"), "bytes": 4})
    blind = write_file({"path": "notes/notes.md", "content": "clobber\n", "claim": claim("")}, ctx)
    assert isinstance(blind, Err) and blind.error.code == ErrorCode.WRITE_CONFLICT
    stale = write_file({"path": "notes/notes.md", "content": "two\n",
                        "claim": claim(sha256_of("zero\n"))}, ctx)
    assert isinstance(stale, Err) and stale.error.code == ErrorCode.WRITE_CONFLICT
    assert target.read_text() == "one\n"
    fresh = write_file({"path": "notes/notes.md", "content": "one\ntwo\n",
                        "claim": claim(sha256_of("one\n"))}, ctx)
    assert isinstance(fresh, Ok) and target.read_text() == "one\ntwo\n"
    assert sorted(p.name for p in (ctx.workspace / "notes").glob("notes.md*")) == ["notes.md"]  # no temp left


def test_list_dir_lists_visible_entries_sorted(ctx: ToolContext) -> None:
    (ctx.workspace / ".hidden").write_text("x")
    got = list_dir({"path": "."}, ctx)
    names = [e["name"] for e in got.value["entries"]]
    assert names == sorted(names) and ".hidden" not in names
    assert {"agentos.yaml", "schemas", "skills"} <= set(names)
    assert got.value["path"] == "."


def test_append_note_skill_writes_through_the_protected_write(workspace: Path,
                                                              run_request: RunRequest) -> None:
    first = run_request(NOTE_PROMPT)
    second = run_request('remember "eggs"')
    assert first.ok and second.ok
    assert (workspace / "notes" / "notes.md").read_text() == "- buy milk\n- eggs\n"
    assert second.invoked() == ["read_file", "write_file"]
    write = second.of("tool.invoke")[1].payload["args"]
    assert write["claim"]["expected_hash"] == sha256_of("- buy milk\n")

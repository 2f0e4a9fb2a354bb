"""Every row of the spec's Fail-closed table, reproduced with the scripted provider's fault
presets, through the public API and through the CLI; each leaves its event in the log.

Spec rows: unknown tool -> TOOL_NOT_FOUND; tool outside the selected skill -> TOOL_NOT_ALLOWED;
invalid role JSON -> MALFORMED_AGENT_MESSAGE; missing schema id -> invariant violation or
schema error; hook timeout/exception -> deny; stale file hash -> WRITE_CONFLICT; provider
retry exhausted -> PROVIDER_ERROR; reviewer verdict fail -> rework or human escalation.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from agentos_kernel import ContractError, Err, ErrorCode, Runtime, SchemaRegistry
from agentos_kernel.store.events import read_log

from .helpers import CANONICAL, NOTE_PROMPT, Cli, Run, RunRequest


def _domain_error(code: str) -> Callable[[Run], None]:
    def check(run: Run) -> None:
        assert code in run.error_codes(), f"no domain.error {code} in {run.error_codes()}"
    return check


def _never_invoked(tool: str) -> Callable[[Run], None]:
    def check(run: Run) -> None:
        assert tool not in run.invoked()
    return check


def _hook_denied(hook: str, cause: str | None) -> Callable[[Run], None]:
    def check(run: Run) -> None:
        denies = [h for h in run.hooks(hook) if h["decision"] == "deny"]
        assert denies, f"no {hook} deny in the log"
        assert all(h.get("cause") == cause for h in denies), denies
    return check


def _schema_violation(schema_id: str) -> Callable[[Run], None]:
    def check(run: Run) -> None:
        assert schema_id in [e.payload["schema_id"] for e in run.of("schema.violation")]
    return check


def _llm_error(run: Run) -> None:
    errors = run.of("llm.error")
    assert errors and all(e.payload["code"] == ErrorCode.PROVIDER_ERROR for e in errors)
    requests = {e.id for e in run.of("llm.request")}
    assert all(e.parent_id in requests for e in errors)


def _escalated(run: Run) -> None:
    snap = run.rt.replay(run.session_id)
    assert run.of("human.escalation")
    assert snap.escalated and snap.rework_count == run.rt.profile.max_rework
    verdicts = [e.payload["verdict"] for e in run.of("review.result")]
    assert verdicts == ["fail"] * (run.rt.profile.max_rework + 1)


def _reworked_then_ok(run: Run) -> None:
    assert run.rt.replay(run.session_id).rework_count == 1
    assert [e.payload["verdict"] for e in run.of("review.result")] == ["fail", "pass"]
    assert not run.of("human.escalation")


def _no_tool_reached_pre_tool_use(run: Run) -> None:
    # `rm` is not registered: dispatch stops at step 1 (registry), before step 4 (the
    # PreToolUse denylist), so the denylist hook never even sees it.
    assert not run.hooks("PreToolUse")


def _nothing_written(run: Run) -> None:
    results = [e.payload for e in run.of("tool.result") if e.payload["name"] == "write_file"]
    assert results and all(r["ok"] is False and r["error"]["code"] == ErrorCode.WRITE_CONFLICT
                           for r in results)
    assert not (run.rt.workspace.root / "notes" / "notes.md").exists()


def _prompt_never_reached_a_model(run: Run) -> None:
    assert not run.of("llm.request") and not run.of("skill.invoke")


def _retried_inside_the_adapter(run: Run) -> None:
    assert run.of("llm.response")[0].payload["attempts"] == 3
    assert not run.of("llm.error")


@dataclass(frozen=True)
class Row:
    preset: str
    final: str | None
    """The code of the run's Err, when the row pins it."""
    checks: tuple[Callable[[Run], None], ...]
    prompt: str = CANONICAL
    ok: bool = False
    """The run ends ok (the fault heals inside the runtime)."""


ROWS = [
    # unknown tool / out-of-scope tool: the worker reports partial progress, the reviewer
    # rejects it, and the loop ends in human escalation; the gate's code is in the log.
    Row("unknown_tool", None, (_domain_error(ErrorCode.TOOL_NOT_FOUND), _never_invoked("no_such_tool"))),
    Row("tool_out_of_scope", None,
        (_domain_error(ErrorCode.TOOL_NOT_ALLOWED), _never_invoked("write_file"))),
    Row("dangerous_tool", None,
        (_domain_error(ErrorCode.TOOL_NOT_FOUND), _never_invoked("rm"), _no_tool_reached_pre_tool_use)),
    Row("bad_tool_args", None, (_schema_violation("tool_echo_in_v1"), _never_invoked("echo"))),
    Row("malformed_lead", ErrorCode.MALFORMED_AGENT_MESSAGE,
        (_domain_error(ErrorCode.MALFORMED_AGENT_MESSAGE),)),
    Row("malformed_planner", ErrorCode.MALFORMED_AGENT_MESSAGE,
        (_domain_error(ErrorCode.MALFORMED_AGENT_MESSAGE),)),
    Row("malformed_worker", ErrorCode.MALFORMED_AGENT_MESSAGE,
        (_domain_error(ErrorCode.MALFORMED_AGENT_MESSAGE),)),
    Row("malformed_reviewer", ErrorCode.MALFORMED_AGENT_MESSAGE,
        (_domain_error(ErrorCode.MALFORMED_AGENT_MESSAGE),)),
    Row("schema_violation", ErrorCode.SCHEMA_INVALID, (_schema_violation("plan_v1"),)),
    Row("hook_timeout", None, (_hook_denied("PreToolUse", "timeout"),
                               _domain_error(ErrorCode.GATE_DENIED), _never_invoked("echo"))),
    Row("hook_error", None, (_hook_denied("PreToolUse", "exception"),
                             _domain_error(ErrorCode.GATE_DENIED), _never_invoked("echo"))),
    Row("hook_deny", None, (_hook_denied("PreToolUse", None), _domain_error(ErrorCode.GATE_DENIED),
                            _never_invoked("echo"))),
    Row("prompt_denied", ErrorCode.PROMPT_DENIED,
        (_hook_denied("UserPromptSubmit", None), _domain_error(ErrorCode.PROMPT_DENIED),
         _prompt_never_reached_a_model)),
    Row("write_conflict", None, (_domain_error(ErrorCode.WRITE_CONFLICT), _nothing_written), NOTE_PROMPT),
    Row("provider_down", ErrorCode.PROVIDER_ERROR, (_llm_error, _domain_error(ErrorCode.PROVIDER_ERROR))),
    Row("provider_timeout", ErrorCode.PROVIDER_ERROR, (_llm_error,)),
    Row("provider_flaky", None, (_retried_inside_the_adapter,), ok=True),
    Row("reviewer_fail", ErrorCode.HUMAN_ESCALATION,
        (_escalated, _domain_error(ErrorCode.HUMAN_ESCALATION))),
    Row("reviewer_fail_once", None, (_reworked_then_ok,), ok=True),
]


def _check_common(run: Run, row: Row) -> None:
    close = run.events[-1]
    assert close.type == "session.close"
    assert close.payload["ok"] is row.ok
    if row.final:
        assert close.payload["reason"].startswith(row.final)
    for check in row.checks:
        check(run)


@pytest.mark.parametrize("row", ROWS, ids=[r.preset for r in ROWS])
def test_fail_closed_through_the_api(run_request: RunRequest, row: Row) -> None:
    run = run_request(row.prompt, faults=row.preset)
    if row.ok:
        assert run.ok, run.result
    else:
        assert isinstance(run.result, Err)
        assert run.result.error.session_id == run.session_id
        if row.final:
            assert run.code == row.final
    _check_common(run, row)


@pytest.mark.parametrize("row", ROWS, ids=[r.preset for r in ROWS])
def test_fail_closed_through_the_cli(workspace: Path, cli: Cli, row: Row) -> None:
    code, out, err = cli("--workspace", workspace, "run", row.prompt, "--faults", row.preset)
    assert code == (0 if row.ok else 1), out + err
    assert err == ""
    if row.ok:
        assert "\nok: " in out and "NOT ok" not in out
    else:
        assert f"NOT ok: {row.final or ''}" in out
    rt = Runtime.from_workspace(workspace)
    (sid,) = rt.store.sessions()
    assert f"session {sid}: log" in out
    run = Run(rt, None, sid, list(read_log(rt.store.path(sid))))
    _check_common(run, row)


def test_reviewer_fail_honours_each_profiles_max_rework(run_request: RunRequest) -> None:
    run = run_request(faults="reviewer_fail", profile="scripted-alt")
    assert run.rt.profile.max_rework == 1
    _escalated(run)


def test_hook_timeout_abandons_the_sleeping_handler(run_request: RunRequest) -> None:
    """The run returns while the handler still sleeps: it was abandoned, not waited for."""
    def sleeping() -> set[threading.Thread]:
        return {t for t in threading.enumerate() if t.name == "agentos-hook" and t.is_alive()}

    before = sleeping()
    run = run_request(faults="hook_timeout")
    fired = [h for h in run.hooks("PreToolUse") if h.get("cause") == "timeout"]
    assert fired
    assert len(sleeping() - before) >= len(fired)
    assert run.events[-1].type == "session.close"


# -- missing schema id: a schema error, never a pass ------------------------------------------


def test_missing_schema_id_is_schema_not_found(runtime: Runtime) -> None:
    got = runtime.schemas.validate({"anything": 1}, "no_such_schema_v1")
    assert isinstance(got, Err) and got.error.code == ErrorCode.SCHEMA_NOT_FOUND
    assert "no_such_schema_v1" in got.error.message
    with pytest.raises(KeyError, match="no_such_schema_v1"):
        runtime.schemas.violations({}, "no_such_schema_v1")


def test_missing_schema_at_a_boundary_is_logged_as_a_violation(runtime: Runtime) -> None:
    session = runtime.open_session("s1")
    got = session.log.check({"x": 1}, "no_such_schema_v1", where="test boundary", actor="test")
    session.log.close()
    assert isinstance(got, Err) and got.error.code == ErrorCode.SCHEMA_NOT_FOUND
    (violation,) = [e for e in runtime.events("s1") if e.type == "schema.violation"]
    assert violation.payload["schema_id"] == "no_such_schema_v1"


@pytest.mark.parametrize("deleted, expected", [
    ("schemas/tools/tool_echo_in_v1.json",
     "schemas: tool_echo_in_v1: no schema 'tool_echo_in_v1' is loaded; tool 'echo' (schema_in) needs it"),
    ("schemas/tools/tool_echo_out_v1.json",
     "schemas: tool_echo_out_v1: no schema 'tool_echo_out_v1' is loaded; tool 'echo' (schema_out) needs it"),
    ("schemas/write_claim_v1.json",  # $ref'd by tool_write_file_in_v1
     "tool_write_file_in_v1.json: $ref: refers to 'write_claim_v1', which is not loaded"),
    ("schemas/skill_frontmatter_v1.json", "'skill_frontmatter_v1'"),  # every SKILL.md needs it
])
def test_workspace_missing_a_referenced_schema_does_not_load(workspace: Path, cli: Cli, deleted: str,
                                                              expected: str) -> None:
    (workspace / deleted).unlink()
    with pytest.raises(ContractError) as caught:
        Runtime.from_workspace(workspace)
    assert expected in str(caught.value)
    code, out, err = cli("--workspace", workspace, "run", CANONICAL)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and expected in err
    assert not (workspace / "sessions").exists()


def test_agent_naming_a_deleted_output_schema_does_not_load(workspace: Path) -> None:
    (workspace / "schemas" / "plan_v1.json").unlink()
    with pytest.raises(ContractError, match=r"no schema 'plan_v1' is loaded"):
        Runtime.from_workspace(workspace)


def test_agent_naming_an_unloaded_output_schema_names_the_agent_file(workspace: Path) -> None:
    planner = workspace / "agents" / "planner.md"
    planner.write_text(planner.read_text().replace("output_schema: plan_v1", "output_schema: plan_v9"))
    with pytest.raises(ContractError, match=r"agents/planner\.md: output_schema: no schema 'plan_v9'"):
        Runtime.from_workspace(workspace)


def test_schema_registry_never_passes_an_unknown_id(workspace: Path) -> None:
    reg = SchemaRegistry.load(workspace / "schemas")
    assert isinstance(reg.validate({}, "plan_v2"), Err)

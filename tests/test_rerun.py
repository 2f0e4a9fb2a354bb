"""Re-run with verification: recorded answers in, no side effects, the first divergence out."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentos_kernel import Err, Runtime
from agentos_kernel.errors import ErrorCode
from agentos_kernel.runs.rerun import RerunReport, rerun

from .helpers import CANONICAL, NOTE_PROMPT, RunRequest

CYCLE_PROMPT = "review the change in auth.py"


def _rerun(workspace: Path, sid: str) -> RerunReport:
    # A fresh runtime: contract edits made after the recording must be seen.
    result = rerun(Runtime.from_workspace(workspace), sid)
    assert not isinstance(result, Err), result
    return result.value


def test_canonical_request_reruns_identical(workspace: Path, run_request: RunRequest) -> None:
    run = run_request()
    report = _rerun(workspace, run.session_id)
    assert report.identical and report.first_divergence is None
    assert report.events_compared == len(run.events)
    assert report.rerun_session != run.session_id
    assert report.verdict() == f"rerun {report.rerun_session} matches {run.session_id} " \
                               f"({len(run.events)} events)"


@pytest.mark.parametrize("faults", ["malformed_worker", "reviewer_fail_once", "unknown_tool",
                                    "provider_flaky", "provider_down"])
def test_fault_injected_session_reruns_identical(workspace: Path, run_request: RunRequest,
                                                 faults: str) -> None:
    run = run_request(faults=faults)
    report = _rerun(workspace, run.session_id)
    assert report.identical, report.verdict()


def test_write_file_is_not_repeated(workspace: Path, run_request: RunRequest) -> None:
    run = run_request(NOTE_PROMPT)
    assert "write_file" in run.invoked()
    note = workspace / "notes" / "notes.md"
    before = (note.read_bytes(), note.stat().st_mtime_ns)
    report = _rerun(workspace, run.session_id)
    assert report.identical, report.verdict()
    assert (note.read_bytes(), note.stat().st_mtime_ns) == before


def _first_changed_request(workspace: Path, report: RerunReport, sid: str, role: str) -> None:
    d = report.first_divergence
    assert d is not None and not report.identical
    recorded = Runtime.from_workspace(workspace).events(sid)[d.index - 1]
    assert recorded.type == "llm.request" and recorded.payload["role"] == role
    assert d.path.startswith("payload.messages")
    new = Runtime.from_workspace(workspace).events(report.rerun_session)
    assert any(e.type == "llm.error" and "diverged at call" in e.payload["message"] for e in new)


def test_edited_agent_prompt_diverges_at_its_first_call(workspace: Path,
                                                        run_request: RunRequest) -> None:
    run = run_request()
    planner = workspace / "agents" / "planner.md"
    planner.write_text(planner.read_text() + "\nAlways plan one extra step.\n")
    report = _rerun(workspace, run.session_id)
    _first_changed_request(workspace, report, run.session_id, "planner")


def test_edited_skill_diverges_at_the_first_call_that_sees_it(workspace: Path,
                                                              run_request: RunRequest) -> None:
    run = run_request()
    skill = workspace / "skills" / "greet" / "SKILL.md"
    skill.write_text(skill.read_text() + "\nGreet warmly.\n")
    report = _rerun(workspace, run.session_id)
    d = report.first_divergence
    assert d is not None
    # the procedure reaches the roles that are told about the skill; the first of them diverges
    role = run.events[d.index - 1].payload.get("role")
    _first_changed_request(workspace, report, run.session_id, role)
    assert "Greet warmly." in str(d.new)


def test_tampered_llm_response_is_detected(workspace: Path, run_request: RunRequest) -> None:
    run = run_request()
    lines = [json.loads(line) for line in run.log_path.read_text().splitlines()]
    lead = next(e for e in lines if e["type"] == "llm.response" and e["payload"]["call_id"] == "c1")
    out = json.loads(lead["payload"]["text"])
    out["intent"] = "Do something else entirely"
    lead["payload"]["text"] = json.dumps(out)
    run.log_path.write_text("".join(json.dumps(e) + "\n" for e in lines))
    report = _rerun(workspace, run.session_id)
    d = report.first_divergence
    assert d is not None and d.path == "payload.intent"
    assert run.events[d.index - 1].type == "lead.directive"
    assert d.new == "Do something else entirely"
    # The edit also breaks the recorded log's hash chain, at the edited line.
    assert report.chain_broken_at == lead["seq"] and not report.verified
    assert f"hash chain breaks at event {lead['seq']}" in report.verdict()


def test_an_untouched_log_has_an_intact_chain(workspace: Path, run_request: RunRequest) -> None:
    report = _rerun(workspace, run_request().session_id)
    assert report.chain_broken_at is None and report.verified


def test_redacted_prompt_is_refused(workspace: Path, run_request: RunRequest) -> None:
    run = run_request("hello Ada, my key is sk-abcdefghijklmnopqrstuvwxyz")
    sessions = set(Runtime.from_workspace(workspace).store.sessions())
    result = rerun(Runtime.from_workspace(workspace), run.session_id)
    assert isinstance(result, Err) and result.error.code == ErrorCode.CONFIG_INVALID
    assert "redacted" in result.error.message
    assert set(Runtime.from_workspace(workspace).store.sessions()) == sessions  # nothing ran


def test_unknown_session_is_refused(runtime: Runtime) -> None:
    result = rerun(runtime, "s0099")
    assert isinstance(result, Err) and result.error.code == ErrorCode.UNKNOWN_ID


@pytest.mark.parametrize("mode", [None, "autofix"])
def test_l8_cycle_reruns_identical_without_writing(workspace: Path, mode: str | None) -> None:
    rt = Runtime.from_workspace(workspace)
    ran = rt.run_cycle("code-review", CYCLE_PROMPT, mode=mode)
    assert not isinstance(ran, Err) and ran.value.ok
    files = sorted(p for p in workspace.rglob("*") if "sessions" not in p.parts)
    report = _rerun(workspace, ran.value.session_id)
    assert report.identical, report.verdict()
    # the artifact path embeds the session id: a re-run that wrote would add a file
    assert sorted(p for p in workspace.rglob("*") if "sessions" not in p.parts) == files
    started = [e for e in Runtime.from_workspace(workspace).events(report.rerun_session)
               if e.type == "workflow.started"]
    assert started and started[0].payload["session_id"] == report.rerun_session


def test_cli_exit_codes(workspace: Path, cli) -> None:  # type: ignore[no-untyped-def]
    ws = ("--workspace", workspace)
    assert cli(*ws, "run", CANONICAL)[0] == 0
    code, out, _ = cli(*ws, "rerun", "s0001", "--verify")
    assert code == 0 and out.rstrip().endswith("rerun s0002 matches s0001 (32 events)")
    assert "llm.request" in out  # the new session's trace
    code, out, _ = cli(*ws, "rerun", "s0001", "--json")
    assert code == 0 and json.loads(out)["identical"] is True
    worker = workspace / "agents" / "worker.md"
    worker.write_text(worker.read_text() + "\nBe brief.\n")
    code, out, _ = cli(*ws, "rerun", "s0001", "--verify")
    assert code == 1 and "diverged at event 15: payload.messages" in out.splitlines()[-1]
    assert cli(*ws, "rerun", "s0001")[0] == 0  # without --verify a divergence is only reported
    code, _, err = cli(*ws, "rerun", "s0099", "--verify")
    assert code == 2 and "no session 's0099'" in err

"""The Stop hook per the spec (L6 "loop end or continuation", the Plan-Work-Review Loop's
`hooks.fire("Stop", {"session_id", "ok"})`): it fires at every terminal state of a pass
(DONE, ESCALATED, FAILED) with `ok` and the reason; deny ends the loop, allow runs the next
pass (told how the last one ended), bounded by max_iterations; a refusal of the profile and
a gate before any pass close the session without it. And every verb that reads logs still
works on the multi-pass logs this makes."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from agentos_kernel import Err, ErrorCode, HookDecision, HookHandler, Runtime
from agentos_kernel.labs.audit.log import audit_log
from agentos_kernel.providers.faults import load_fault_plan
from agentos_kernel.runs.diff import diff_events
from agentos_kernel.runs.fork import fork, fork_points
from agentos_kernel.runs.rerun import rerun
from agentos_kernel.schemas.registry import SchemaRegistry
from agentos_kernel.store.integrity import verify_session
from agentos_kernel.store.replay.fold import replay_path
from agentos_kernel.telemetry.otel_spans import spans_of

from .fault_kit import add_profile
from .helpers import CANONICAL, REPO, Run, RunRequest, finish

STOP_SCHEMA = SchemaRegistry.load(REPO / "schemas")


def _use_stop(workspace: Path, handler: str) -> None:
    """Swap agentos.yaml's Stop handler (stop_after_one) for another builtin one."""
    cfg = workspace / "agentos.yaml"
    text = cfg.read_text()
    assert "builtin:stop_after_one" in text
    cfg.write_text(text.replace("builtin:stop_after_one", f"builtin:{handler}"))


def _seen(rt: Runtime) -> list[dict[str, Any]]:
    """Register a Stop handler that records each input and allows (the next one decides)."""
    inputs: list[dict[str, Any]] = []

    def fn(data: Any) -> HookDecision:
        inputs.append({k: data[k] for k in data})
        return HookDecision("allow")
    rt.hooks.register("Stop", HookHandler("seen", fn, priority=1000))
    return inputs


def _run(workspace: Path, faults: str | None = None, prompt: str = CANONICAL
         ) -> tuple[Run, list[dict[str, Any]]]:
    rt = Runtime.from_workspace(workspace, faults=load_fault_plan(faults) if faults else None)
    inputs = _seen(rt)
    return finish(rt, rt.handle_user_request(prompt)), inputs


def _valid(data: dict[str, Any]) -> None:
    found = STOP_SCHEMA.violations(data, "hook_stop_v1")
    assert not found, f"the Stop input breaks hook_stop_v1: {found[0].path}: {found[0].message}"


# -- Stop fires at every terminal state of a pass --------------------------------------------------


def test_a_failed_review_fires_stop_with_ok_false_and_the_reason(workspace: Path) -> None:
    run, inputs = _run(workspace, "reviewer_fail")
    assert run.code == ErrorCode.HUMAN_ESCALATION
    [data] = inputs
    _valid(data)
    assert data["ok"] is False and data["state"] == "ESCALATED" and data["iteration"] == 1
    assert data["reason"].startswith("HUMAN_ESCALATION: review still failing after 2 rework(s)")
    assert data["feedback"] == "reviewer rejected the report (fault injection)"
    # in the log: the default handler's deny repeats it, parented on the ESCALATED transition
    stop = [e for e in run.of("hook.fired") if e.payload["hook"] == "Stop" and e.payload["handler"]
            == "stop_after_one"]
    assert len(stop) == 1
    assert stop[0].payload["decision"] == "deny"
    assert stop[0].payload["reason"].startswith(
        "loop reached terminal state (not ok: HUMAN_ESCALATION: review still failing")
    escalated = [e for e in run.of("agent.transition") if e.payload["to"] == "ESCALATED"]
    assert stop[0].parent_id == escalated[0].id
    assert run.types()[-5:] == ["domain.error", "hook.fired", "hook.fired", "skill.complete",
                               "session.close"]  # ours, then stop_after_one
    assert run.events[-1].payload["reason"].startswith("HUMAN_ESCALATION: ")


@pytest.mark.parametrize("faults,code", [("malformed_worker", ErrorCode.MALFORMED_AGENT_MESSAGE),
                                         ("schema_violation", ErrorCode.SCHEMA_INVALID),
                                         ("provider_down", ErrorCode.PROVIDER_ERROR)])
def test_a_failed_role_turn_fires_stop_with_state_failed(workspace: Path, faults: str,
                                                         code: str) -> None:
    run, inputs = _run(workspace, faults)
    assert run.code == code
    [data] = inputs
    _valid(data)
    assert (data["ok"], data["state"]) == (False, "FAILED")
    assert data["reason"].startswith(f"{code}: ") and "feedback" not in data
    failed = [e for e in run.of("agent.transition") if e.payload["to"] == "FAILED"]
    stop = run.hooks("Stop")
    assert [h["decision"] for h in stop] == ["allow", "deny"]  # ours, then stop_after_one
    assert run.of("hook.fired")[-1].parent_id == failed[0].id


def test_a_passing_review_fires_stop_with_ok_true_and_the_output(workspace: Path) -> None:
    run, inputs = _run(workspace)
    assert run.ok
    [data] = inputs
    _valid(data)
    assert data == {"session_id": run.session_id, "ok": True, "iteration": 1, "state": "DONE",
                    "reason": "review passed", "output": "Hello, Ada!"}
    assert run.of("hook.fired")[-1].parent_id is None  # the canonical trace's Stop, unchanged


def test_no_stop_when_no_pass_ran_or_the_profile_is_refused(runtime: Runtime,
                                                            run_request: RunRequest) -> None:
    assert run_request(faults="prompt_denied").hooks("Stop") == []
    # SELF_REVIEW: no further pass can change it, so the session closes without asking
    runtime.profile = replace(runtime.profile, agents={"reviewer": "worker"})
    inputs = _seen(runtime)
    run = finish(runtime, runtime.handle_user_request(CANONICAL))
    assert run.code == ErrorCode.SELF_REVIEW
    assert inputs == [] and run.hooks("Stop") == []


# -- allow continues, bounded; deny ends ----------------------------------------------------------


def test_stop_allowing_after_a_failed_pass_gets_a_second_pass(workspace: Path) -> None:
    _use_stop(workspace, "stop_when_ok")
    run, inputs = _run(workspace, "reviewer_fail_pass")
    assert run.ok, run.result
    assert [(d["iteration"], d["ok"], d["state"]) for d in inputs] == [
        (1, False, "ESCALATED"), (2, True, "DONE")]
    assert [h["decision"] for h in run.hooks("Stop") if h["handler"] == "stop_when_ok"] == [
        "allow", "deny"]
    starts = [e for e in run.of("agent.transition") if e.payload["to"] == "LEAD"]
    assert [e.payload["from"] for e in starts] == ["INTAKE", "INTAKE"]
    # the second pass's lead is told how the first ended, with the review's feedback
    lead_requests = [e for e in run.of("llm.request") if e.payload["role"] == "lead"]
    told = lead_requests[1].payload["messages"][1]["content"]
    assert '"previous": {"feedback": "reviewer rejected the report (fault injection)"' in told
    assert '"ok": false, "reason": "HUMAN_ESCALATION: ' in told and '"state": "ESCALATED"' in told
    assert run.events[-1].payload == {"ok": True, "output": "Hello, Ada!"}


def test_continuation_after_failed_passes_is_bounded_by_max_iterations(workspace: Path) -> None:
    _use_stop(workspace, "stop_when_ok")
    run, inputs = _run(workspace, "reviewer_fail")
    assert run.code == ErrorCode.HUMAN_ESCALATION
    assert [d["iteration"] for d in inputs] == [1, 2, 3] == list(
        range(1, run.rt.profile.max_iterations + 1))
    assert len(run.of("human.escalation")) == 3
    reason = run.events[-1].payload["reason"]
    assert reason.startswith("HUMAN_ESCALATION: ") and reason.endswith(
        "; stopped at max_iterations (3)")


def test_a_deny_after_a_failed_pass_ends_the_loop(workspace: Path) -> None:
    run, inputs = _run(workspace, "reviewer_fail_pass")  # stop_after_one: deny
    assert run.code == ErrorCode.HUMAN_ESCALATION and len(inputs) == 1
    assert [e.payload["to"] for e in run.of("agent.transition")].count("LEAD") == 1


def test_stop_when_ok_decides_on_ok() -> None:
    from agentos_kernel.hooks import builtin
    assert builtin.stop_when_ok({"ok": False, "iteration": 2}).decision == "allow"
    assert builtin.stop_when_ok({"ok": True, "iteration": 2}).decision == "deny"
    assert builtin.stop_after_one({"ok": False, "reason": "X: y"}).reason == \
        "loop reached terminal state (not ok: X: y)"


# -- the verbs that read logs work on such logs ---------------------------------------------------


def _multi_pass(workspace: Path, faults: str) -> Run:
    _use_stop(workspace, "stop_when_ok")
    rt = Runtime.from_workspace(workspace, faults=load_fault_plan(faults))
    return finish(rt, rt.handle_user_request(CANONICAL))


@pytest.mark.parametrize("faults", ["reviewer_fail_pass", "reviewer_fail", "malformed_worker"])
def test_multi_pass_logs_verify_audit_replay_rerun_and_export(workspace: Path,
                                                              faults: str) -> None:
    run = _multi_pass(workspace, faults)
    report = verify_session(run.rt.store, run.session_id)
    assert report.ok, report.verdict()
    audit = audit_log(run.log_path)
    assert audit.gaps == (), audit.gaps
    snap = replay_path(run.log_path)
    assert snap.closed and snap.ok is run.ok
    assert snap.state == ("DONE" if run.ok else "ESCALATED" if faults == "reviewer_fail"
                          else "FAILED")
    again = rerun(Runtime.from_workspace(workspace, faults=load_fault_plan(faults)),
                  run.session_id)
    assert not isinstance(again, Err), again
    assert again.value.identical, again.value.verdict()
    spans = spans_of(run.events)
    stops = [s for s in spans if s.name == "hook Stop"]
    assert len(stops) == len(run.hooks("Stop")) and all(s.error is None for s in stops)
    root = next(s for s in spans if s.parent_span_id is None)
    assert (root.error is None) is run.ok


def test_the_audit_finds_a_pass_after_a_stop_deny(workspace: Path) -> None:
    run = _multi_pass(workspace, "reviewer_fail_pass")
    lines = run.log_path.read_text().splitlines()
    first_allow = next(i for i, e in enumerate(run.events) if e.type == "hook.fired"
                       and e.payload["hook"] == "Stop")
    tampered = run.log_path.parent / "tampered.events.jsonl"
    tampered.write_text("\n".join(lines).replace('"decision":"allow","handler":"stop_when_ok"',
                                                 '"decision":"deny","handler":"stop_when_ok"', 1)
                        + "\n")
    assert '"decision":"deny","handler":"stop_when_ok"' in tampered.read_text().splitlines()[
        first_allow]
    gaps = [g for g in audit_log(tampered).gaps if g.check == "hook"]
    assert gaps and "follows the Stop deny" in gaps[0].what


def test_a_failed_pass_log_forks_and_diffs(workspace: Path) -> None:
    run = _multi_pass(workspace, "reviewer_fail")  # three escalated passes, no Stop deny
    points = fork_points(run.events)
    starts = [i for i, e in enumerate(run.events, 1) if e.type == "agent.transition"
              and e.payload["to"] == "LEAD"]
    assert len(starts) == 3
    # every pass has resume points; a later pass's LEAD is not one (what its lead is told
    # about the last pass is not in the log before its turn)
    assert [p.stage for p in points if p.at < starts[1]][:1] == ["LEAD"]
    assert [p.stage for p in points if p.at > starts[1]].count("LEAD") == 0
    assert any(starts[1] < p.at < starts[2] for p in points)
    at = next(p.at for p in points if starts[1] < p.at < starts[2] and p.stage == "REVIEW")
    rt = Runtime.from_workspace(workspace)  # no faults: this review passes
    inputs = _seen(rt)
    forked = fork(rt, run.session_id, at)
    assert not isinstance(forked, Err), forked
    assert forked.value.output == "Hello, Ada!"
    assert [(d["iteration"], d["ok"]) for d in inputs] == [(2, True)]  # pass 2, numbered so
    child = rt.events(forked.value.session_id)
    diff = diff_events(run.events, child, (run.session_id, forked.value.session_id))
    assert diff.first is not None and diff.first.index == at + 1  # session.forked
    live = [e.payload["role"] for e in child[at:] if e.type == "llm.request"]
    assert live[:1] == ["reviewer"]  # the report under review is pass 2's, from the log
    assert audit_log(rt.store.path(forked.value.session_id)).gaps == ()
    replayer = Runtime.from_workspace(workspace)
    _seen(replayer)  # the same hooks as the fork ran with
    again = rerun(replayer, forked.value.session_id)
    assert not isinstance(again, Err) and again.value.identical, again


def test_a_pass_past_the_profiles_bound_is_not_resumed(workspace: Path) -> None:
    run = _multi_pass(workspace, "reviewer_fail")
    third = [i for i, e in enumerate(run.events, 1) if e.type == "agent.transition"
             and e.payload["to"] == "LEAD"][2]
    at = next(p.at for p in fork_points(run.events) if p.at > third)
    add_profile(workspace, "two", max_iterations=2)
    refused = fork(Runtime.from_workspace(workspace, profile="two"), run.session_id, at)
    assert isinstance(refused, Err) and refused.error.code == ErrorCode.CONFIG_INVALID
    assert "resumes pass 3, past this profile's max_iterations (2)" in refused.error.message


def test_no_resume_point_after_a_stop_deny(workspace: Path, run_request: RunRequest) -> None:
    run = run_request(faults="reviewer_fail")
    deny = next(i for i, e in enumerate(run.events, 1) if e.type == "hook.fired"
                and e.payload["hook"] == "Stop")
    # a later role's turn after the deny (a log edited by hand) is not a resume point
    after = [*run.events[:deny], run.events[24]]  # event 25: agent.transition into REVIEW
    assert after[-1].type == "agent.transition" and after[-1].payload["to"] == "REVIEW"
    assert all(p.at < deny for p in fork_points(after))


def test_a_resumed_later_pass_hands_on_only_what_that_pass_made(workspace: Path) -> None:
    run = _multi_pass(workspace, "reviewer_fail")
    second = [i for i, e in enumerate(run.events, 1) if e.type == "agent.transition"
              and e.payload["to"] == "LEAD"][1]
    work = next(p for p in fork_points(run.events) if p.at > second and p.stage == "WORK")
    assert work.attempt == 1
    forked = fork(Runtime.from_workspace(workspace), run.session_id, work.at)
    assert not isinstance(forked, Err), forked
    child = Runtime.from_workspace(workspace).events(forked.value.session_id)
    worker = next(e for e in child[work.at:] if e.type == "llm.request")
    original = next(e for e in run.events[work.at:] if e.type == "llm.request")
    # the first attempt of pass 2 had no feedback yet (pass 1's is the lead's `previous`)
    assert worker.payload["messages"] == original.payload["messages"]
    assert '"feedback": null' in worker.payload["messages"][1]["content"]

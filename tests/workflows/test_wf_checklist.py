"""The spec's "L8 Workflow-Plane Checklist", one test per item, in the spec's order.
(The detailed cases live in the other test_wf_* files; each test here checks its item
end to end on the reference workspace.)"""

from __future__ import annotations

from pathlib import Path

import pytest

from agentos_kernel import ContractError, Err, ErrorCode, Runtime, SchemaRegistry
from agentos_kernel.hooks import HookDecision, HookHandler

from .conftest import RunCycle, write
from .test_wf_new_cycle import CYCLE, PERSONA, PHASE, POLICY
from .test_wf_registry import edit


def test_1_registry_loads_the_five_axes_from_markdown_fail_closed(ws: Path) -> None:
    """WorkflowRegistry: cycle / phase / policy / persona / artifact Markdown SSOT, fail-closed."""
    reg = Runtime.from_workspace(ws).workflows
    assert all((reg.cycles, reg.phases, reg.policies, reg.personas, reg.artifacts))
    assert all(c.file.startswith("workflows/cycles/") for c in reg.cycles.values())
    assert all(p.file.startswith("workflows/personas/") for p in reg.personas.values())
    edit(ws / "workflows/personas/reviewer/test-reviewer.md", "output_schema:", "output_schemas:")
    with pytest.raises(ContractError, match=r"workflows/personas/reviewer/test-reviewer\.md"):
        _ = Runtime.from_workspace(ws).workflows


def test_2_workflow_and_artifact_schemas_are_registered(ws: Path) -> None:
    """cycle_v1, phase_v1, policy_v1 and the per-cycle artifact schemas are registered."""
    schemas = SchemaRegistry.load(ws / "schemas")
    for sid in ("cycle_v1", "phase_v1", "policy_v1", "finding_v1", "review_aggregate_v1", "brainstorm_v1",
                "plan_v1", "solution_v1", "learning_v1", "pulse_report_v1", "persona_findings_v1"):
        assert sid in schemas, sid
    reg = Runtime.from_workspace(ws).workflows
    for cycle in reg.cycles.values():
        for phase_id in cycle.phases:
            phase = reg.phases[phase_id]
            if phase.artifact:
                assert reg.artifacts[phase.artifact].schema in schemas


def test_3_workflow_events_are_logged(run_cycle: RunCycle) -> None:
    """workflow.started, phase_advanced, policy_gated, completed or aborted."""
    done = run_cycle("code-review").types()
    aborted = run_cycle("code-review", faults="p0_manual").types()
    for types in (done, aborted):
        assert types.count("workflow.started") == 1
        assert types.count("workflow.phase_advanced") >= 1 and types.count("workflow.policy_gated") >= 1
    assert done.count("workflow.completed") == 1 and "workflow.aborted" not in done
    assert aborted.count("workflow.aborted") == 1 and "workflow.completed" not in aborted


def test_4_hooks_gate_start_advance_and_complete(ws: Path) -> None:
    """WorkflowStart, PhaseAdvance and WorkflowComplete are integrated hooks."""
    rt = Runtime.from_workspace(ws)
    seen: list[str] = []
    for hook in ("WorkflowStart", "PhaseAdvance", "WorkflowComplete"):
        rt.hooks.register(hook, HookHandler(f"watch-{hook}", lambda d, h=hook: (
            seen.append(h), HookDecision("allow"))[1]))
    c = rt.run_cycle("code-review", "review auth.py").value
    assert seen == ["WorkflowStart", "PhaseAdvance", "WorkflowComplete"] and c.verdict == "done"
    decided = [(e.payload["hook"], e.payload["decision"]) for e in rt.events(c.session_id)
               if e.type == "hook.fired" and e.payload["handler"].startswith("watch-")]
    assert decided == [(h, "allow") for h in seen]
    rt.hooks.register("PhaseAdvance", HookHandler("no", lambda d: HookDecision("deny", "frozen"), priority=9))
    assert rt.run_cycle("code-review", "review auth.py").value.verdict == "abort"


def test_5_replay_restores_cycle_phase_verdict_and_visited(run_cycle: RunCycle) -> None:
    run = run_cycle("code-review", faults="p0_finding_once")
    w = run.rt.replay(run.result.session_id).workflow
    assert (w["cycle_id"], w["phase"], w["verdict"], w["visited"]) == \
        ("code-review", "report", "done", ["review", "fix", "review", "report"])


def test_6_new_cycle_phase_policy_persona_by_markdown_only(ws: Path, run_cycle: RunCycle) -> None:
    for rel, text in (("cycles/docs-review.md", CYCLE), ("phases/proofread.md", PHASE),
                      ("policies/docs-gate.md", POLICY), ("personas/editor/docs-editor.md", PERSONA)):
        write(ws / "workflows" / rel, text)
    assert run_cycle("docs-review", "proofread README.md").result.verdict == "done"


def test_7_unknown_ids_are_denied(ws: Path) -> None:
    """Unknown cycle / phase / policy / persona ids are denied (allow-list only)."""
    rt = Runtime.from_workspace(ws)
    got = rt.run_cycle("nope", "x")
    assert isinstance(got, Err) and got.error.code == ErrorCode.UNKNOWN_ID
    for rel, old, new, what in (
        ("phases/review.md", "next: report", "next: nope", "unknown phase 'nope'"),
        ("cycles/code-review.md", "severity-route]", "nope]", "unknown policy 'nope'"),
        ("phases/report.md", "agents_invoked: [reporter]", "agents_invoked: [nope]",
         "unknown persona 'nope'"),
    ):
        path = ws / "workflows" / rel
        text = path.read_text(encoding="utf-8")
        edit(path, old, new)
        with pytest.raises(ContractError) as exc:
            _ = Runtime.from_workspace(ws).workflows
        assert any(what in p.message for p in exc.value.problems), what
        path.write_text(text, encoding="utf-8")

"""The engine: the spec's execution flow on the scripted provider — each shipped cycle
driven to done, halted and abort by fault plans; audit events; hooks fail closed; modes
change what is written, not what is decided; personas run through L3 only."""

from __future__ import annotations

import ast
from collections import Counter
from pathlib import Path

import pytest

from agentos_kernel import SchemaRegistry
from agentos_kernel.hooks import HookDecision, HookHandler
from agentos_kernel.skills import frontmatter as fm
from agentos_kernel.workflows.fanout import slug

from .conftest import CycleRun, RunCycle
from .test_wf_registry import edit

BUGFIX = "fix the login bug in auth.py"
CASES = [
    # (cycle, prompt, faults, verdict, visited)
    ("code-review", None, None, "done", ["review", "report"]),
    ("code-review", None, "p0_finding_once", "done", ["review", "fix", "review", "report"]),
    ("code-review", None, "p0_finding", "halted", ["review", "fix", "review", "fix", "review"]),
    ("code-review", None, "p0_manual", "abort", ["review", "fix"]),
    ("bugfix", BUGFIX, None, "done", ["brainstorm", "plan", "work", "verify", "learn"]),
    ("bugfix", BUGFIX, "p0_finding", "halted",
     ["brainstorm", "plan", "work", "verify", "work", "verify", "work"]),
    ("bugfix", BUGFIX, "p0_manual", "abort", ["brainstorm", "plan", "work", "verify", "work"]),
    ("ralph-loop", "make the auth tests pass", None, "done", ["iterate"] * 3),
    ("ralph-loop", "make the auth tests pass", "grade_regression", "halted", ["iterate"] * 3),
    ("ralph-loop", "make the auth tests pass", "grade_stuck", "halted", ["iterate"] * 6),
    ("ralph-loop", "make the auth tests pass", "grade_zero", "abort", ["iterate"] * 2),
]


@pytest.mark.parametrize(("cycle", "prompt", "faults", "verdict", "visited"), CASES,
                         ids=[f"{c[0]}-{c[2] or 'default'}" for c in CASES])
def test_shipped_cycles_reach_each_verdict(run_cycle: RunCycle, cycle: str, prompt: str | None,
                                           faults: str | None, verdict: str, visited: list[str]) -> None:
    run = run_cycle(cycle, prompt or "review the change in auth.py", faults=faults)
    assert (run.result.verdict, list(run.result.visited)) == (verdict, visited), run.result.reason
    assert_audit(run)


def assert_audit(run: CycleRun) -> None:
    """The spec's Audit Completeness for an L8 session, checked against the log."""
    types = run.types()
    wf = [t for t in types if t.startswith("workflow.")]
    assert wf[0] == "workflow.started" and types[-1] == "session.close"
    ends = [t for t in wf if t in ("workflow.completed", "workflow.aborted")]
    assert ends == ["workflow.aborted" if run.result.verdict == "abort" else "workflow.completed"]
    assert wf[-1] == ends[0]
    # one phase_advanced per transition, each after its PhaseAdvance hook decision
    advanced = run.of("workflow.phase_advanced")
    assert [a["to_phase"] for a in advanced] == list(run.result.visited[1:])
    hooks = [e.payload["hook"] for e in run.events if e.type == "hook.fired"]
    assert hooks.count("PhaseAdvance") == len(advanced)
    assert hooks.count("WorkflowStart") == 1 and hooks.count("WorkflowComplete") == 1
    # every LLM request has its response (or its error); every tool invoke its result
    assert types.count("llm.request") == types.count("llm.response") + types.count("llm.error")
    assert types.count("tool.invoke") == types.count("tool.result")
    # one policy_gated per decision: each persona call, each write, each finding x policy, each loop step
    assert types.count("workflow.policy_gated") == expected_decisions(run)
    close = run.of("session.close")[0]
    assert close["ok"] is (run.result.verdict == "done")


def expected_decisions(run: CycleRun) -> int:
    reg = run.rt.workflows
    cycle = reg.cycles[run.result.cycle_id]
    kinds = Counter(reg.policies[p].kind for p in cycle.policies)
    invokes = sum(1 for r in run.of("llm.request") if len(r["messages"]) == 2)  # first turn of each call
    writes = sum(1 for g in run.of("workflow.policy_gated") if g["subject"].startswith("write "))
    findings = sum(len(o["output"]["findings"]) for o in run.of("role.output")
                   if o["schema_id"] == "persona_findings_v1")
    steps = sum(1 for p in run.of("workflow.phase_advanced")) + (1 if run.result.verdict == "done" else 0)
    loop_steps = steps if kinds["loop-halt"] else 0
    assert writes % max(1, kinds["role-permissions"] + kinds["mode-dispatch"]) == 0
    return (invokes * kinds["role-permissions"] + writes + loop_steps * kinds["loop-halt"]
            + findings * (kinds["confidence-gating"] + kinds["severity-routing"]))


def test_fan_out_runs_three_reviewers_through_l3_and_fans_in(run_cycle: RunCycle) -> None:
    run = run_cycle("code-review")
    outputs = [(e.payload["schema_id"], e.actor) for e in run.events if e.type == "role.output"]
    assert outputs[:3] == [("persona_findings_v1", "security-reviewer"),
                           ("persona_findings_v1", "correctness-reviewer"),
                           ("persona_findings_v1", "test-reviewer")]
    roles = [e.payload["role"] for e in run.events if e.type == "llm.request"]
    assert roles[:3] == ["reviewer"] * 3
    gated = run.of("workflow.policy_gated")
    shared = [g for g in gated
              if g["policy_id"] == "severity-route" and g.get("fingerprint", "").startswith("shared-")]
    assert {g["decision"] for g in shared} == {"gated_auto", "manual"}  # reviewers disagree ...
    report = next(o["output"] for o in run.of("role.output") if o["schema_id"] == "pulse_report_v1")
    assert report["counts"]["P0"] == 0
    policy_order = [g["policy_id"] for g in gated if g["subject"].startswith("finding ")]
    assert policy_order == sorted(policy_order, key=["confidence-gate", "severity-route"].index)


def test_conservative_merge_is_what_the_aggregate_carries(run_cycle: RunCycle) -> None:
    run = run_cycle("code-review", faults="p0_finding_once")
    fixer = next(o["output"] for o in run.of("role.output") if o["schema_id"] == "solution_v1")
    requests = [e.payload for e in run.events if e.type == "llm.request" and e.payload["role"] == "worker"]
    import json

    agg = json.loads(requests[0]["messages"][1]["content"])["context"]["review_aggregate"]
    shared = next(f for f in agg["findings"] if f["fingerprint"].startswith("shared-"))
    assert shared["route"] == "manual" and len(shared["reviewers"]) == 3  # ... the conservative one wins
    injected = next(f for f in agg["findings"] if f["severity"] == "P0")
    assert injected["route"] == "gated_auto" and agg["p0_unresolved"] == 1
    assert injected["fingerprint"] in fixer["fixed"] and shared["fingerprint"] in fixer["deferred"]


def test_policy_without_default_denies_in_a_run(ws: Path, run_cycle: RunCycle) -> None:
    """severity-route has no default: drop its `manual` rule and a manual finding is denied,
    which blocks the review (p0_unresolved counts it) and sends it to fix."""
    path = ws / "workflows/policies/severity-route.md"
    text = path.read_text(encoding="utf-8")
    start = text.index("  - when: \"finding.autofix_class == 'manual'\"")
    end = text.index("  - when: \"finding.autofix_class == 'advisory'\"")
    path.write_text(text[:start] + text[end:], encoding="utf-8")
    run = run_cycle("code-review")
    denied = [g for g in run.of("workflow.policy_gated") if g["policy_id"] == "severity-route"
              and g["decision"] == "deny"]
    assert denied and all(g["rule"] is None and "no default" in g["reason"] for g in denied)
    assert run.result.visited[:2] == ("review", "fix")


def test_signal_evaluation_error_aborts_fail_closed(ws: Path, run_cycle: RunCycle) -> None:
    edit(ws / "workflows/phases/review.md", 'advance_signal: "review_aggregate.p0_unresolved == 0"',
         'advance_signal: "review_aggregate.no_such_count == 0"')
    run = run_cycle("code-review")
    assert run.result.verdict == "abort" and "cannot be evaluated" in run.result.reason
    err = run.of("domain.error")[-1]
    assert (err["code"], err["layer"]) == ("GATE_DENIED", "L8")


@pytest.mark.parametrize(("faults", "where"), [
    ("workflow_denied", "WorkflowStart denied"), ("phase_advance_denied", "PhaseAdvance denied"),
    ("phase_advance_timeout", "timed out"), ("phase_advance_error", "raised RuntimeError"),
    ("workflow_complete_denied", "WorkflowComplete denied verdict done"),
])
def test_hook_deny_throw_or_timeout_aborts(run_cycle: RunCycle, faults: str, where: str) -> None:
    run = run_cycle("code-review", faults=faults)
    assert run.result.verdict == "abort" and where in run.result.reason
    assert run.of("workflow.aborted")[0]["code"] == "GATE_DENIED"
    assert "workflow.completed" not in run.types()
    assert_audit_ends_aborted(run)


def assert_audit_ends_aborted(run: CycleRun) -> None:
    types = run.types()
    assert types[-2:] == ["workflow.aborted", "session.close"]
    assert run.of("session.close")[0]["ok"] is False


def test_workflow_start_deny_means_the_cycle_never_started(run_cycle: RunCycle) -> None:
    run = run_cycle("code-review", faults="workflow_denied")
    assert "workflow.started" not in run.types() and "llm.request" not in run.types()
    assert run.result.phase is None and run.result.visited == ()


def test_phase_advance_transform_to_an_unknown_phase_is_denied(ws: Path, run_cycle: RunCycle) -> None:
    from agentos_kernel import Runtime

    rt = Runtime.from_workspace(ws)
    rt.hooks.register("PhaseAdvance", HookHandler("jump", lambda d: HookDecision(
        "transform", "skip ahead", {"to_phase": "deploy"})))
    c = rt.run_cycle("code-review", "review auth.py").value
    assert c.verdict == "abort" and c.visited == ("review",)
    codes = [e.payload["code"] for e in rt.events(c.session_id) if e.type == "domain.error"]
    assert "UNKNOWN_ID" in codes


def test_phase_advance_transform_inside_the_cycle_is_followed(ws: Path) -> None:
    from agentos_kernel import Runtime

    rt = Runtime.from_workspace(ws)
    rt.hooks.register("PhaseAdvance", HookHandler("straight-to-report", lambda d: HookDecision(
        "transform", "report now", {"to_phase": "report"})))
    c = rt.run_cycle("code-review", "review auth.py").value
    assert (c.verdict, c.visited) == ("done", ("review", "report"))


def test_role_permissions_deny_aborts_before_the_persona_runs(ws: Path, run_cycle: RunCycle) -> None:
    edit(ws / "workflows/policies/persona-permissions.md", "['reviewer', 'researcher',", "['researcher',")
    run = run_cycle("code-review")
    assert run.result.verdict == "abort" and "security-reviewer" in run.result.reason
    assert "llm.request" not in run.types()


def written(ws_cwd: Path) -> list[str]:
    return sorted(p.relative_to(ws_cwd).as_posix() for p in (ws_cwd / "docs").rglob("*.md")) \
        if (ws_cwd / "docs").is_dir() else []


def test_modes_change_what_is_written_not_what_is_decided(ws: Path, run_cycle: RunCycle) -> None:
    def decisions(run: CycleRun) -> list[tuple[str, ...]]:
        sid = run.result.session_id
        return [(e.type, *(str(e.payload.get(k)).replace(sid, "<session>")
                           for k in ("policy_id", "subject", "decision", "to_phase", "verdict")))
                for e in run.events if e.type.startswith("workflow.")
                and e.payload.get("kind") != "mode-dispatch" and e.type != "workflow.started"]

    runs, files = {}, {}
    for mode in ("interactive", "autofix", "report-only", "headless"):
        before = set(written(ws))
        runs[mode] = run_cycle("bugfix", BUGFIX, mode=mode, session_id=f"m-{mode}")
        files[mode] = sorted(set(written(ws)) - before)
    base = decisions(runs["interactive"])
    for mode, run in runs.items():
        assert decisions(run) == base, mode
        assert run.result.verdict == "done"
    kinds = {mode: sorted(f.split("/")[1] for f in fs) for mode, fs in files.items()}
    assert kinds == {"interactive": ["brainstorms", "learnings", "plans", "solutions"],
                     "headless": ["brainstorms", "learnings", "plans", "solutions"],
                     "autofix": ["solutions"], "report-only": []}


def test_artifacts_follow_their_template_and_schema(ws: Path, run_cycle: RunCycle) -> None:
    run = run_cycle("bugfix", BUGFIX, session_id="b1")
    schemas = SchemaRegistry.load(ws / "schemas")
    reg = run.rt.workflows
    expected = {t.id: t.path(cycle="bugfix", session="b1", slug=slug(BUGFIX), phase="-", generation=0)
                for t in reg.artifacts.values() if t.id != "pulse"}
    assert expected["brainstorm"] == "docs/brainstorms/b1-fix-the-login-bug-in-auth-brainstorm.md"
    assert sorted(written(ws)) == sorted(expected.values())
    for art, rel in expected.items():
        meta, body = fm.split((ws / rel).read_text(encoding="utf-8"))
        assert schemas.violations(meta, reg.artifacts[art].schema) == [], rel
        assert "{" not in body.split("\n", 1)[0], "the template's title placeholder is filled"
    writes = [e.payload for e in run.events if e.type == "tool.invoke" and e.payload["name"] == "write_file"]
    assert len(writes) == 4 and all(w["args"]["claim"]["who"] in reg.personas for w in writes)


def test_a_denied_write_gives_the_persona_no_tools(ws: Path, run_cycle: RunCycle) -> None:
    edit(ws / "workflows/policies/persona-permissions.md", "path.startsWith('docs/')",
         "path.startsWith('out/')")
    run = run_cycle("bugfix", BUGFIX)
    assert run.result.verdict == "done" and written(ws) == []
    assert "tool.invoke" not in run.types()
    assert all(not e.payload.get("tools") for e in run.events if e.type == "llm.request")


def test_loop_bounds_max_generations_and_grade_regression(ws: Path, run_cycle: RunCycle) -> None:
    """Without the loop-halt policy, the cycle's own loop_bounds stop the loop."""
    edit(ws / "workflows/cycles/ralph-loop.md", "policies: [ralph-halt, write-modes]",
         "policies: [write-modes]")
    stuck = run_cycle("ralph-loop", "x", faults="grade_stuck")
    assert (stuck.result.verdict, stuck.result.reason) == ("halted", "max_generations (8) reached")
    regress = run_cycle("ralph-loop", "x", faults="grade_regression")
    assert (regress.result.verdict, regress.result.reason) == ("halted", "grade regression: 85 -> 70")


def test_a_cycle_without_bounds_still_stops(ws: Path, run_cycle: RunCycle) -> None:
    edit(ws / "workflows/cycles/ralph-loop.md", "  max_generations: 8\n", "")
    edit(ws / "workflows/cycles/ralph-loop.md", "policies: [ralph-halt, write-modes]", "policies: []")
    run = run_cycle("ralph-loop", "x", faults="grade_stuck", mode="report-only")
    assert run.result.verdict == "halted" and "max_generations (100)" in run.result.reason


def test_same_request_same_log(ws: Path, run_cycle: RunCycle, tmp_path: Path) -> None:
    import shutil

    other = tmp_path / "other"
    shutil.copytree(ws, other)
    a = run_cycle("code-review", faults="p0_finding_once")
    b = run_cycle("code-review", faults="p0_finding_once", workspace=other)
    assert a.result.log_path.read_bytes() == b.result.log_path.read_bytes()


def test_l8_never_calls_l1_or_l2_directly() -> None:
    """L8 reaches models and tools only through L3 (roles.call_role): no module of the
    workflow package imports a provider, the tool registry, dispatch or a builtin tool."""
    import agentos_kernel.workflows as pkg

    package = pkg.__name__.split(".")
    forbidden = ("agentos_kernel.providers", "agentos_kernel.tools.dispatch", "agentos_kernel.tools.builtin",
                 "agentos_kernel.tools.mcp_client")
    seen = set()
    for path in sorted(Path(pkg.__file__).parent.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                imported = [(a.name, a.name) for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = package[: len(package) - node.level + 1] if node.level else []
                module = ".".join([*base, *([node.module] if node.module else [])])
                imported = [(module, a.name) for a in node.names]
            else:
                continue
            for module, name in imported:
                seen.add(module)
                assert not module.startswith(forbidden), f"{path.name} imports {name} from {module}"
    assert "agentos_kernel.roles.agents" in seen  # L3 is how personas run


def test_a_phase_input_that_fails_its_input_schema_aborts(ws: Path, run_cycle: RunCycle) -> None:
    """fix declares input_schema review_aggregate_v1; asking for a solution_v1 instead fails closed."""
    edit(ws / "workflows/phases/fix.md", "input_schema: review_aggregate_v1", "input_schema: solution_v1")
    run = run_cycle("code-review", faults="p0_finding_once")
    assert run.result.verdict == "abort" and "the input of phase 'fix' is not a valid solution_v1" \
        in run.result.reason
    assert run.of("schema.violation")[-1]["where"] == "input of phase fix"
    assert "llm.request" not in run.types()[run.types().index("workflow.phase_advanced"):]

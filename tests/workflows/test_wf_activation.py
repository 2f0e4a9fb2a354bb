"""The L8 context is checked and converted to CEL once per batch of decisions, not once per
rule: the number of whole-context conversions in a cycle does not grow with its personas
(counted, never timed; 96 personas in under a second is in bench/bench_scale.py)."""

from __future__ import annotations

import shutil
from pathlib import Path

from agentos_kernel.testing import add_reviewers
from agentos_kernel.workflows import activation
from agentos_kernel.workflows.activation import MAX_CONTEXT_NODES, prepare
from agentos_kernel.workflows.signals import compile_signal, evaluate, evaluate_bool

from .conftest import RunCycle


def test_contexts_converted_do_not_grow_with_personas(ws: Path, run_cycle: RunCycle) -> None:
    other = ws.parent / "ws15"
    shutil.copytree(ws, other)
    add_reviewers(other, 15)
    seen = []
    for where in (ws, other):  # the reference's 3 reviewers, then 15
        activation.COUNTS = activation.Counts()
        run = run_cycle("code-review", workspace=where)
        assert run.result.verdict == "done"
        c = activation.COUNTS
        seen.append((c.contexts, c.subjects, c.names, len(run.of("workflow.policy_gated"))))
    (contexts3, subjects3, names3, decisions3), (contexts15, subjects15, names15, decisions15) = seen
    assert decisions15 > 3 * decisions3  # many more rules evaluated ...
    assert contexts15 == contexts3 <= 8  # ... over the same few whole-context checks
    assert (subjects3, subjects15) == (decisions3, decisions15)  # each decision adds its subject
    # Each name converted once per context, each subject once: never once per rule.
    assert names3 <= subjects3 + 12 * contexts3 and names15 <= subjects15 + 12 * contexts15


def test_a_prepared_context_decides_as_the_plain_one_does() -> None:
    sig = compile_signal("finding.severity == 'P0' && review_aggregate.p0_unresolved == 0",
                         allowed={"finding", "review_aggregate"}, file="t.md", field="when")
    base = prepare({"review_aggregate": {"p0_unresolved": 0}})
    for sev in ("P0", "P1"):
        plain = evaluate(sig, {"review_aggregate": {"p0_unresolved": 0}, "finding": {"severity": sev}})
        assert evaluate(sig, base.with_subject(finding={"severity": sev})) == plain
    assert evaluate_bool(sig, base.with_subject(finding={"severity": "P0"})).value is True


def test_the_bounds_hold_for_the_context_and_subject_together() -> None:
    sig = compile_signal("size(finding.items) > 0", allowed={"finding", "big"}, file="t.md", field="when")
    half = MAX_CONTEXT_NODES // 2
    base = prepare({"big": [[0] * 500 for _ in range(half // 501)]})
    assert base.problem is None
    ok = evaluate_bool(sig, base.with_subject(finding={"items": [1]}))
    assert ok.value is True
    too_big = base.with_subject(finding={"items": [[0] * 500 for _ in range(half // 501 + 2)]})
    denied = evaluate_bool(sig, too_big)
    assert "cannot be evaluated (the context holds more than 20000 values); denied" in denied.error.message
    bad = prepare({"big": object()})
    assert bad.with_subject(finding={"items": [1]}) is bad  # a context that failed stays failed
    assert "which is not JSON" in evaluate(sig, bad).error.message

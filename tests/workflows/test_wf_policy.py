"""Policies: when -> then -> reason in order, unmatched -> default, no default -> deny,
evaluation errors deny; the conservative merge table; the fan-in aggregate."""

from __future__ import annotations

from itertools import product
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentos_kernel.workflows.policy import (
    GATE_ORDER,
    ROUTE_ORDER,
    Policy,
    Reported,
    Rule,
    aggregate,
    conservative,
    decide,
    fingerprint,
    merge,
)
from agentos_kernel.workflows.signals import Signal, compile_signal


def when(src: str) -> Signal:
    got = compile_signal(src, allowed={"finding", "mode", "generation"}, file="policies/p.md", field="when")
    assert isinstance(got, Signal), got
    return got


def policy(rules: list[tuple[str, str, str]], default: str | None = None, kind: str = "severity-routing"
           ) -> Policy:
    return Policy("p", kind, tuple(Rule(when(w), t, r) for w, t, r in rules), default, None, "policies/p.md")


P0 = {"severity": "P0", "autofix_class": "safe_auto", "confidence": 100}
P3 = {"severity": "P3", "autofix_class": "advisory", "confidence": 25}


def test_first_matching_rule_decides_in_order() -> None:
    p = policy([("finding.severity == 'P0'", "gated_auto", "a P0 is gated"),
                ("finding.autofix_class == 'safe_auto'", "safe_auto", "safe")])
    d = decide(p, {"finding": P0})
    assert (d.decision, d.reason, d.rule) == ("gated_auto", "a P0 is gated", 0)
    d = decide(p, {"finding": {**P0, "severity": "P2"}})
    assert (d.decision, d.rule) == ("safe_auto", 1)


def test_unmatched_gives_the_default() -> None:
    d = decide(policy([("finding.severity == 'P0'", "manual", "x")], default="advisory"), {"finding": P3})
    assert (d.decision, d.rule) == ("advisory", None)


def test_a_policy_without_default_denies() -> None:
    d = decide(policy([("finding.severity == 'P0'", "manual", "x")]), {"finding": P3})
    assert d.decision == "deny" and d.rule is None
    assert "no default" in d.reason


def test_an_evaluation_error_denies_even_with_a_default() -> None:
    p = policy([("finding.no_such_field == 1", "safe_auto", "x")], default="safe_auto")
    d = decide(p, {"finding": P0})
    assert d.decision == "deny" and d.rule == 0 and "fail-closed" in d.reason


def test_an_empty_rule_list_is_the_default_or_deny() -> None:
    assert decide(policy([], default="allow", kind="loop-halt"), {}).decision == "allow"
    assert decide(policy([], kind="loop-halt"), {}).decision == "deny"


# The spec: safe_auto < gated_auto < manual < advisory, allow < deny. Written out in full so
# the table is checked against the text, not against the order it is computed from.
ROUTE_TABLE = {
    ("safe_auto", "safe_auto"): "safe_auto", ("safe_auto", "gated_auto"): "gated_auto",
    ("safe_auto", "manual"): "manual", ("safe_auto", "advisory"): "advisory",
    ("safe_auto", "deny"): "deny",
    ("gated_auto", "gated_auto"): "gated_auto", ("gated_auto", "manual"): "manual",
    ("gated_auto", "advisory"): "advisory", ("gated_auto", "deny"): "deny",
    ("manual", "manual"): "manual", ("manual", "advisory"): "advisory", ("manual", "deny"): "deny",
    ("advisory", "advisory"): "advisory", ("advisory", "deny"): "deny",
    ("deny", "deny"): "deny",
}
GATE_TABLE = {
    ("allow", "allow"): "allow", ("allow", "advisory"): "advisory", ("allow", "deny"): "deny",
    ("advisory", "advisory"): "advisory", ("advisory", "deny"): "deny", ("deny", "deny"): "deny",
}


@pytest.mark.parametrize(("table", "order"), [(ROUTE_TABLE, ROUTE_ORDER), (GATE_TABLE, GATE_ORDER)],
                         ids=["routes", "gates"])
def test_conservative_merge_table(table: dict[tuple[str, str], str], order: tuple[str, ...]) -> None:
    assert len(table) == len(order) * (len(order) + 1) // 2
    for (a, b), expected in table.items():
        assert merge(a, b, order) == expected, (a, b)
        assert merge(b, a, order) == expected, (b, a)


def test_merging_decisions_of_another_vocabulary_is_an_error() -> None:
    with pytest.raises(ValueError, match="'allow' is not one of"):
        merge("allow", "manual", ROUTE_ORDER)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.sampled_from(ROUTE_ORDER), min_size=1, max_size=6))
def test_many_decisions_merge_to_the_most_conservative(ds: list[str]) -> None:
    got = conservative(ds, ROUTE_ORDER, "manual")
    assert got in ds
    assert all(merge(got, d, ROUTE_ORDER) == got for d in ds)
    assert conservative(list(reversed(ds)), ROUTE_ORDER, "manual") == got


def test_no_decision_gives_the_stated_empty_value() -> None:
    assert conservative([], GATE_ORDER, "deny") == "deny"


def finding(fid: str, reviewer: str, **kw: Any) -> dict[str, Any]:
    return {"id": fid, "reviewer": reviewer, "severity": "P2", "confidence": 75, "autofix_class": "safe_auto",
            "title": "unchecked error", "file": "auth.py", "line": 3, "schema_version": "v1", **kw}


def test_same_problem_from_two_reviewers_is_one_conservative_entry() -> None:
    a = finding("f1", "security-reviewer", autofix_class="safe_auto")
    b = finding("f9", "correctness-reviewer", title="Unchecked   ERROR", severity="P1")
    assert fingerprint(a) == fingerprint(b)
    agg = aggregate([Reported("security-reviewer", a, fingerprint(a), "allow", "safe_auto"),
                     Reported("correctness-reviewer", b, fingerprint(b), "allow", "manual")],
                    ["security-reviewer", "correctness-reviewer"])
    assert len(agg["findings"]) == 1
    entry = agg["findings"][0]
    assert entry["route"] == "manual" and entry["severity"] == "P1"
    assert entry["reviewers"] == ["correctness-reviewer", "security-reviewer"]
    assert agg["verdict"] == "pass" and agg["p0_unresolved"] == 0


def test_disagreeing_gates_suppress_conservatively() -> None:
    a, b = finding("f1", "r1"), finding("f2", "r2")
    agg = aggregate([Reported("r1", a, "fp", "allow", "safe_auto"),
                     Reported("r2", b, "fp", "advisory", "safe_auto")], ["r1", "r2"])
    assert agg["findings"] == [] and [f["fingerprint"] for f in agg["suppressed"]] == ["fp"]


@pytest.mark.parametrize(("gate", "route", "severity", "unresolved"), [
    ("allow", "safe_auto", "P2", 0), ("allow", "gated_auto", "P0", 1), ("deny", "safe_auto", "P3", 1),
    ("allow", "deny", "P3", 1), ("advisory", "manual", "P0", 0),
])
def test_p0_and_denied_findings_are_unresolved(gate: str, route: str, severity: str, unresolved: int) -> None:
    f = finding("f1", "r", severity=severity)
    agg = aggregate([Reported("r", f, "fp", gate, route)], ["r"])
    assert agg["p0_unresolved"] == unresolved
    assert agg["verdict"] == ("pass" if unresolved == 0 else "fail")


def test_pre_existing_findings_do_not_block() -> None:
    f = finding("f1", "r", severity="P0", pre_existing=True)
    agg = aggregate([Reported("r", f, "fp", "allow", "manual")], ["r"])
    assert agg["p0_unresolved"] == 0 and len(agg["pre_existing"]) == 1


def test_aggregate_is_a_valid_review_aggregate(ws) -> None:  # type: ignore[no-untyped-def]
    from agentos_kernel import SchemaRegistry

    schemas = SchemaRegistry.load(ws / "schemas")
    found = [finding(f"f{i}", f"r{i % 2}", severity=s, autofix_class=c)
             for i, (s, c) in enumerate(product(["P0", "P3"], ["safe_auto", "advisory"]))]
    for f in found:
        assert schemas.violations(f, "finding_v1") == []
    agg = aggregate([Reported(f["reviewer"], f, fingerprint(f), "allow", "manual") for f in found],
                    ["r0", "r1"])
    assert schemas.violations(agg, "review_aggregate_v1") == []

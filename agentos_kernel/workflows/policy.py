"""L8 policies: the five kinds, their decision vocabularies, rule evaluation (when -> then ->
reason, first match wins, unmatched -> default, no default -> deny), the conservative merge,
and the fan-in of persona findings into a review_aggregate_v1.

Decision orders, least to most conservative (the spec: safe_auto < gated_auto < manual <
advisory, allow < deny). Conservative means "less automated action": `advisory` reports
without acting, `deny` stops. For a finding, the gate is allow (actionable), advisory
(suppressed: reported only) or deny (blocking); the route says how a fix may be applied.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ..errors import Err
from .activation import Activation, evaluate_bool, prepare
from .signals import Signal

GATE_ORDER = ("allow", "advisory", "deny")
ROUTE_ORDER = ("safe_auto", "gated_auto", "manual", "advisory", "deny")
KINDS: dict[str, tuple[str, ...]] = {
    "confidence-gating": GATE_ORDER,
    "severity-routing": ROUTE_ORDER,
    "role-permissions": GATE_ORDER,
    "mode-dispatch": GATE_ORDER,
    "loop-halt": GATE_ORDER,
}
MODES = ("interactive", "autofix", "report-only", "headless")

SIGNAL_NAMES = frozenset({
    "prompt", "cycle", "phase", "mode", "generation", "visited", "completed", "phase_runs",
    "review_aggregate", "artifacts", "outputs", "grades",
})
"""What every signal and rule can read (engine.py builds exactly these)."""
KIND_NAMES: dict[str, frozenset[str]] = {
    "confidence-gating": frozenset({"finding"}),
    "severity-routing": frozenset({"finding"}),
    "role-permissions": frozenset({"persona", "action", "path"}),
    "mode-dispatch": frozenset({"persona", "artifact"}),
    "loop-halt": frozenset(),
}
"""What a rule of each kind can read on top of SIGNAL_NAMES: its subject."""


@dataclass(frozen=True)
class Rule:
    """One `when -> then -> reason` rule."""

    when: Signal
    """The CEL condition."""
    then: str
    """The decision when it holds (from the kind's vocabulary)."""
    reason: str
    """Why, recorded with the decision."""


@dataclass(frozen=True)
class Policy:
    """A policy loaded from workflows/policies/<id>.md."""

    id: str
    """Policy id (file stem)."""
    kind: str
    """One of KINDS."""
    rules: tuple[Rule, ...]
    """Evaluated in order; the first that holds decides."""
    default: str | None
    """Decision when no rule holds; None means deny (fail-closed)."""
    default_reason: str | None
    """Why the default applies."""
    file: str
    """Where it was loaded from."""


@dataclass(frozen=True)
class Decision:
    """One policy's decision on one subject."""

    policy_id: str
    """Which policy decided."""
    kind: str
    """Its kind."""
    decision: str
    """The decision."""
    reason: str
    """The rule's reason, the default's, or why it was denied."""
    rule: int | None
    """Index of the rule that decided; None for the default (or the default of default)."""


def decide(policy: Policy, context: Mapping[str, Any] | Activation) -> Decision:
    """Evaluate the rules in order over one conversion of `context` (a prepared one is used
    as is). An evaluation error is a deny (fail-closed)."""
    context = context if isinstance(context, Activation) else prepare(context)
    for i, rule in enumerate(policy.rules):
        held = evaluate_bool(rule.when, context)
        if isinstance(held, Err):
            return Decision(policy.id, policy.kind, "deny", held.error.message, i)
        if held.value:
            return Decision(policy.id, policy.kind, rule.then, rule.reason, i)
    if policy.default is None:
        return Decision(policy.id, policy.kind, "deny",
                        "no rule matched and the policy has no default: deny (fail-closed)", None)
    return Decision(policy.id, policy.kind, policy.default,
                    policy.default_reason or f"no rule matched: the default, {policy.default}", None)


def merge(a: str, b: str, order: tuple[str, ...]) -> str:
    """The more conservative of two decisions (ValueError names one outside `order`)."""
    for d in (a, b):
        if d not in order:
            raise ValueError(f"decision {d!r} is not one of {', '.join(order)}")
    return a if order.index(a) >= order.index(b) else b


def conservative(decisions: Iterable[str], order: tuple[str, ...], empty: str) -> str:
    """The most conservative decision of many; `empty` when there are none."""
    out: str | None = None
    for d in decisions:
        out = d if out is None else merge(out, d, order)
    return empty if out is None else out


def fingerprint(finding: Mapping[str, Any]) -> str:
    """The finding's own fingerprint, else one from where it is and what it says, so two
    reviewers reporting the same problem collapse into one entry."""
    if finding.get("fingerprint"):
        return str(finding["fingerprint"])
    title = " ".join(str(finding["title"]).lower().split())
    key = f"{finding.get('file', '')}:{finding.get('line', '')}:{title}"
    return "fp-" + hashlib.sha256(key.encode()).hexdigest()[:12]


_SEVERITY = ("P3", "P2", "P1", "P0")
_CONFIDENCE = (0, 25, 50, 75, 100)
_AUTOFIX = ("safe_auto", "gated_auto", "manual", "advisory")


@dataclass(frozen=True)
class Reported:
    """One persona's finding with the decisions the policies took on it."""

    persona: str
    """Who reported it."""
    finding: dict[str, Any]
    """The finding_v1."""
    fingerprint: str
    """Its fingerprint."""
    gate: str
    """allow | advisory | deny (merged over the confidence-gating policies)."""
    route: str
    """safe_auto | gated_auto | manual | advisory | deny (merged over severity-routing)."""


def aggregate(reported: list[Reported], personas: list[str]) -> dict[str, Any]:
    """Fan-in: one entry per fingerprint, every decision merged conservatively; P0s and
    denied findings count as unresolved; verdict pass iff none is."""
    groups: dict[str, list[Reported]] = {}
    for r in reported:
        groups.setdefault(r.fingerprint, []).append(r)
    out: dict[str, list[dict[str, Any]]] = {"findings": [], "suppressed": [], "pre_existing": []}
    unresolved = 0
    for fp, group in groups.items():
        first = group[0].finding
        entry: dict[str, Any] = {
            "fingerprint": fp, "title": first["title"],
            "severity": max((r.finding["severity"] for r in group), key=_SEVERITY.index),
            "confidence": max((r.finding["confidence"] for r in group), key=_CONFIDENCE.index),
            "autofix_class": max((r.finding["autofix_class"] for r in group), key=_AUTOFIX.index),
            "reviewers": sorted({r.persona for r in group}),
            "gate": conservative((r.gate for r in group), GATE_ORDER, "allow"),
            "route": conservative((r.route for r in group), ROUTE_ORDER, "manual"),
        }
        entry.update({k: first[k] for k in ("file", "line") if k in first})
        if all(r.finding.get("pre_existing") for r in group) and entry["gate"] != "deny":
            out["pre_existing"].append(entry)
        elif entry["gate"] == "advisory":
            out["suppressed"].append(entry)
        else:
            out["findings"].append(entry)
            if entry["severity"] == "P0" or "deny" in (entry["gate"], entry["route"]):
                unresolved += 1
    return {**out, "verdict": "pass" if unresolved == 0 else "fail",
            "coverage": {"personas": personas, "reported": len(reported)},
            "p0_unresolved": unresolved, "schema_version": "v1"}

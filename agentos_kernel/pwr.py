"""L3 Plan-Work-Review: INTAKE -> LEAD -> PLAN -> WORK -> REVIEW -> DONE, with
REVIEW -> FAIL -> REWORK -> WORK bounded by the profile's max_rework, then a
`human.escalation` event. Every transition is an `agent.transition` event; handoffs are
schema-checked JSON only; the runtime refuses to let an agent review its own report.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .errors import DomainError, Err, ErrorCode, Ok, Result
from .roles import call_role


@dataclass(frozen=True)
class PwrOutcome:
    """What one plan-work-review pass produced."""

    directive: dict[str, Any]
    """lead_directive_v1."""
    plan: dict[str, Any]
    """plan_v1."""
    report: dict[str, Any]
    """The last worker_report_v1."""
    review: dict[str, Any]
    """The last review_result_v1 (verdict pass)."""
    reworks: int
    """How many REWORK rounds it took."""


class Machine:
    """The PWR state, moved only through `go`, which logs the transition."""

    def __init__(self, session: Any) -> None:
        self.session = session
        self.state = "INTAKE"

    def go(self, to: str, role: str | None, attempt: int = 1) -> None:
        self.session.log.append("agent.transition", role or "system",
                                {"from": self.state, "to": to, "role": role, "attempt": attempt})
        self.state = to


def run_pwr(session: Any, prompt: str, *, previous: dict[str, Any] | None = None
            ) -> Result[PwrOutcome]:
    """One Lead -> Planner -> Worker -> Reviewer pass with bounded rework."""
    m = Machine(session)
    skill = session.skill_info()
    m.go("LEAD", "lead")
    directive = call_role(session, session.agent("lead"), {"prompt": prompt, "skill": skill,
                                                           "previous": previous})
    if isinstance(directive, Err):
        return _failed(m, directive)
    if directive.value.get("needs_advisor"):
        advice = _advise(m, session, {"directive": directive.value})
        if isinstance(advice, Err):
            return advice
    m.go("PLAN", "planner")
    plan = call_role(session, session.agent("planner"),
                     {"directive": directive.value, "skill": skill, "prompt": prompt})
    if isinstance(plan, Err):
        return _failed(m, plan)
    if plan.value.get("needs_advisor"):
        advice = _advise(m, session, {"directive": directive.value, "plan": plan.value})
        if isinstance(advice, Err):
            return advice
    worker, reviewer = session.agent("worker"), session.agent("reviewer")
    if worker.name == reviewer.name:
        return _failed(m, session.log.fail(DomainError(
            "gate", ErrorCode.SELF_REVIEW,
            f"agent {worker.name!r} would review its own report; the runtime refuses self-review"),
            layer="L3", actor="system"))
    feedback: str | None = None
    for attempt in range(1, session.profile.max_rework + 2):
        m.go("WORK", "worker", attempt)
        report = call_role(session, worker,
                           {"prompt": prompt, "directive": directive.value, "plan": plan.value,
                            "skill": skill, "feedback": feedback},
                           tools=session.tool_specs(), allowed=session.allowed_tools)
        if isinstance(report, Err):
            return _failed(m, report)
        m.go("REVIEW", "reviewer", attempt)
        review = call_role(session, reviewer, {"directive": directive.value, "plan": plan.value,
                                               "report": report.value, "author": worker.name})
        if isinstance(review, Err):
            return _failed(m, review)
        if review.value["verdict"] == "pass":
            m.go("DONE", None, attempt)
            return Ok(PwrOutcome(directive.value, plan.value, report.value, review.value,
                                 attempt - 1))
        m.go("FAIL", None, attempt)
        feedback = review.value["feedback"]
        if attempt <= session.profile.max_rework:
            m.go("REWORK", "worker", attempt + 1)
    m.go("ESCALATED", None, session.profile.max_rework + 1)
    session.log.append("human.escalation", "system", {
        "reason": f"review failed {session.profile.max_rework + 1} time(s); a person must decide",
        "attempts": session.profile.max_rework + 1, "feedback": feedback or ""})
    return session.log.fail(DomainError("loop", ErrorCode.HUMAN_ESCALATION,
                                        f"review still failing after {session.profile.max_rework} "
                                        f"rework(s): {feedback}"), layer="L3", actor="system")


def _advise(m: Machine, session: Any, payload: dict[str, Any]) -> Result[dict[str, Any]]:
    back = m.state
    m.go("ADVISE", "advisor")
    advice = call_role(session, session.agent("advisor"), payload)
    if isinstance(advice, Err):
        return _failed(m, advice)
    m.go(back, None)
    return advice


def _failed(m: Machine, err: Err) -> Err:
    m.go("FAILED", None)
    return err

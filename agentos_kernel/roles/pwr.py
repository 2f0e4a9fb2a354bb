"""L3 Plan-Work-Review: INTAKE -> LEAD -> PLAN -> WORK -> REVIEW -> DONE, with
REVIEW -> FAIL -> REWORK -> WORK bounded by the profile's max_rework, then a
`human.escalation` event. Every transition is an `agent.transition` event; handoffs are
schema-checked JSON only; the runtime refuses to let an agent review its own report.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..errors import DomainError, Err, ErrorCode, Ok, Result
from .agents import call_role


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


@dataclass(frozen=True)
class PassEnd:
    """How one pass ended: the terminal state the Stop hook is told about (flow.py)."""

    state: str
    """DONE (review passed), ESCALATED (review still failing when rework ran out) or FAILED
    (a role's turn failed closed: malformed output, provider error, loop bound, ...)."""
    result: Result[PwrOutcome]
    """Ok with what the pass produced (DONE), else the Err that ended it (already logged)."""
    event_id: str | None = None
    """The id of the agent.transition into `state`."""
    feedback: str | None = None
    """The last failed review's feedback, handed to the next pass's lead."""
    ends_session: bool = False
    """The failure is a refusal of the profile itself (SELF_REVIEW), which no further pass can
    change: the session closes without asking the Stop hook."""


STAGES = ("LEAD", "PLAN", "WORK", "REVIEW")
"""The states a pass can resume at (a fork): the start of a role's turn."""


@dataclass(frozen=True)
class Resume:
    """Where a forked session picks a pass up (fork.py): the transition into `stage` is
    already in the log; what the earlier turns handed on is read back from it."""

    stage: str
    """LEAD, PLAN, WORK or REVIEW: the role whose turn runs first, live."""
    attempt: int = 1
    """The WORK/REVIEW attempt that transition began."""
    directive: dict[str, Any] | None = None
    """lead_directive_v1 from the log (stages after LEAD)."""
    plan: dict[str, Any] | None = None
    """plan_v1 from the log (stages after PLAN)."""
    report: dict[str, Any] | None = None
    """The worker_report_v1 under review (REVIEW)."""
    feedback: str | None = None
    """The last failed review's feedback (a WORK rework attempt)."""
    iteration: int = 1
    """Which pass of the session it is (a later one when the Stop hook let the loop go on)."""


class Machine:
    """The PWR state, moved only through `go`, which logs the transition."""

    def __init__(self, session: Any) -> None:
        self.session = session
        self.state = "INTAKE"
        self.feedback: str | None = None
        """The latest failed review's feedback in this pass."""
        self.entered: str | None = None
        """The id of the transition into `state` (None before the first, e.g. a fork's)."""

    def go(self, to: str, role: str | None, attempt: int = 1) -> None:
        self.entered = self.session.log.append(
            "agent.transition", role or "system",
            {"from": self.state, "to": to, "role": role, "attempt": attempt}).id
        self.state = to


def run_pwr(session: Any, prompt: str, *, previous: dict[str, Any] | None = None,
            resume: Resume | None = None) -> PassEnd:
    """One Lead -> Planner -> Worker -> Reviewer pass with bounded rework, to its terminal
    state; with `resume`, the turns before `resume.stage` are taken from it instead of run."""
    m = Machine(session)
    m.feedback = resume.feedback if resume else None
    result = _pass(m, session, prompt, previous, resume)
    if isinstance(result, Ok):
        return PassEnd("DONE", result, m.entered)
    return PassEnd(m.state, result, m.entered, m.feedback,
                   result.error.code == ErrorCode.SELF_REVIEW)


def _pass(m: Machine, session: Any, prompt: str, previous: dict[str, Any] | None,
          resume: Resume | None) -> Result[PwrOutcome]:
    """run_pwr's pass, moving `m` to DONE, ESCALATED or FAILED."""
    skill = session.skill_info()
    at = STAGES.index(resume.stage) if resume else -1  # -1: nothing logged yet
    if resume:
        m.state = resume.stage
    else:
        m.go("LEAD", "lead")
    if at <= 0:
        directive = call_role(session, session.agent("lead"), {"prompt": prompt, "skill": skill,
                                                               "previous": previous})
        if isinstance(directive, Err):
            return _failed(m, directive)
        if directive.value.get("needs_advisor"):
            advice = _advise(m, session, {"directive": directive.value})
            if isinstance(advice, Err):
                return advice
        m.go("PLAN", "planner")
    else:  # at > 0: a fork (fork._state refuses one whose log lacks what this reads back)
        assert resume is not None and resume.directive is not None
        directive = Ok(resume.directive)
    if at <= 1:
        plan = call_role(session, session.agent("planner"),
                         {"directive": directive.value, "skill": skill, "prompt": prompt})
        if isinstance(plan, Err):
            return _failed(m, plan)
        if plan.value.get("needs_advisor"):
            advice = _advise(m, session, {"directive": directive.value, "plan": plan.value})
            if isinstance(advice, Err):
                return advice
    else:
        assert resume is not None and resume.plan is not None
        plan = Ok(resume.plan)
    worker, reviewer = session.agent("worker"), session.agent("reviewer")
    if worker.name == reviewer.name:
        return _failed(m, session.log.fail(DomainError(
            "gate", ErrorCode.SELF_REVIEW,
            f"agent {worker.name!r} would review its own report; the runtime refuses self-review"),
            layer="L3", actor="system"))
    feedback: str | None = resume.feedback if resume else None
    first = resume.attempt if resume and at >= 2 else 1
    report: Result[dict[str, Any]]  # read back from a fork's log, or the worker's turn
    for attempt in range(first, session.profile.max_rework + 2):
        resumed = attempt == first and at >= 2  # this attempt's WORK transition is logged
        if not resumed:
            m.go("WORK", "worker", attempt)
        if resumed and at == 3:
            assert resume is not None and resume.report is not None
            report = Ok(resume.report)
        else:
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
        feedback = m.feedback = review.value["feedback"]
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

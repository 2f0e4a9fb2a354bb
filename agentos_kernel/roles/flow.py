"""The spec's ten-step request flow, as the methods `Runtime` runs it with: the gates before
a request (SessionStart, UserPromptSubmit, SkillStart), the plan-work-review passes until
the Stop hook ends them, the close, and `guarded`, which closes the session on a crash or
Ctrl-C. kernel.py composes the runtime; this module is what it runs."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from ..errors import DomainError, Err, ErrorCode, Ok, Result
from ..store.recorder import SessionLog, root_cause_note
from .pwr import PassEnd, Resume, run_pwr
from .session import RunResult, Session

if TYPE_CHECKING:
    from ..config import RuntimeProfile
    from ..hooks import HookBus
    from ..skills.registry import SkillRegistry
    from ..store.jsonl import JsonlEventStore
    from ..store.postgres.store import PostgresEventStore


class RequestFlow:
    """Mixed into Runtime: the attributes below are the Runtime's."""

    hooks: HookBus
    skills: SkillRegistry
    profile: RuntimeProfile
    store: JsonlEventStore | PostgresEventStore
    start_session: Callable[..., Session | Err]

    @staticmethod
    @contextmanager
    def guarded(session: Session) -> Iterator[Session]:
        """Nothing already logged is lost on a crash or Ctrl-C: the session is closed (not
        ok) with the reason before the exception propagates, and the log is released."""
        log = session.log
        try:
            yield session
        except KeyboardInterrupt:
            log.append("session.close", "system", {"ok": False, "reason": "interrupted (Ctrl-C)"})
            raise
        except BaseException as exc:
            log.append("session.close", "system",
                       {"ok": False, "reason": f"invariant violation: {type(exc).__name__}: {exc}"})
            raise
        finally:
            log.close()
            close = getattr(session.provider, "close", None)
            if callable(close):  # an HTTP adapter's kept connections end with the session
                close()

    def handle_user_request(self, prompt: str, *, session_id: str | None = None
                            ) -> Result[RunResult]:
        """Run one request end to end (the spec's ten steps), guarded as above."""
        session = self.start_session(prompt, session_id)
        if isinstance(session, Err):
            return session
        with self.guarded(session):
            return self._run(session, prompt)

    def _run(self, s: Session, prompt: str) -> Result[RunResult]:
        log = s.log
        gate, _ = self.hooks.fire("SessionStart", {"session_id": s.session_id,
                                                   "profile": self.profile.name}, log)
        if gate.decision == "deny":
            return self._close(s, log.fail(DomainError("gate", ErrorCode.GATE_DENIED,
                                                       f"SessionStart denied: {gate.reason}"),
                                           layer="L6", actor="system"))
        gate, data = self.hooks.fire(
            "UserPromptSubmit", {"prompt": prompt}, log,
            validate=lambda d: log.check({"prompt": d["prompt"]}, "hook_prompt_v1",
                                         where="UserPromptSubmit transform", actor="hook"))
        if gate.decision == "deny":
            return self._close(s, log.fail(DomainError("gate", ErrorCode.PROMPT_DENIED,
                                                       f"UserPromptSubmit denied: {gate.reason}"),
                                           layer="L6", actor="system"))
        prompt = data["prompt"]
        picked = self.skills.select(prompt)
        if picked is not None:
            skill, trigger = picked
            gate, data = self.hooks.fire(
                "SkillStart", {"skill": skill.name, "allowed_tools": list(skill.allowed_tools)},
                log, validate=lambda d: _narrowing(log, d, skill.allowed_tools))
            if gate.decision == "deny":
                return self._close(s, log.fail(DomainError("gate", ErrorCode.GATE_DENIED,
                                                           f"SkillStart denied {skill.name}: "
                                                           f"{gate.reason}"),
                                               layer="L6", actor="system"))
            s.skill, s.allowed_tools = skill, frozenset(data["allowed_tools"])
            log.append("skill.invoke", "system", {
                "skill": skill.name, "trigger": trigger, "file": skill.file,
                "allowed_tools": [t for t in skill.allowed_tools if t in s.allowed_tools]})
        return self.run_passes(s, prompt)

    def run_passes(self, s: Session, prompt: str, resume: Resume | None = None
                   ) -> Result[RunResult]:
        """The plan-work-review passes until the Stop hook ends them, then the close; a fork
        (fork.py) enters here with `resume`, its pass picked up where its log ends.

        Stop fires at every terminal state of a pass (DONE, ESCALATED, FAILED) with `ok` and
        the reason; after a failed pass its hook.fired names the transition into that state
        as its parent. `deny` closes the session with the pass's result, `allow` runs the
        next pass (told how the last one ended), at most `max_iterations` in all. A refusal
        of the profile (SELF_REVIEW) closes the session at once: no pass can change it."""
        previous: dict[str, Any] | None = None  # a resumed later pass is past its lead's turn
        for iteration in range(resume.iteration if resume else 1, self.profile.max_iterations + 1):
            end = run_pwr(s, prompt, previous=previous, resume=resume)
            resume = None
            if end.ends_session:
                return self._close(s, end.result)
            gate, _ = self.hooks.fire("Stop", stop_input(s.session_id, iteration, end), s.log,
                                      parent_id=None if end.state == "DONE" else end.event_id)
            if gate.decision == "deny":
                return self._close(s, end.result)
            previous = end.result.value.report if isinstance(end.result, Ok) else {
                "ok": False, "state": end.state, "reason": str(end.result.error),
                "feedback": end.feedback}
        return self._close(s, end.result, f"stopped at max_iterations ({self.profile.max_iterations})")

    def _close(self, s: Session, result: Result[Any], reason: str | None = None
               ) -> Result[RunResult]:
        ok = isinstance(result, Ok)
        if s.skill is not None:
            s.log.append("skill.complete", "system", {"skill": s.skill.name, "ok": ok})
        payload: dict[str, Any] = {"ok": ok}
        if isinstance(result, Ok):
            payload["output"] = result.value.report["output"]
        else:
            # The code that ended the run, and the first one that failed closed: after a
            # denied tool the run goes on and may end in HUMAN_ESCALATION 40 events later.
            payload["reason"] = (f"{result.error.code}: {result.error.message}"
                                 f"{root_cause_note(s.log.root_cause)}")
        if reason:  # a failed run keeps its code first (otel reads it), then the bound
            payload["reason"] = f"{payload['reason']}; {reason}" if "reason" in payload else reason
        s.log.append("session.close", "system", payload)
        if isinstance(result, Err):
            return result
        out, redact = result.value, s.log.redact  # what the caller prints is what the log holds
        return Ok(RunResult(s.session_id, True, redact(out.report["output"]), redact(out.report),
                            redact(out.review), self.store.path(s.session_id)))


def stop_input(session_id: str, iteration: int, end: PassEnd) -> dict[str, Any]:
    """What the Stop hook is given (hook_stop_v1): which pass ended, in which state, ok or
    not and why, and the worker's output when the review passed."""
    data: dict[str, Any] = {"session_id": session_id, "ok": isinstance(end.result, Ok),
                            "iteration": iteration, "state": end.state}
    if isinstance(end.result, Ok):
        data["output"] = end.result.value.report["output"]
        data["reason"] = "review passed"
    else:
        data["reason"] = str(end.result.error)
        if end.feedback is not None:
            data["feedback"] = end.feedback
    return data


def _narrowing(log: SessionLog, d: dict[str, Any], allowed: tuple[str, ...]) -> Result[Any]:
    checked = log.check({"allowed_tools": d["allowed_tools"]}, "hook_skill_scope_v1",
                        where="SkillStart transform", actor="hook")
    if isinstance(checked, Err):
        return checked
    wider = sorted(set(d["allowed_tools"]) - set(allowed))
    if wider:
        return log.fail(DomainError("gate", ErrorCode.TOOL_NOT_ALLOWED,
                                    f"SkillStart may narrow the tool scope, not widen it: {wider}"),
                        layer="L6", actor="hook")
    return Ok(d)

"""L8 engine: runs one cycle, the spec's execution flow, every transition a workflow.* event.

    WorkflowStart hook -> workflow.started -> phase = entry_phase -> loop:
      halt_signal (holds: abort) -> fan-out personas via L3 -> fan-in -> policies in order
      -> advance_signal picks next (else rework) -> PhaseAdvance hook -> workflow.phase_advanced
      -> exit_conditions.done (done) -> loop bounds / loop-halt policy (halted)
    -> WorkflowComplete hook -> workflow.completed | workflow.aborted

Where the spec's one line "evaluate advance_signal / halt_signal" is split: halt_signal is
checked before a phase spends anything on personas; advance_signal reads what the phase
produced (`review_aggregate.p0_unresolved == 0` needs the fan-in), so it is evaluated
after the policies and decides the transition. Personas run through L3 (`call_role`),
never L1/L2 directly; role-permissions and mode-dispatch policies are decided before a
persona runs, because they fix its scope (may it run; may it write its artifact).
Modes change what is written, never what is decided. Anything that cannot be decided
(a signal that fails to evaluate, a hook that denies, throws or times out, a persona whose
output fails its schema) aborts the cycle fail-closed.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import DomainError, Err, ErrorCode, Ok, Result
from .fanout import FanOut
from .model import Cycle, WorkflowRegistry
from .policy import decide
from .signals import evaluate_bool

HARD_MAX_GENERATIONS = 100
"""Phase runs a cycle without loop_bounds.max_generations may make before it is halted."""


@dataclass(frozen=True)
class CycleResult:
    """Where a cycle ended (the log holds everything else)."""

    session_id: str
    """The session whose log records the cycle."""
    cycle_id: str
    """The cycle that ran."""
    verdict: str
    """done | halted | abort."""
    reason: str
    """Why it ended there."""
    phase: str | None
    """The phase it ended in (None: it never started)."""
    visited: tuple[str, ...]
    """Phases entered, in order."""
    generations: int
    """Phase runs."""
    log_path: Path
    """The session's log file."""

    @property
    def ok(self) -> bool:
        """The cycle reached done."""
        return self.verdict == "done"


def run_cycle(rt: Any, cycle_id: str, prompt: str, *, session_id: str | None = None,
              mode: str | None = None) -> Result[CycleResult]:
    """Run a registered cycle in a new session of `rt` (a kernel.Runtime). Err only when it
    is refused before a session exists: unknown cycle, a mode the cycle does not allow,
    a session id that is taken. Every verdict, abort included, is an Ok(CycleResult)."""
    registry: WorkflowRegistry = rt.workflows
    found = registry.cycle(cycle_id)
    if isinstance(found, Err):
        return found
    cycle = found.value
    mode = mode or cycle.default_mode
    if mode not in cycle.modes:
        return Err(DomainError("config", ErrorCode.UNKNOWN_ID, f"cycle {cycle.id!r} does not run in "
                               f"mode {mode!r}; its modes: {', '.join(cycle.modes)}"))
    session = rt.start_session(prompt, session_id)
    if isinstance(session, Err):
        return session
    with rt.guarded(session):
        return Ok(_Cycle(rt, registry, session, cycle, prompt, mode).run())


class _Cycle(FanOut):
    """One cycle's state while it runs; `run()` returns its CycleResult."""

    def __init__(self, rt: Any, registry: WorkflowRegistry, session: Any, cycle: Cycle,
                 prompt: str, mode: str) -> None:
        super().__init__(registry, session, cycle, prompt, mode)
        self.rt = rt
        self.transitions: list[tuple[str, str]] = []
        self.halt_reason: str | None = None

    # -- the flow ---------------------------------------------------------------------
    def run(self) -> CycleResult:
        log, fire = self.log, self.session.hooks.fire
        gate, _ = fire("SessionStart", {"session_id": self.session.session_id,
                                        "profile": self.rt.profile.name}, log)
        if gate.decision == "deny":
            return self.abort(f"SessionStart denied: {gate.reason}", ErrorCode.GATE_DENIED, layer="L6")
        gate, data = fire("UserPromptSubmit", {"prompt": self.prompt}, log, validate=lambda d: log.check(
            {"prompt": d["prompt"]}, "hook_prompt_v1", where="UserPromptSubmit transform", actor="hook"))
        if gate.decision == "deny":
            return self.abort(f"UserPromptSubmit denied: {gate.reason}", ErrorCode.PROMPT_DENIED, layer="L6")
        self.prompt = data["prompt"]
        gate, data = fire("WorkflowStart", {"cycle_id": self.cycle.id, "session_id": self.session.session_id,
                                            "prompt": self.prompt, "mode": self.mode},
                          log, validate=self._check_start)
        if gate.decision == "deny":
            return self.abort(f"WorkflowStart denied: {gate.reason}", ErrorCode.GATE_DENIED, layer="L6")
        self.cycle = self.registry.cycles[data["cycle_id"]]
        self.prompt, self.mode = data["prompt"], data["mode"]
        self.phase = self.cycle.entry_phase
        self.visited.append(self.phase)
        log.append("workflow.started", "workflow", {
            "cycle_id": self.cycle.id, "session_id": self.session.session_id,
            "entry_phase": self.phase, "mode": self.mode, "phases": list(self.cycle.phases),
            "policies": list(self.cycle.policies)})
        while True:
            ended = self.step()
            if ended is not None:
                return ended

    def step(self) -> CycleResult | None:
        """One phase run and its transition; a CycleResult when the cycle ends."""
        assert self.phase is not None  # set by the start, before the first step
        phase = self.registry.phases[self.phase]
        if phase.halt is not None:
            halt = evaluate_bool(phase.halt, self.context())
            if isinstance(halt, Err):
                return self.abort(halt.error.message, halt.error.code)
            if halt.value:
                return self.abort(f"halt_signal of phase {phase.id!r} holds: {phase.halt}")
        self.generation += 1
        self.runs[phase.id] = self.runs.get(phase.id, 0) + 1
        failed = self.fan_out(phase)
        if failed is not None:
            reason, code, logged = failed
            return self.abort(reason, code, logged=logged)
        halts = [p for p in self.policies_for(phase) if p.kind == "loop-halt"]
        base = self.prepared() if halts else None
        for policy in halts:
            assert base is not None  # prepared above whenever there are halts
            d = decide(policy, base)
            self.gated(d, f"loop step {self.generation}", None)
            if d.decision == "deny" and self.halt_reason is None:
                self.halt_reason = f"loop-halt policy {policy.id!r}: {d.reason}"
        self.completed.append(phase.id)
        advance = evaluate_bool(phase.advance, self.context())
        if isinstance(advance, Err):
            return self.abort(advance.error.message, advance.error.code)
        target = self.next_of(phase.id) if advance.value else (phase.rework or phase.id)
        if target is None:  # the last phase completed: there is no transition left
            return self.exit(final=True)
        denied = self.advance(phase.id, target, advance.value)
        return denied or self.exit(final=False)

    def advance(self, src: str, dst: str, advanced: bool) -> CycleResult | None:
        """PhaseAdvance hook, then workflow.phase_advanced; an abort when the hook denies."""
        gate, data = self.session.hooks.fire("PhaseAdvance", {
            "cycle_id": self.cycle.id, "from_phase": src, "to_phase": dst,
            "generation": self.generation, "advanced": advanced}, self.log,
            validate=lambda d: self._check_advance(d, src))
        if gate.decision == "deny":
            return self.abort(f"PhaseAdvance denied {src} -> {dst}: {gate.reason}",
                              ErrorCode.GATE_DENIED, layer="L6")
        dst = data["to_phase"]
        self.log.append("workflow.phase_advanced", "workflow", {
            "cycle_id": self.cycle.id, "from_phase": src, "to_phase": dst,
            "generation": self.generation, "advanced": advanced,
            "reason": "advance_signal holds" if advanced else "advance_signal does not hold: rework"})
        self.transitions.append((src, dst))
        self.phase = dst
        self.visited.append(dst)
        return None

    def exit(self, *, final: bool) -> CycleResult | None:
        """Exit conditions first (done), then the loop bounds (halted)."""
        c = self.cycle
        if c.done is None:
            if final:
                return self.complete("done", f"the last phase {self.phase!r} completed")
        else:
            done = evaluate_bool(c.done, self.context())
            if isinstance(done, Err):
                return self.abort(done.error.message, done.error.code)
            if done.value:
                return self.complete("done", f"exit_conditions.done holds: {c.done}")
            if final:
                return self.abort(f"the cycle ran past its last phase {self.phase!r} and "
                                  f"exit_conditions.done does not hold: {c.done}")
        if self.halt_reason is not None:
            return self.complete("halted", self.halt_reason)
        limit = c.max_generations or HARD_MAX_GENERATIONS
        if self.generation >= limit:
            return self.complete("halted", f"max_generations ({limit}) reached")
        reversals = sum(1 for a, b in zip(self.transitions, self.transitions[1:], strict=False)
                        if a[0] != a[1] and b == (a[1], a[0]))
        if c.max_oscillations is not None and reversals > c.max_oscillations:
            return self.complete("halted", f"oscillation: {reversals} reversals between phases "
                                           f"(max_oscillations {c.max_oscillations})")
        if c.halt_on_grade_regression and len(self.grades) >= 2 and self.grades[-1] < self.grades[-2]:
            return self.complete("halted", f"grade regression: {self.grades[-2]} -> {self.grades[-1]}")
        return None

    # -- endings ----------------------------------------------------------------------
    def complete(self, verdict: str, reason: str) -> CycleResult:
        """WorkflowComplete, then workflow.completed (done | halted); a deny aborts instead."""
        gate, _ = self.session.hooks.fire("WorkflowComplete", self._ending(verdict, reason), self.log)
        if gate.decision == "deny":
            return self._aborted(f"WorkflowComplete denied verdict {verdict}: {gate.reason}",
                                 DomainError("gate", ErrorCode.GATE_DENIED, gate.reason or "denied"), "L6")
        self.log.append("workflow.completed", "workflow", {
            "cycle_id": self.cycle.id, "verdict": verdict, "reason": reason, "phase": self.phase,
            "generations": self.generation})
        close: dict[str, Any] = {"ok": verdict == "done"}
        if verdict == "done":
            close["output"] = f"cycle {self.cycle.id} done: {reason}"
        else:
            close["reason"] = f"cycle {self.cycle.id} halted: {reason}"
        self.log.append("session.close", "system", close)
        return self._result(verdict, reason)

    def abort(self, reason: str, code: str | None = None, *, layer: str = "L8",
              logged: bool = False) -> CycleResult:
        """Fail-closed end: domain.error (when there is an error code that nothing logged
        yet), WorkflowComplete (observed: an abort stays an abort), workflow.aborted."""
        error = DomainError("gate", code, reason) if code else None
        self.session.hooks.fire("WorkflowComplete", self._ending("abort", reason), self.log)
        return self._aborted(reason, error, layer, logged)

    def _aborted(self, reason: str, error: DomainError | None, layer: str,
                 logged: bool = False) -> CycleResult:
        if error is not None and not logged:
            self.log.fail(error, layer=layer, actor="workflow")
        payload: dict[str, Any] = {"cycle_id": self.cycle.id, "reason": reason,
                                   "generations": self.generation}
        if self.phase is not None:
            payload["phase"] = self.phase
        if error is not None:
            payload["code"] = error.code
        self.log.append("workflow.aborted", "workflow", payload)
        self.log.append("session.close", "system", {"ok": False, "reason": f"cycle {self.cycle.id} "
                                                                           f"aborted: {reason}"})
        return self._result("abort", reason)

    def _ending(self, verdict: str, reason: str) -> dict[str, Any]:
        return {"cycle_id": self.cycle.id, "verdict": verdict, "reason": reason,
                "phase": self.phase, "visited": list(self.visited)}

    def _result(self, verdict: str, reason: str) -> CycleResult:
        sid = self.session.session_id
        # The reason may quote a hook or a model (and so a secret): the caller prints it.
        return CycleResult(sid, self.cycle.id, verdict, self.log.redact(reason), self.phase,
                           tuple(self.visited),
                           self.generation, self.rt.store.path(sid))

    # -- hook transforms --------------------------------------------------------------
    def _check_start(self, d: dict[str, Any]) -> Result[Any]:
        checked = self.log.check(d, "hook_workflow_start_v1", where="WorkflowStart transform", actor="hook")
        if isinstance(checked, Err):
            return checked
        found = self.registry.cycle(d["cycle_id"])
        if isinstance(found, Err):
            return self.log.fail(found.error, layer="L8", actor="hook")
        if d["mode"] not in found.value.modes or d["session_id"] != self.session.session_id:
            return self.log.fail(DomainError("gate", ErrorCode.GATE_DENIED,
                                             f"WorkflowStart may not run cycle {d['cycle_id']!r} in mode "
                                             f"{d['mode']!r} or change the session"),
                                 layer="L8", actor="hook")
        return Ok(d)

    def _check_advance(self, d: dict[str, Any], src: str) -> Result[Any]:
        checked = self.log.check(d, "hook_phase_advance_v1", where="PhaseAdvance transform", actor="hook")
        if isinstance(checked, Err):
            return checked
        if d["to_phase"] not in self.cycle.phases:
            return self.log.fail(DomainError("config", ErrorCode.UNKNOWN_ID,
                                             f"PhaseAdvance names phase {d['to_phase']!r}, which is not "
                                             f"a phase of cycle {self.cycle.id!r} "
                                             f"({', '.join(self.cycle.phases)})"),
                                 layer="L8", actor="hook")
        if (d["cycle_id"], d["from_phase"], d["generation"]) != (self.cycle.id, src, self.generation):
            return self.log.fail(DomainError("gate", ErrorCode.GATE_DENIED, "PhaseAdvance may change "
                                             "to_phase only"), layer="L8", actor="hook")
        return Ok(d)

"""Flow audit checks, one event at a time: what the spec's Audit Completeness asks of the
events themselves.

- every llm.request answered once (llm.response or llm.error), every tool.invoke by one
  tool.result: by parent_id when the answer has one, else by call id, else in order
  (`Pairs`: only the requests not answered yet are kept);
- agent.transition moves from the state the agent is in; L8 phases likewise;
- every hook.fired names its hook and an allow/deny/transform decision (a deny says why),
  and a deny is honoured (the gated step does not follow: the deny waits for it);
- every schema.violation is refused before the run goes on (it waits for the next event
  that refuses or goes on), and every SCHEMA_INVALID failure has its schema.violation;
- a successful session shows every required event type.
"""

from __future__ import annotations

from array import array
from collections.abc import Callable
from typing import Any

from ...tools.dispatch import SERVED_ACTOR  # session.start's actor when an MCP client made the calls
from .ids import FullIds
from .model import Gap, denied_ran, schema_invalid
from .pairs import Exact, Pairs

REQUIRED_TYPES = ("session.start", "hook.fired", "skill.invoke", "agent.transition", "llm.request",
                  "llm.response", "tool.invoke", "tool.result", "worker.report", "skill.complete",
                  "session.close")
"""The spec's list for one successful session."""
SKILL_SCOPED = ("skill.invoke", "tool.invoke", "tool.result", "skill.complete")
"""Types a session without a skill cannot have: tools are reachable only in a skill's scope."""
L3_LOOP = ("skill.invoke", "agent.transition", "worker.report", "skill.complete")
"""Types of the Plan-Work-Review loop, which an L8 cycle's phases replace."""
L8_REQUIRED = ("workflow.started", "workflow.completed")
SERVED_REQUIRED = ("session.start", "hook.fired", "session.close")
DECISIONS = ("allow", "deny", "transform")
FAILED_STATES = ("FAIL", "FAILED", "REWORK", "ESCALATED")
PASS_ENDS = ("DONE", "ESCALATED", "FAILED")
"""A pass's terminal states: the Stop hook decides whether a new pass starts (from INTAKE)."""
HANDOFFS = ("lead.directive", "plan.created", "worker.report", "review.result",
            "advisor.opinion", "scaffold.plan", "role.output")
# A gating hook's deny must stop the step it gates: (gated event type, events that end the
# search for it). None: the step may not happen anywhere later in the session.
GATED: dict[str, tuple[str, tuple[str, ...] | None]] = {
    "SessionStart": ("llm.request", None),
    "UserPromptSubmit": ("llm.request", None),
    "SkillStart": ("skill.invoke", None),
    "WorkflowStart": ("workflow.started", None),
    "PreToolUse": ("tool.invoke", ("llm.request", "llm.response", "session.close")),
    "PhaseAdvance": ("workflow.phase_advanced", ("workflow.completed", "workflow.aborted", "session.close")),
    "Stop": ("agent.transition", None),  # a deny ends the loop: no pass after it
}
_STEP = {hook: i for i, hook in enumerate(GATED)}  # a hook's index in GATED.items(): model.denied_ran
PRESENT = frozenset((*REQUIRED_TYPES, *L8_REQUIRED))
_SCHEMA_CODE = "SCHEMA_INVALID"
UNKNOWN = object()
"""The cycle's entry phase before the first workflow.started is read."""
PENDING_CAP = 4096
# what an event of one type does: (type, id, parent_id, payload, seq, line, position)
Handler = Callable[[str, str, "str | None", "dict[str, Any]", int, int, int], None]


def _refuses(t: str, p: dict[str, Any]) -> bool:
    return (t in ("domain.error", "llm.error", "human.escalation", "workflow.aborted")
            or (t == "hook.fired" and p.get("decision") == "deny")
            or (t == "tool.result" and (p.get("ok") is False or "error" in p))
            or (t == "agent.transition" and p.get("to") in FAILED_STATES)
            or (t == "session.close" and p.get("ok") is False)
            # the refusal handed back to the model as the tool call's error
            or (t == "llm.request" and _SCHEMA_CODE in str(p.get("messages", ""))))


def _goes_on(t: str, p: dict[str, Any]) -> bool:
    return (t in ("tool.invoke", "llm.response", "workflow.phase_advanced",
                  "workflow.completed", *HANDOFFS)
            or (t == "session.close" and p.get("ok") is True))


class FlowFold:
    """The flow checks' state: open requests, the agent's state, denies and schema violations
    waiting on a later event, the cycle's phase, and which required types were seen."""

    def __init__(self, full: FullIds | None, phase: Any) -> None:
        self.llm = Pairs("llm.request", ("llm.response", "llm.error"), "call_id", "llm-pair",
                         "log the model's answer (llm.response, or llm.error when the call failed) "
                         "with parent_id = the request's id", full)
        self.tool = Pairs("tool.invoke", ("tool.result",), "id", "tool-pair",
                          "log tool.result with parent_id = the invoke's id, also when the tool fails",
                          full)
        self.transitions: list[Gap] = []
        self.state: str | None = None
        self.entered: int | None = None  # seq of the transition that entered `state`
        self.hooks: list[tuple[int, Gap]] = []  # (position of the hook.fired, gap)
        self.followed = array("Q")  # denied steps that ran, 5 ints each (to 2**64 - 1): denied_ran
        self.denies: list[tuple[int, str, int, str, tuple[str, ...] | None]] = []
        self.stops: set[str] = set()  # the types a pending deny gates or ends at
        self.schema: list[tuple[int, Gap]] = []
        self.violations: list[tuple[int, int, int, Any, Any]] = []  # pos, seq, line, schema_id, where
        self.seen_violation = False
        self.present: set[str] = set()
        self.workflow = False
        self.started: tuple[int, Any] | None = None  # first workflow.started: pos, entry_phase
        self.ends: list[Gap] = []
        self.end: tuple[str, int, int, int, Any] | None = None  # type, seq, line, pos, verdict
        self.phase: Any = phase  # UNKNOWN until the first workflow.started (or a to_phase)
        self.phase_gaps: list[tuple[int, Gap]] = []
        self.waiting: list[tuple[int, int, int, Any, Any]] = []  # phase advances awaiting the entry phase
        # what each type does, past the checks every event gets (a type not here: `handler`)
        self.handlers: dict[str, Handler | None] = {
            "llm.request": self.llm.request, "tool.invoke": self.tool.request,
            "llm.response": self.llm.answer, "llm.error": self.llm.answer,
            "tool.result": self.tool.answer, "agent.transition": self._transition,
            "hook.fired": self._hook}

    def handler(self, typ: str) -> Handler | None:
        """What an event of type `typ` does besides the checks every event gets."""
        return self._workflow if typ.startswith("workflow.") else None

    def event(self, typ: str, eid: str, pid: str | None, p: dict[str, Any], seq: int, n: int,
              pos: int) -> None:
        if typ in PRESENT:
            self.present.add(typ)
        if typ in self.stops:
            self.denied(typ, seq, n)
        if self.violations:
            refuses = _refuses(typ, p)
            if refuses or _goes_on(typ, p):
                for vpos, vseq, vline, sid, where in self.violations:
                    if not refuses:
                        self._unrefused(vpos, vseq, vline, sid, where, f"{typ} (seq {seq}) goes on")
                self.violations.clear()
        handlers = self.handlers
        handle = handlers[typ] if typ in handlers else self._workflow if typ.startswith("workflow.") else None
        if handle is not None:
            handle(typ, eid, pid, p, seq, n, pos)
        if typ == "schema.violation":
            self.seen_violation = True
            self.violations.append((pos, seq, n, p.get("schema_id", "?"), p.get("where", "?")))
        elif (not self.seen_violation and ("code" in p or "error" in p or typ == "session.close")
              and schema_invalid(typ, p)):
            self.unlogged(typ, seq, n, pos)

    def unlogged(self, typ: str, seq: int, n: int, pos: int) -> None:
        """The gap of an event reporting SCHEMA_INVALID with no schema.violation before it."""
        self.schema.append((pos, Gap("schema-violation", seq, n, f"{typ} reports SCHEMA_INVALID "
                                     "but no schema.violation was logged before it; log the "
                                     "violation (schema_id, where, violations)")))

    def _transition(self, typ: str, eid: str, pid: str | None, p: dict[str, Any], seq: int, n: int,
                    pos: int) -> None:
        to, frm = p.get("to"), p.get("from")
        if not isinstance(to, str) or not to:
            self.transitions.append(Gap("transition", seq, n, "agent.transition has no `to` state; "
                                                              "log {from, to}"))
            return
        if frm is not None:
            state = self.state
            now = state or "INTAKE"
            if frm != now and not (frm == "INTAKE" and (state is None or state in PASS_ENDS)):
                since = f" (entered at seq {self.entered})" if self.entered is not None else ""
                self.transitions.append(Gap("transition", seq, n, f"agent.transition from {frm} to "
                                            f"{to}, but the agent is in {now}{since}: {frm} was never "
                                            "entered, so a transition is missing from the log"))
        self.state, self.entered = to, seq

    def _hook(self, typ: str, eid: str, pid: str | None, p: dict[str, Any], seq: int, n: int,
              pos: int) -> None:
        hook, decision = p.get("hook"), p.get("decision")
        if not isinstance(hook, str) or not hook:
            self.hooks.append((pos, Gap("hook", seq, n, "hook.fired does not name its hook (payload.hook)")))
        if decision not in DECISIONS:
            self.hooks.append((pos, Gap("hook", seq, n, f"hook.fired {hook} has decision {decision!r}; "
                                                        "a hook decides allow, deny or transform")))
            return
        if decision != "deny":
            return
        if not p.get("reason"):
            self.hooks.append((pos, Gap("hook", seq, n, f"hook.fired {hook} denies without a reason; "
                                                        "a deny says why")))
        if hook in GATED:
            gated, until = GATED[hook]
            self.denies.append((pos, str(hook), seq, gated, until))
            self.stops.update((gated, *(until or ())))

    def denied(self, typ: str, seq: int, n: int) -> None:
        """A deny's search for the step it gates ends at that step (a gap) or at `until`
        (only an event of a type in `stops` can end one)."""
        keep = []
        for d in self.denies:
            pos, hook, dseq, gated, until = d
            if typ == gated:
                self.followed.extend((pos, seq, n, dseq, _STEP[hook]))
            elif until is None or typ not in until:
                keep.append(d)
        self.denies = keep
        self.stops.clear()
        for _, _, _, gated, until in keep:
            self.stops.update((gated, *(until or ())))

    def _unrefused(self, pos: int, seq: int, n: int, sid: Any, where: Any, then: str) -> None:
        self.schema.append((pos, Gap("schema-violation", seq, n, f"schema.violation of {sid} at "
                                     f"{where} is not refused: {then} without a deny, error, failed "
                                     "transition or not-ok close (fail closed)")))

    def _workflow(self, typ: str, eid: str, pid: str | None, p: dict[str, Any], seq: int, n: int,
                  pos: int) -> None:
        self.workflow = True
        if typ == "workflow.started":
            if self.started is None:
                self.started = (pos, p.get("entry_phase"))
                if self.phase is UNKNOWN:
                    self.phase = p.get("entry_phase")
                for wpos, wseq, wline, frm, to in self.waiting:
                    self._advance(wpos, wseq, wline, frm, to, p.get("entry_phase"))
                self.waiting = []
        elif typ in ("workflow.completed", "workflow.aborted"):
            if self.end is None:
                self.end = (typ, seq, n, pos, p.get("verdict"))
            else:
                self.ends.append(Gap("workflow", seq, n, f"a second end of the cycle (first "
                                                         f"{self.end[0]} (seq {self.end[1]}))"))
        elif typ == "workflow.phase_advanced":
            frm, to = p.get("from_phase"), p.get("to_phase")
            if self.phase is UNKNOWN:  # checked against the entry phase, once it is read
                if len(self.waiting) >= PENDING_CAP:
                    raise Exact
                self.waiting.append((pos, seq, n, frm, to))
                if to is not None:
                    self.phase = to
                return
            self._advance(pos, seq, n, frm, to, self.phase)
            self.phase = to if to is not None else self.phase

    def _advance(self, pos: int, seq: int, n: int, frm: Any, to: Any, phase: Any) -> None:
        if phase is not None and frm is not None and frm != phase:
            self.phase_gaps.append((pos, Gap("transition", seq, n, f"workflow.phase_advanced from "
                                             f"{frm} to {to}, but the cycle is in phase {phase}: a "
                                             "phase change is missing")))

    def finish(self, close: tuple[int, int, dict[str, Any]] | None, first: tuple[str, Any],
               notes: list[str]) -> list[Gap]:
        """Every flow gap in check order; `close` is the first session.close (seq, line,
        payload), `first` the first event's type and actor."""
        ok = close is not None and close[2].get("ok") is True
        gaps = self.llm.finish() + self.tool.finish() + self.transitions
        if ok and self.state not in (None, "DONE"):
            gaps.append(Gap("transition", close[0], close[1], f"the session closed ok but the "  # type: ignore[index]
                            f"agent's last transition is to {self.state}, not DONE"))
        hooks, self.followed = self.hooks + denied_ran(self.followed, tuple(GATED.items())), array("Q")
        gaps += [g for _, g in sorted(hooks, key=lambda x: x[0])]
        for vpos, vseq, vline, sid, where in self.violations:
            self._unrefused(vpos, vseq, vline, sid, where, "the log ends")
        gaps += [g for _, g in sorted(self.schema, key=lambda x: x[0])]
        gaps += self._workflow_gaps(close, ok)
        return gaps + self._required(ok, first, notes)

    def _workflow_gaps(self, close: tuple[int, int, dict[str, Any]] | None, ok: bool) -> list[Gap]:
        if not self.workflow:
            return []
        end, gaps = self.end, []
        if end is None:
            gaps.append(Gap("workflow", None, None, "the cycle never ended: log workflow.completed "
                                                    "{verdict} or workflow.aborted {reason}"))
        gaps += self.ends
        if end is not None and end[0] == "workflow.completed" and (self.started is None
                                                                   or self.started[0] > end[3]):
            gaps.append(Gap("workflow", end[1], end[2], "workflow.completed without an earlier "
                                                        "workflow.started"))
        gaps += [g for _, g in sorted(self.phase_gaps, key=lambda x: x[0])]
        done = end is not None and end[0] == "workflow.completed" and end[4] == "done"
        if close is not None and ok and end is not None and not done:
            gaps.append(Gap("workflow", close[0], close[1], f"the session closed ok but the cycle "
                                                            f"ended with {end[0]} (seq {end[1]}), not "
                                                            "workflow.completed verdict done"))
        return gaps

    def _required(self, ok: bool, first: tuple[str, Any], notes: list[str]) -> list[Gap]:
        """A successful session (closed ok) shows every required type; see REQUIRED_TYPES and
        the two documented exceptions (no skill; an L8 cycle)."""
        if not ok:
            return []
        present = self.present
        required = list(REQUIRED_TYPES)
        if self.workflow:
            required = [t for t in required if t not in L3_LOOP and t not in ("tool.invoke", "tool.result")]
            required += L8_REQUIRED
            notes.append("L8 session: the cycle's phases replace the Plan-Work-Review loop, so "
                         f"{', '.join(L3_LOOP)} are not required; {', '.join(L8_REQUIRED)} are")
        elif first[0] == "session.start" and first[1] == SERVED_ACTOR:
            required = list(SERVED_REQUIRED)
            notes.append("MCP-served session (session.start by mcp-client): an MCP client called "
                         "the tools, so only " + ", ".join(SERVED_REQUIRED) + " are required; "
                         "its tool pairs, hooks and schema violations are checked as always")
        elif not present & set(SKILL_SCOPED):
            required = [t for t in required if t not in SKILL_SCOPED]
            notes.append("no skill was selected: a session without a skill has no tool scope, so "
                         f"{', '.join(SKILL_SCOPED)} are not required")
        return [Gap("required-type", None, None, f"a successful session must have a {t} event; "
                                                 "none is in the log") for t in required if t not in present]

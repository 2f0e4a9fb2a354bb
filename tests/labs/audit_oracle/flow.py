"""The oracle's flow audit checks (as before the streaming fold).

What the spec's Audit Completeness asks of the events themselves.

- every llm.request answered once (llm.response or llm.error), every tool.invoke by one
  tool.result: by parent_id when the answer has one, else by call id, else in order;
- agent.transition moves from the state the agent is in; L8 phases likewise;
- every hook.fired names its hook and an allow/deny/transform decision (a deny says why),
  and a deny is honoured (the gated step does not follow);
- every schema.violation is refused before the run goes on, and every SCHEMA_INVALID
  failure has its schema.violation;
- a successful session shows every required event type.
"""

from __future__ import annotations

from collections.abc import Callable

from agentos_kernel.labs.audit.flowfold import (  # the spec's tables, shared; the logic is not
    DECISIONS,
    FAILED_STATES,
    GATED,
    HANDOFFS,
    L3_LOOP,
    L8_REQUIRED,
    PASS_ENDS,
    REQUIRED_TYPES,
    SERVED_REQUIRED,
    SKILL_SCOPED,
)
from agentos_kernel.labs.audit.model import Entry, Gap
from agentos_kernel.tools.dispatch import SERVED_ACTOR


def _pairs(entries: list[Entry], ask: str, answers: tuple[str, ...], key: str, check: str,
           fix: str) -> list[Gap]:
    gaps: list[Gap] = []
    by_id = {e.id: e for e in entries}
    open_: list[Entry] = []
    answered: dict[str, Entry] = {}
    for e in entries:
        if e.type == ask:
            open_.append(e)
            continue
        if e.type not in answers:
            continue
        if e.parent_id is not None:
            target = by_id.get(e.parent_id)
            if target is None:
                continue  # check_parents names the dangling parent_id
            if target.type != ask:
                gaps.append(e.gap(check, f"{e.type} answers {target.name()}, which is not a {ask}; "
                                         f"its parent_id must be the {ask}'s id"))
                continue
        else:
            target = _match(open_, e, key)
            if target is None:
                gaps.append(e.gap(check, f"{e.type} answers no {ask}: there is no unanswered {ask} "
                                         f"before it; {fix}"))
                continue
        if target.id in answered:
            gaps.append(e.gap(check, f"{target.name()} is answered twice (first by "
                                     f"{answered[target.id].name()}); one {ask}, one answer"))
            continue
        answered[target.id] = e
        if target in open_:
            open_.remove(target)
        mine, theirs = e.payload.get(key), target.payload.get(key)
        if mine is not None and theirs is not None and mine != theirs:
            gaps.append(e.gap(check, f"{e.type} has {key} {mine!r} but answers {target.name()} "
                                     f"with {key} {theirs!r}"))
    for e in entries:
        if e.type == ask and e.id not in answered:
            what = e.payload.get("name") or e.payload.get("role") or ""
            gaps.append(e.gap(check, f"{e.type}{f' {what}' if what else ''} has no "
                                     f"{' or '.join(answers)}; {fix}"))
    return gaps


def _match(open_: list[Entry], answer: Entry, key: str) -> Entry | None:
    """Without parent_id: the open request with the same call id, else with the same tool
    name, else the latest open one (a sequential runtime answers a call before it makes the
    next, so an unanswered call is then named, not the one after it)."""
    for field in (key, "name"):
        value = answer.payload.get(field)
        if value is not None:
            same = [r for r in open_ if r.payload.get(field) == value]
            if same:
                return same[-1]
    return open_[-1] if open_ else None


def check_llm_pairs(entries: list[Entry]) -> list[Gap]:
    return _pairs(entries, "llm.request", ("llm.response", "llm.error"), "call_id", "llm-pair",
                  "log the model's answer (llm.response, or llm.error when the call failed) "
                  "with parent_id = the request's id")


def check_tool_pairs(entries: list[Entry]) -> list[Gap]:
    return _pairs(entries, "tool.invoke", ("tool.result",), "id", "tool-pair",
                  "log tool.result with parent_id = the invoke's id, also when the tool fails")


def check_transitions(entries: list[Entry]) -> list[Gap]:
    """One PWR state machine per session: a transition leaves the state the last one entered
    (INTAKE at the start, and again at the start of a new pass after a pass's terminal
    state, DONE, ESCALATED or FAILED, when the Stop hook let the loop go on)."""
    gaps: list[Gap] = []
    state: str | None = None
    entered: Entry | None = None
    for e in entries:
        if e.type != "agent.transition":
            continue
        to, frm = e.payload.get("to"), e.payload.get("from")
        if not isinstance(to, str) or not to:
            gaps.append(e.gap("transition", "agent.transition has no `to` state; log {from, to}"))
            continue
        if frm is not None:
            now = state or "INTAKE"
            new_pass = frm == "INTAKE" and state in (None, *PASS_ENDS)
            if frm != now and not new_pass:
                since = f" (entered at seq {entered.seq})" if entered else ""
                gaps.append(e.gap("transition", f"agent.transition from {frm} to {to}, but the agent "
                                                f"is in {now}{since}: {frm} was never entered, so "
                                                "a transition is missing from the log"))
        state, entered = to, e
    close = _close(entries)
    if close is not None and close.payload.get("ok") is True and state not in (None, "DONE"):
        gaps.append(close.gap("transition", f"the session closed ok but the agent's last "
                                            f"transition is to {state}, not DONE"))
    return gaps


def check_hooks(entries: list[Entry]) -> list[Gap]:
    gaps: list[Gap] = []
    for i, e in enumerate(entries):
        if e.type != "hook.fired":
            continue
        hook, decision = e.payload.get("hook"), e.payload.get("decision")
        if not isinstance(hook, str) or not hook:
            gaps.append(e.gap("hook", "hook.fired does not name its hook (payload.hook)"))
        if decision not in DECISIONS:
            gaps.append(e.gap("hook", f"hook.fired {hook} has decision {decision!r}; a hook "
                                      "decides allow, deny or transform"))
            continue
        if decision == "deny" and not e.payload.get("reason"):
            gaps.append(e.gap("hook", f"hook.fired {hook} denies without a reason; a deny says why"))
        if decision == "deny" and hook in GATED:
            gated, until = GATED[hook]
            for later in entries[i + 1:]:
                if later.type == gated:
                    gaps.append(later.gap("hook", f"{later.type} follows the {hook} deny at seq "
                                                  f"{e.seq}: a denied step must not run"))
                    break
                if until is not None and later.type in until:
                    break
    return gaps


def _refuses(e: Entry) -> bool:
    p, t = e.payload, e.type
    return (t in ("domain.error", "llm.error", "human.escalation", "workflow.aborted")
            or (t == "hook.fired" and p.get("decision") == "deny")
            or (t == "tool.result" and (p.get("ok") is False or "error" in p))
            or (t == "agent.transition" and p.get("to") in FAILED_STATES)
            or (t == "session.close" and p.get("ok") is False)
            # the refusal handed back to the model as the tool call's error
            or (t == "llm.request" and "SCHEMA_INVALID" in str(p.get("messages", ""))))


def _goes_on(e: Entry) -> bool:
    return (e.type in ("tool.invoke", "llm.response", "workflow.phase_advanced",
                       "workflow.completed", *HANDOFFS)
            or (e.type == "session.close" and e.payload.get("ok") is True))


def check_schema_violations(entries: list[Entry]) -> list[Gap]:
    """A schema.violation is refused (a deny, an error, a failed state, a not-ok close, or
    the error handed back to the model) before the run goes on with the payload; and a
    SCHEMA_INVALID failure is preceded by the schema.violation it reports."""
    gaps: list[Gap] = []
    seen_violation = False
    for i, e in enumerate(entries):
        if e.type == "schema.violation":
            seen_violation = True
            sid, where = e.payload.get("schema_id", "?"), e.payload.get("where", "?")
            nxt = next((x for x in entries[i + 1:] if _refuses(x) or _goes_on(x)), None)
            if nxt is None or not _refuses(nxt):
                then = f"{nxt.name()} goes on" if nxt else "the log ends"
                gaps.append(e.gap("schema-violation", f"schema.violation of {sid} at {where} is not "
                                                      f"refused: {then} without a deny, error, failed "
                                                      "transition or not-ok close (fail closed)"))
        elif "SCHEMA_INVALID" in e.codes() and not seen_violation:
            gaps.append(e.gap("schema-violation", f"{e.type} reports SCHEMA_INVALID but no "
                                                  "schema.violation was logged before it; log the "
                                                  "violation (schema_id, where, violations)"))
    return gaps


def check_required(entries: list[Entry], notes: list[str]) -> list[Gap]:
    """A successful session (closed ok) shows every required type; see REQUIRED_TYPES and
    the two documented exceptions (no skill; an L8 cycle)."""
    close = _close(entries)
    if close is None or close.payload.get("ok") is not True:
        return []
    present = {e.type for e in entries}
    required = list(REQUIRED_TYPES)
    if any(t.startswith("workflow.") for t in present):
        required = [t for t in required if t not in L3_LOOP and t not in ("tool.invoke", "tool.result")]
        required += L8_REQUIRED
        notes.append("L8 session: the cycle's phases replace the Plan-Work-Review loop, so "
                     f"{', '.join(L3_LOOP)} are not required; {', '.join(L8_REQUIRED)} are")
    elif entries[0].type == "session.start" and entries[0].raw.get("actor") == SERVED_ACTOR:
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


def check_workflow(entries: list[Entry]) -> list[Gap]:
    """An L8 session: one terminal workflow event after workflow.started, phases advanced
    from the phase the cycle is in, and an ok close only for verdict done."""
    wf = [e for e in entries if e.type.startswith("workflow.")]
    if not wf:
        return []
    gaps: list[Gap] = []
    started = next((e for e in wf if e.type == "workflow.started"), None)
    ends = [e for e in wf if e.type in ("workflow.completed", "workflow.aborted")]
    if not ends:
        gaps.append(Gap("workflow", None, None, "the cycle never ended: log workflow.completed "
                                                "{verdict} or workflow.aborted {reason}"))
    gaps += [e.gap("workflow", f"a second end of the cycle (first {ends[0].name()})")
             for e in ends[1:]]
    if ends and ends[0].type == "workflow.completed" and (started is None
                                                           or started.pos > ends[0].pos):
        gaps.append(ends[0].gap("workflow", "workflow.completed without an earlier "
                                            "workflow.started"))
    phase = started.payload.get("entry_phase") if started else None
    for e in wf:
        if e.type != "workflow.phase_advanced":
            continue
        frm, to = e.payload.get("from_phase"), e.payload.get("to_phase")
        if phase is not None and frm is not None and frm != phase:
            gaps.append(e.gap("transition", f"workflow.phase_advanced from {frm} to {to}, but the "
                                            f"cycle is in phase {phase}: a phase change is missing"))
        phase = to if to is not None else phase
    close = _close(entries)
    done = ends and ends[0].type == "workflow.completed" and ends[0].payload.get("verdict") == "done"
    if close is not None and close.payload.get("ok") is True and ends and not done:
        gaps.append(close.gap("workflow", f"the session closed ok but the cycle ended with "
                                          f"{ends[0].name()}, not workflow.completed verdict done"))
    return gaps


def _close(entries: list[Entry]) -> Entry | None:
    return next((e for e in entries if e.type == "session.close"), None)


FLOW_CHECKS: tuple[Callable[[list[Entry]], list[Gap]], ...] = (
    check_llm_pairs, check_tool_pairs, check_transitions, check_hooks, check_schema_violations,
    check_workflow)


def run_flow(entries: list[Entry], notes: list[str]) -> list[Gap]:
    """Every flow check, then the required types."""
    gaps: list[Gap] = []
    for check in FLOW_CHECKS:
        gaps += check(entries)
    return gaps + check_required(entries, notes)

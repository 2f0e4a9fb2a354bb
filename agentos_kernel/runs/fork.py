"""Fork a session at event k: "what if the hook had denied here?" (issue 11).

A fork is a new session whose log begins with the parent's first k events, then a
`session.forked` event naming the parent and k, then whatever the runtime does live from
the snapshot at k, under the fork's own profile, hooks and fault plan.

- The parent's log is verified first (integrity.verify_session): a log whose chain or envelope
  does not verify is refused, since its events would be copied as if true. A torn final
  line (a killed writer) is no finding: the complete lines before it can be forked.
- The k events are copied through the fork's own SessionLog: the same type, actor and
  payload (the parent's session id inside a payload renamed to the fork's, as a re-run
  does), each schema-checked again, with the fork's ids, seq, clock and hash chain, and
  parent_id pointing at the copied event. So the fork verifies, audits and replays like any
  log, and `diff parent fork` lines the two up event for event up to k.
- Where the run resumes: at the start of a role's turn in a plan-work-review pass. Event k
  must be an `agent.transition` into LEAD, PLAN, WORK or REVIEW, before a Stop hook denied
  (the loop's end) and before the close; in a later pass (one a Stop hook allowed) not into
  LEAD, since what that Lead is told — how the last pass ended — is not in the log before
  its turn. At that point everything the rest of the pass needs is in the log (the prompt,
  the skill and its tool scope, this pass's directive, plan, report under review and last
  review's feedback) and nothing is half done: every model call and tool call before it has
  its answer. The resumed pass keeps its number, so the loop bound (max_iterations) counts
  the passes before it. Any other k is refused with the list of valid ones. A fork of an L8
  cycle is refused too (its engine has no resume point).
"""

from __future__ import annotations

import re
import warnings
from dataclasses import dataclass
from typing import Any

from ..errors import DomainError, Err, ErrorCode, Result
from ..kernel import Runtime
from ..roles.pwr import STAGES, Resume
from ..roles.session import RunResult, Session
from ..schemas.jsondiff import rename_session
from ..store.events import Event, TornTailWarning, check_session_id
from ..store.integrity import verify_session
from ..workspace import reference_dir

FORKED_SCHEMA = "event_session_forked_v1"
_TARGET = re.compile(r"^(?P<sid>[^@\s]+)@(?P<at>\d+)$")


@dataclass(frozen=True)
class ForkPoint:
    """An event a fork may resume after."""

    at: int
    """Its seq (1-based): the fork copies events 1..at."""
    stage: str
    """The role's turn that starts there: LEAD, PLAN, WORK or REVIEW."""
    attempt: int
    """The WORK/REVIEW attempt it begins (1 outside rework)."""

    def __str__(self) -> str:
        return f"{self.at} ({self.stage}{f' attempt {self.attempt}' if self.attempt > 1 else ''})"


def parse_target(text: str) -> tuple[str, int]:
    """`s0001@14` -> ("s0001", 14); ValueError says the form."""
    m = _TARGET.match(text.strip())
    if m is None:
        raise ValueError(f"{text!r} is not ID@K; name the session and the event to fork after, "
                         "e.g. s0001@14")
    problem = check_session_id(m["sid"])
    if problem:
        raise ValueError(problem)
    return m["sid"], int(m["at"])


def fork_points(events: list[Event]) -> list[ForkPoint]:
    """Where a fork of this log may resume (see the module docstring)."""
    if any(e.type == "workflow.started" for e in events):
        return []
    points = []
    passes = 0
    for i, e in enumerate(events, 1):
        p = _payload(e)
        if e.type == "session.close" or (e.type == "hook.fired" and p.get("hook") == "Stop"
                                         and p.get("decision") == "deny"):
            break
        if e.type != "agent.transition" or p.get("to") not in STAGES or p.get("from") == "ADVISE":
            continue
        passes += p.get("from") == "INTAKE"
        if p["to"] != "LEAD" or passes == 1:
            points.append(ForkPoint(i, p["to"], int(p.get("attempt") or 1)))
    return points


def fork(rt: Runtime, parent: str, at: int, *, session_id: str | None = None,
         faults: str | None = None) -> Result[RunResult]:
    """Fork `parent` after its event `at` and run the rest live on `rt` (its profile, hooks
    and fault plan; `faults` is the plan's name, recorded in session.forked). Err without a
    session when it cannot fork: unknown parent, a log that does not verify, a k that is
    not a resume point, a redacted prompt, a skill the workspace no longer has."""
    problem = check_session_id(parent)
    if problem:
        return _refused(ErrorCode.SESSION_ID_INVALID, problem)
    if FORKED_SCHEMA not in rt.schemas:  # a workspace made before forks existed
        return _refused(ErrorCode.SCHEMA_NOT_FOUND, (
            f"this workspace's schemas/ has no {FORKED_SCHEMA} (the payload of session.forked); "
            f"copy it from {reference_dir() / 'schemas' / 'events' / (FORKED_SCHEMA + '.json')}"))
    if not rt.store.exists(parent):
        return _refused(ErrorCode.UNKNOWN_ID, f"no session {parent!r} in {rt.workspace.sessions}")
    report = verify_session(rt.store, parent)
    broken = report.broken  # a torn final line is only not forked
    if broken is not None:
        where = f"line {broken.line}: " if broken.line else ""
        return _refused(ErrorCode.CONFIG_INVALID,
                        f"{parent} does not verify ({where}{broken.kind}: "
                        f"{broken.message}); a fork copies its events as true, so it is "
                        f"refused (details: agentos verify {parent})")
    with warnings.catch_warnings():  # a torn final line is not forked; verify reported it
        warnings.simplefilter("ignore", TornTailWarning)
        events = rt.events(parent)
    prefix = events[:at]
    point = next((p for p in fork_points(events) if p.at == at), None)
    if point is None:
        return _refused(ErrorCode.CONFIG_INVALID, _not_a_point(parent, at, events))
    last = prefix[-1]
    forked = {"parent_session": parent, "at": at, "parent_event_id": last.id,
              "parent_chain": last.chain, "resumes": point.stage, "attempt": point.attempt,
              "profile": rt.profile.name, "provider": rt.profile.provider,
              "model": rt.profile.model, "faults": faults}
    return resume(rt, prefix, forked, parent, session_id=session_id)


def resume(rt: Runtime, prefix: list[Event], forked: dict[str, Any], source: str, *,
           session_id: str | None = None, skip_calls: Any = None) -> Result[RunResult]:
    """Open a session, copy `prefix` (a log's events 1..k, from session `source`), append
    `session.forked` and run the rest live. rerun.py calls this too, to re-run a fork.
    `skip_calls(n)` is told how many model calls the prefix answered."""
    state = _state(rt, prefix, forked["resumes"], forked.get("attempt", 1))
    if isinstance(state, Err):
        return state
    prompt, skill, allowed, stage = state
    s = rt.open_session(session_id)
    if isinstance(s, Err):
        return s
    with rt.guarded(s):
        last = _copy(s, prefix, source)
        s.log.append("session.forked", "system", forked, last)
        s.skill, s.allowed_tools = skill, allowed
        s.calls = sum(e.type == "llm.request" for e in prefix)
        if skip_calls is not None:
            skip_calls(s.calls)
        return rt.run_passes(s, prompt, stage)


def _copy(s: Session, prefix: list[Event], source: str) -> str:
    """Append the prefix to the fork's log; the id of its last copied event."""
    ids: dict[str, str] = {}
    for e in prefix:
        payload = rename_session(e.payload, source, s.session_id)
        ids[e.id] = s.log.append(e.type, e.actor, payload, ids.get(e.parent_id or "")).id
    return ids[prefix[-1].id]


def _state(rt: Runtime, prefix: list[Event], stage: str, attempt: int
           ) -> tuple[str, Any, frozenset[str], Resume] | Err:
    start = _payload(prefix[0]) if prefix and prefix[0].type == "session.start" else {}
    prompt = start.get("prompt")
    if not isinstance(prompt, str) or "prompt_sha256" not in start:
        return _refused(ErrorCode.CONFIG_INVALID,
                        "the parent's prompt was redacted in its log (or it has no session.start), "
                        "so the rest of the request cannot be run from it")
    for e in prefix:  # a UserPromptSubmit transform is what the roles were given
        p = _payload(e)
        if e.type == "hook.fired" and p.get("hook") == "UserPromptSubmit" \
                and isinstance(p.get("output"), dict) and "prompt" in p["output"]:
            prompt = p["output"]["prompt"]
    starts = [i for i, e in enumerate(prefix) if e.type == "agent.transition"
              and _payload(e).get("from") == "INTAKE"]  # each pass's INTAKE -> LEAD
    if len(starts) > rt.profile.max_iterations:
        return _refused(ErrorCode.CONFIG_INVALID, f"the fork resumes pass {len(starts)}, past "
                        f"this profile's max_iterations ({rt.profile.max_iterations})")
    last = {e.type: _payload(e) for e in prefix}  # the latest payload of each type
    this_pass = {e.type: _payload(e) for e in prefix[starts[-1] if starts else 0:]}
    skill, allowed = None, frozenset[str]()
    if "skill.invoke" in last:
        name = last["skill.invoke"].get("skill")
        if name not in rt.skills.skills:
            return _refused(ErrorCode.UNKNOWN_ID, f"the parent ran skill {name!r}, which this "
                            "workspace no longer has; the fork cannot go on without it")
        skill, allowed = rt.skills.skills[name], frozenset(last["skill.invoke"]["allowed_tools"])
    # What the turns before `stage` handed on (pwr.run_pwr takes them from here, not a model):
    # a log this runtime wrote has each; one re-chained by hand may not.
    for handed in ("lead.directive", "plan.created", "worker.report")[:STAGES.index(stage)]:
        if handed not in this_pass:
            return _refused(ErrorCode.CONFIG_INVALID, f"the parent's log has no {handed} before "
                            f"its {stage} transition, so the fork has nothing to hand on there")
    review = this_pass.get("review.result", {})
    return prompt, skill, allowed, Resume(
        stage, attempt, this_pass.get("lead.directive"), this_pass.get("plan.created"),
        this_pass.get("worker.report"),
        review.get("feedback") if review.get("verdict") == "fail" else None, max(len(starts), 1))


def _not_a_point(parent: str, at: int, events: list[Event]) -> str:
    points = fork_points(events)
    if not points:
        why = ("it ran an L8 cycle" if any(e.type == "workflow.started" for e in events)
               else "no role's turn started in it")
        return f"{parent} cannot be forked: {why}"
    what = (f"event {at} is a {events[at - 1].type}" if 1 <= at <= len(events)
            else f"it has events 1..{len(events)}")
    return (f"cannot fork {parent}@{at}: {what}; a fork resumes at the start of a role's turn "
            f"(an agent.transition into LEAD, PLAN, WORK or REVIEW before a Stop hook denied; "
            f"LEAD only in the first pass). "
            f"Valid K for {parent}: {', '.join(str(p) for p in points)}")


def _payload(e: Event) -> dict[str, Any]:
    return e.payload if isinstance(e.payload, dict) else {}


def _refused(code: str, message: str) -> Err:
    return Err(DomainError("config", code, message))


__all__ = ["ForkPoint", "fork", "fork_points", "parse_target", "resume"]

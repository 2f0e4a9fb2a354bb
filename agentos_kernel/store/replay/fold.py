"""L4 replay: a pure fold of a session's events into a Snapshot (I-1).

Nothing is re-executed and nothing is written: no provider, tool or hook is touched.
The fold streams, so memory stays flat in the log's length. `at=N` gives the state
after the first N events.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Iterable
from copy import deepcopy
from dataclasses import asdict
from itertools import islice
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .snapshot import LISTS, Cost, Mark, Snapshot

if TYPE_CHECKING:
    from ..events import Event, TornTail


_NOT_SCALAR = frozenset({*LISTS, "cost", "roles", "workflow"})


def tool_item(p: dict[str, Any]) -> dict[str, Any]:
    """A tools_invoked entry from a tool.invoke payload."""
    return {"id": p.get("id"), "name": p.get("name"), "args": p.get("args")}


def hook_item(p: dict[str, Any]) -> dict[str, Any]:
    """A hook_decisions entry from a hook.fired payload."""
    return {"hook": p.get("hook"), "handler": p.get("handler"), "decision": p.get("decision"),
            "reason": p.get("reason")}


def violation_item(p: dict[str, Any]) -> dict[str, Any]:
    """A schema_violations entry from a schema.violation payload (its first violation)."""
    first = (p.get("violations") or [{}])[0]
    return {"schema_id": p.get("schema_id"), "where": p.get("where"), "path": first.get("path"),
            "message": first.get("message")}


def error_item(p: dict[str, Any]) -> dict[str, Any]:
    """An errors entry from a domain.error payload."""
    return {"code": p.get("code"), "layer": p.get("layer"), "message": p.get("message")}


FOLDED_TYPES = frozenset({
    "llm.response", "tool.invoke", "agent.transition", "worker.report", "hook.fired", "schema.violation",
    "domain.error", "skill.invoke", "human.escalation", "event.amended", "session.close"})
"""The event types (with workflow.*) the fold reads beyond counting them."""
_COUNTED_ONLY = frozenset({b"llm.request", b"tool.result", b"session.start", b"lead.directive",
                           b"plan.created", b"review.result", b"skill.complete", b"llm.error"})
# Types the fold only counts, as bytes: fold_path(parse_all=False) counts their lines unparsed.
# A closed list, not "not in FOLDED_TYPES": a type added to the fold later is parsed by default.
_HOOK = re.compile(rb'"payload":\{(?:"cause":"[a-z_]*",)?"decision":"([a-z_]*)"')
# A canonical hook.fired payload's first keys (sorted): an optional cause, then the decision.
# Matched only where the envelope's payload begins (the first '"payload":{' of a canonical
# line: the keys before it hold strings, whose quotes are escaped); anything else is parsed.


_BLANK = asdict(Snapshot())
# The empty snapshot as the fold's dict, made once: asdict walks the dataclass each time,
# which was a fifth of replaying the canonical request's 32 events (`%agent` does it).


class _Fold:
    def __init__(self) -> None:
        self.d: dict[str, Any] = dict(_BLANK)
        self.d["cost"] = dict(_BLANK["cost"])
        self.d["roles"] = {}
        for k in LISTS:
            self.d[k] = []
        # worker.report ids in order, for amendments: only membership and the latest matter.
        self.reports: dict[str, None] = {}

    def mark(self) -> Mark:
        """The fold's state now, without copying the append-only lists."""
        d = self.d
        scalars = {k: v for k, v in d.items() if k not in _NOT_SCALAR}
        return Mark(scalars, dict(d["cost"]), dict(d["roles"]), deepcopy(d["workflow"]),
                    tuple(len(d[k]) for k in LISTS), len(self.reports))

    @classmethod
    def resume(cls, mark: Mark, ahead: _Fold) -> _Fold:
        """A fold in the state `mark` recorded, given `ahead`: the fold that made the mark
        and went on (its lists still begin with what they held then: they only grow)."""
        fold = cls()
        d = fold.d
        d.update(mark.scalars)
        d["cost"], d["roles"], d["workflow"] = dict(mark.cost), dict(mark.roles), deepcopy(mark.workflow)
        for k, n in zip(LISTS, mark.lengths, strict=True):
            d[k] = ahead.d[k][:n]
        fold.reports = dict.fromkeys(islice(ahead.reports, mark.reports))
        return fold

    def step(self, ev: Event) -> None:
        self.fold(ev.id, ev.session_id, ev.type, ev.actor, ev.payload)

    def hook_line(self, decision: str, line: bytes) -> bool:
        """Fold a canonical hook.fired line from its decision alone (its payload parsed only
        if it is ever shown); False: this fold needs the line parsed."""
        return False

    def fold(self, eid: str, session_id: str, t: str, actor: str, payload: Any) -> None:
        d, p = self.d, payload if isinstance(payload, dict) else {}
        d["events"] += 1
        d["last_event_id"] = eid
        d["session_id"] = d["session_id"] or session_id
        if t == "llm.response":
            self.response(actor, p)
        elif t == "tool.invoke":
            d["tools_invoked"].append(tool_item(p))
        elif t == "agent.transition":
            self.transition(actor, p)
        elif t == "worker.report":
            d["output"] = p.get("output")
            self.reports[eid] = None
        elif t == "hook.fired":
            d["hook_decisions"].append(hook_item(p))
        elif t == "schema.violation":
            d["schema_violations"].append(violation_item(p))
        elif t == "domain.error":
            d["errors"].append(error_item(p))
        elif t == "skill.invoke":
            d["skill"] = p.get("skill")
        elif t == "human.escalation":
            d["escalated"] = True
        elif t == "event.amended":
            d["amendments"] += 1
            if p.get("target_id") in self.reports and p.get("field") == "output" \
                    and p["target_id"] == next(reversed(self.reports)):
                d["output"] = p.get("value")
        elif t == "session.close":
            d["closed"] = True
            d["ok"] = bool(p.get("ok"))
            d["close_reason"] = p.get("reason")
        elif t.startswith("workflow."):
            self._workflow(t, p)

    def response(self, actor: str, p: dict[str, Any]) -> None:
        """An llm.response's usage and cost (the two most frequent types have a method of
        their own: summary._BoundedFold.take calls them without `fold`'s dispatch)."""
        d, cost = self.d, self.d["cost"]
        usage = p.get("usage", {})
        cost["input_tokens"] += int(usage.get("input_tokens", 0))
        cost["output_tokens"] += int(usage.get("output_tokens", 0))
        cost["cost_usd"] = round(cost["cost_usd"] + float(usage.get("cost_usd", 0)), 8)
        d["llm_calls"] += 1

    def transition(self, actor: str, p: dict[str, Any]) -> None:
        """An agent.transition: the state, the role's last state, rework."""
        d, to = self.d, p.get("to")
        d["state"] = to
        d["roles"][actor] = to
        if to == "REWORK":
            d["rework_count"] += 1

    def _workflow(self, t: str, p: dict[str, Any]) -> None:
        w = self.d["workflow"]
        if t == "workflow.started" or w is None:
            entry = p.get("entry_phase") if t == "workflow.started" else None
            w = self.d["workflow"] = {"cycle_id": p.get("cycle_id"), "mode": p.get("mode"),
                                      "phase": entry, "verdict": None, "reason": None,
                                      "visited": [entry] if entry else [], "policy_decisions": 0}
        if t == "workflow.phase_advanced":
            w["phase"] = p.get("to_phase")
            if p.get("from_phase") and not w["visited"]:
                w["visited"].append(p["from_phase"])
            w["visited"].append(p.get("to_phase"))
        elif t == "workflow.policy_gated":
            w["policy_decisions"] += 1
        elif t in ("workflow.completed", "workflow.aborted"):
            w["verdict"] = p.get("verdict", "abort")
            w["reason"] = p.get("reason")

    def snapshot(self) -> Snapshot:
        d = dict(self.d)
        d["cost"] = Cost(**d["cost"])
        for k in LISTS:
            d[k] = tuple(d[k])
        # Copies of what the fold keeps mutating, so a snapshot never changes after the fact
        # (replay_steps hands out one per event).
        d["roles"] = dict(d["roles"])
        if d["workflow"] is not None:
            d["workflow"] = deepcopy(d["workflow"])
        return Snapshot(**d)


def replay(events: Iterable[Event], at: int | None = None) -> Snapshot:
    """Fold events into a Snapshot; with `at`, stop after the first `at` events."""
    fold = _Fold()
    for i, ev in enumerate(events):
        if at is not None and i >= at:
            break
        try:
            fold.step(ev)
        except _WRONG_TYPES as exc:
            from ..events import LogError

            raise LogError(f"event {i + 1} ({ev.id}): {_wrong_types(ev.type, exc)}") from None
    return fold.snapshot()


# What the fold raises on a payload whose fields have the wrong JSON types (a hand-edited or
# foreign log: our writer checks every payload against its schema before it is appended).
_WRONG_TYPES = (AttributeError, TypeError, ValueError, IndexError, OverflowError)
WRONG_TYPES = _WRONG_TYPES


def _wrong_types(t: object, exc: Exception) -> str:
    return (f"payload: a field of this {t!r} event has the wrong JSON type ({exc}); "
            "check it with `agentos verify` and `agentos audit`")


def replay_path(path: Path, at: int | None = None,
                on_torn: Callable[[TornTail], None] | None = None) -> Snapshot:
    """`replay` straight from a JSONL log: the same fold over the parsed lines, without
    building Event objects (the hot path of `agentos replay` on long logs). A torn final
    line is set aside and reported as read_log does (events.log_lines)."""
    fold = _Fold()
    fold_path(path, fold, at, on_torn)
    return fold.snapshot()


def fold_path(path: Path, fold: _Fold, at: int | None = None,
              on_torn: Callable[[TornTail], None] | None = None, *, parse_all: bool = True) -> None:
    """Fold the first `at` events (all when None) of the log at `path` into `fold`. Each line
    is parsed and checked for the event fields the fold reads; an event of a type the fold
    does not read (not in FOLDED_TYPES nor workflow.*) is only counted. Without `parse_all`,
    such a line is counted from its bytes when it is canonical (its type is its last field)
    and not parsed at all; the first and the last event are always parsed. Blank lines and keys
    held twice (read last-wins) are for `agentos verify` to report, as in events.log_lines."""
    import orjson  # here, not at the top: `import agentos_kernel` imports this module

    from ..events import LogError, TornTail, report_torn
    step, d, folded, limit = fold.fold, fold.d, FOLDED_TYPES, sys.maxsize if at is None else at
    skipped: tuple[int, bytes] | None = None  # the last line counted from its bytes
    by_bytes, only = not parse_all, _COUNTED_ONLY
    with Path(path).open("rb") as f:  # log_lines' loop, inlined: this is the hot path
        n = 0
        for lineno, line in enumerate(f, 1):
            if line[0] != 0x7B and not line.strip():  # canonical lines start with "{"
                if not line.endswith(b"\n") and n < limit:  # whitespace as the last segment: torn
                    report_torn(TornTail(Path(path), lineno, f.tell() - len(line), len(line)), on_torn)
                    break
                continue
            if n >= limit:
                break
            if by_bytes and n and line[-3:] == b'"}\n':
                t_at = line.rfind(b',"type":"')
                t_bytes = line[t_at + 9:-3]
                if t_at > 0 and (t_bytes in only or (
                        t_bytes == b"hook.fired" and (m := _HOOK.match(line, line.find(b'"payload":{')))
                        and fold.hook_line(m[1].decode(), line))):
                    d["events"] += 1
                    skipped = lineno, line
                    n += 1
                    continue
            skipped = None
            try:
                e = orjson.loads(line)
                t = e["type"]
                if type(t) is not str:
                    raise LogError(f"{path}:{lineno}: type: must be a string")
                eid, sid, actor, payload = e["id"], e["session_id"], e["actor"], e["payload"]
                if t in folded or t.startswith("workflow."):
                    step(eid, sid, t, actor, payload)
                else:  # what fold() does for every event, inlined for the ones it only counts
                    d["events"] += 1
                    d["last_event_id"] = eid
                    d["session_id"] = d["session_id"] or sid
            except LogError:
                raise
            except orjson.JSONDecodeError as exc:
                if not line.endswith(b"\n"):  # the final segment: a torn line, set aside
                    report_torn(TornTail(Path(path), lineno, f.tell() - len(line), len(line)), on_torn)
                    break
                raise LogError(f"{path}:{lineno}: -: not JSON ({exc})") from None
            except KeyError as exc:
                raise LogError(f"{path}:{lineno}: {exc.args[0] if exc.args else '-'}: "
                               "required event field is missing") from None
            except TypeError as exc:
                if not isinstance(e, dict):
                    raise LogError(f"{path}:{lineno}: -: an event must be a JSON object") from None
                raise LogError(f"{path}:{lineno}: {_wrong_types(e.get('type'), exc)}") from None
            except _WRONG_TYPES as exc:
                raise LogError(f"{path}:{lineno}: {_wrong_types(e.get('type'), exc)}") from None
            n += 1
    if skipped is not None:  # the last event was only counted: its id is the snapshot's
        lineno, line = skipped
        try:
            d["last_event_id"] = orjson.loads(line)["id"]
        except (orjson.JSONDecodeError, KeyError, TypeError):
            raise LogError(f"{path}:{lineno}: id: the last event is not a JSON object with an id") from None


def replay_steps(events: Iterable[Event]) -> Iterable[tuple[Event, Snapshot]]:
    """Each event with the snapshot right after it (for steppers and scrubbers)."""
    fold = _Fold()
    for i, ev in enumerate(events):
        try:
            fold.step(ev)
        except _WRONG_TYPES as exc:
            from ..events import LogError

            raise LogError(f"event {i + 1} ({ev.id}): {_wrong_types(ev.type, exc)}") from None
        yield ev, fold.snapshot()

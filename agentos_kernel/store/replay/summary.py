"""L4 replay in bounded memory: a session's state as counts and its most recent items.

A snapshot_v1 keeps every tool call and hook decision, so replaying a log of a million
events holds a million small dicts (≈ 120 MB). `summarize_path` runs the same fold over
the same lines but keeps, for each of those lists, how many items there were, a tally by
decision / tool name, and only the last `recent` items: memory no longer grows with the log.
Its JSON form is snapshot_v2 (schemas/snapshot_v2.json); snapshot_v1 is unchanged and
still what `replay` / `replay_path` return. Every scalar field is the one v1 has.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .fold import (
    _COUNTED_ONLY,
    LISTS,
    WRONG_TYPES,
    Cost,
    _Fold,
    _wrong_types,
    error_item,
    fold_path,
    hook_item,
    tool_item,
    violation_item,
)
from .summary_steps import cost_step, field_step, tally_step, transition_step

if TYPE_CHECKING:
    from ..events import Event, TornTail

RECENT = 20
"""How many of the latest tool calls, hook decisions, violations and errors a summary keeps."""
_BUILD = {"tools_invoked": tool_item, "hook_decisions": hook_item, "schema_violations": violation_item,
          "errors": error_item}
_NOT_A_STRING = "(not a string)"
_LISTED = {"hook.fired": "hook_decisions", "tool.invoke": "tools_invoked"}
_COUNTED = frozenset(t.decode() for t in _COUNTED_ONLY)
"""Types the fold only counts (fold._COUNTED_ONLY, as str)."""
FAST_STEPS = True
"""`for_type` and `take` use summary_steps' steps (off: the fold's own, which the tests compare
them with)."""
_AFTER = frozenset({"schema.violation", "domain.error", "worker.report", "workflow.started",
                    "workflow.phase_advanced"})
"""Types whose fold grows something a summary bounds or counts afterwards."""


@dataclass(frozen=True)
class SnapshotSummary:
    """A session's state recomputed from its log in bounded memory (snapshot_v2)."""

    session_id: str | None = None
    """Session id, from the first event."""
    events: int = 0
    """How many events were folded."""
    last_event_id: str | None = None
    """Id of the last event folded."""
    closed: bool = False
    """A session.close was seen."""
    ok: bool | None = None
    """The close's verdict (None while open)."""
    output: str | None = None
    """The latest worker output (amendments applied)."""
    close_reason: str | None = None
    """Why the session closed, when it says."""
    state: str | None = None
    """Current Plan-Work-Review state."""
    roles: dict[str, str] = field(default_factory=dict)
    """Role -> the last state that role moved the session to."""
    skill: str | None = None
    """Selected skill."""
    cost: Cost = field(default_factory=Cost)
    """Usage and cost."""
    llm_calls: int = 0
    """llm.response events seen."""
    rework_count: int = 0
    """Transitions into REWORK."""
    escalated: bool = False
    """A human.escalation was recorded."""
    amendments: int = 0
    """event.amended corrections applied."""
    workflow: dict[str, Any] | None = None
    """L8 cycle as in v1, but `visited` holds only the last `recent` phases entered."""
    counts: dict[str, int] = field(default_factory=dict)
    """tools_invoked, hook_decisions, schema_violations, errors -> how many the log holds."""
    hook_decision_counts: dict[str, int] = field(default_factory=dict)
    """Hook decision (allow, deny, transform ...) -> how many."""
    tool_counts: dict[str, int] = field(default_factory=dict)
    """Tool name -> how many tool.invoke events named it."""
    recent: dict[str, tuple[dict[str, Any], ...]] = field(default_factory=dict)
    """The same four lists as in v1, each cut to its last `recent_limit` items, oldest first."""
    recent_limit: int = RECENT
    """How many items `recent` keeps per list."""

    def to_dict(self) -> dict[str, Any]:
        """The snapshot_v2 JSON object."""
        d = asdict(self)
        d["recent"] = {k: list(v) for k, v in self.recent.items()}
        d["schema_version"] = "v2"
        return d


class _BoundedFold(_Fold):
    """_Fold with the append-only lists kept as counts, tallies and the last `recent` items."""

    def __init__(self, recent: int) -> None:
        super().__init__()
        if recent < 0:
            raise ValueError(f"recent must be 0 or more, not {recent}")
        self.recent = recent
        for k in LISTS:
            self.d[k] = deque(maxlen=recent)
        self.counts = dict.fromkeys(("schema_violations", "errors"), 0)
        # The other two counts are these tallies' sums.
        self.tallies: dict[str, dict[str, int]] = {"hook_decisions": {}, "tools_invoked": {}}
        self.last: dict[str, Any] | None = None  # the last event `take` took
        self.counted = 0  # the events `take` did not pass to `fold`
        self.failed = False  # `take` met a payload that does not fold
        self.total: int | None = None  # all the events of a verify pass (`end`), when it told
        # The types `take` folds by a step of their own (llm.response, agent.transition: their
        # step alone; hook decisions, tool calls: tallied and kept as is).
        self._own: dict[str, Callable[[dict[str, Any]], None]] = {
            "hook.fired": self._hook, "tool.invoke": self._tool,
            "llm.response": partial(self._own_step, _Fold.response),
            "agent.transition": partial(self._own_step, _Fold.transition)}
        self._fields: dict[str, Callable[[dict[str, Any]], None]] = {}  # for_type's, else `_other`
        if FAST_STEPS:  # the same steps, one call each, the cost summed in units (summary_steps)
            tallies, d = self.tallies, self.d
            self._own = {"hook.fired": tally_step(tallies["hook_decisions"], d["hook_decisions"], "decision"),
                         "tool.invoke": tally_step(tallies["tools_invoked"], d["tools_invoked"], "name"),
                         "llm.response": cost_step(self.d, self._own["llm.response"]),
                         "agent.transition": transition_step(self, WRONG_TYPES)}
            self._fields = {t: field_step(self, t) for t in ("skill.invoke", "worker.report")}

    def fold(self, eid: str, session_id: str, t: str, actor: str, payload: Any) -> None:
        key = _LISTED.get(t)
        if key is None:
            _Fold.fold(self, eid, session_id, t, actor, payload)
            if t in _AFTER:
                self._after(t, eid)
            return
        # Hook decisions and tool calls are most of a long log: their payload is kept as is
        # among the recent ones (the v1 item is built from it by `summary`), never copied.
        d = self.d
        d["events"] += 1
        d["last_event_id"] = eid
        if not d["session_id"]:
            d["session_id"] = session_id
        self._tally(key, payload)

    def _tally(self, key: str, payload: Any) -> None:
        p = payload if type(payload) is dict else {}
        name = p.get("decision") if key == "hook_decisions" else p.get("name")
        if type(name) is not str:
            name = _NOT_A_STRING
        tally = self.tallies[key]
        tally[name] = tally.get(name, 0) + 1
        self.d[key].append(p)

    def take(self, e: dict[str, Any]) -> None:
        """Fold one event dict of a log that verified (`Runtime.verified_summary`), doing only
        what the type needs: a type the fold only counts is counted, a hook decision or tool
        call tallied and kept as is; `events`, `last_event_id` and `session_id` are set once by
        `summary` (the events of a log that verified name one session). A payload that does
        not fold sets `failed` (the summary's own pass names it)."""
        self.last = e
        t = e["type"]
        if t in _COUNTED:
            self.counted += 1
            return
        own = self._own.get(t)
        if own is None:
            self._other(e)
            return
        self.counted += 1
        own(e)

    def _other(self, e: dict[str, Any]) -> None:
        t = e["type"]
        try:  # what `fold` does for a type it does not bound, without its own dispatch
            step = _BoundedFold.fold if t in _AFTER else _Fold.fold
            step(self, e["id"], e["session_id"], t, e["actor"], e["payload"])
        except WRONG_TYPES:
            self.failed = True

    def for_type(self, t: str) -> Callable[[dict[str, Any]], None] | None:
        """What a verify pass's fast loop calls for an event of type `t` (integrity.Folding):
        `take`'s work for that type alone, or None for a type only counted (`end` gives the
        count of all the events and the last one)."""
        return None if t in _COUNTED else self._own.get(t) or self._fields.get(t, self._other)

    def end(self, events: int, last: dict[str, Any] | None) -> None:
        """The verify pass read `events` events, `last` the last of them (integrity.Folding)."""
        self.total, self.last = events, last

    def _hook(self, e: dict[str, Any]) -> None:
        self._tally("hook_decisions", e["payload"])

    def _tool(self, e: dict[str, Any]) -> None:
        self._tally("tools_invoked", e["payload"])

    def _own_step(self, step: Callable[[_Fold, str, dict[str, Any]], None], e: dict[str, Any]) -> None:
        p = e["payload"]
        try:
            step(self, e["actor"], p if type(p) is dict else {})
        except WRONG_TYPES:
            self.failed = True

    def hook_line(self, decision: str, line: bytes) -> bool:
        # Kept as bytes among the recent ones; only the last `recent` are ever parsed.
        tally = self.tallies["hook_decisions"]
        tally[decision] = tally.get(decision, 0) + 1
        self.d["hook_decisions"].append(line)
        return True

    def _after(self, t: str, eid: str) -> None:
        if t == "schema.violation":
            self.counts["schema_violations"] += 1
        elif t == "domain.error":
            self.counts["errors"] += 1
        elif t == "worker.report":
            if len(self.reports) > 1:
                self.reports = {eid: None}  # an amendment only ever applies to the latest report
        elif self.d["workflow"] is not None:
            visited = self.d["workflow"]["visited"]
            del visited[:-self.recent or len(visited)]

    def summary(self) -> SnapshotSummary:
        d = {k: v for k, v in self.d.items() if k not in LISTS}
        if self.last is not None:  # what `fold` sets for every event, for the ones `take` took
            d["events"] = self.total if self.total is not None else d["events"] + self.counted
            d["last_event_id"] = self.last["id"]
            d["session_id"] = d["session_id"] or self.last["session_id"]
        d["cost"] = Cost(**d["cost"])
        d["roles"] = dict(d["roles"])
        if d["workflow"] is not None:
            d["workflow"] = {**d["workflow"], "visited": list(d["workflow"]["visited"])}
        recent = {k: tuple(self.d[k]) for k in LISTS}
        for k in ("tools_invoked", "hook_decisions"):  # payloads kept as is: make them v1 items
            recent[k] = tuple(_BUILD[k](_payload(p)) for p in recent[k])
        counts = {k: sum(self.tallies[k].values()) if k in self.tallies else self.counts[k] for k in LISTS}
        return SnapshotSummary(**d, counts=counts, hook_decision_counts=dict(self.tallies["hook_decisions"]),
                               tool_counts=dict(self.tallies["tools_invoked"]), recent=recent,
                               recent_limit=self.recent)


def _payload(item: dict[str, Any] | bytes) -> dict[str, Any]:
    """A kept payload, or the payload of a kept canonical line (hook_line)."""
    if type(item) is bytes:
        import orjson

        return orjson.loads(item)["payload"]
    return item  # type: ignore[return-value]


def summarize(events: Iterable[Event], at: int | None = None, recent: int = RECENT) -> SnapshotSummary:
    """`replay` in bounded memory: fold events into a SnapshotSummary (the first `at` when given)."""
    fold = _BoundedFold(recent)
    for i, ev in enumerate(events):
        if at is not None and i >= at:
            break
        try:
            fold.step(ev)
        except (AttributeError, TypeError, ValueError, IndexError, OverflowError) as exc:
            from ..events import LogError

            raise LogError(f"event {i + 1} ({ev.id}): {_wrong_types(ev.type, exc)}") from None
    return fold.summary()


def summarize_path(path: Path, at: int | None = None, recent: int = RECENT,
                   on_torn: Callable[[TornTail], None] | None = None) -> SnapshotSummary:
    """`replay_path` in bounded memory, as a SnapshotSummary. A canonical line of a type the fold
    only counts (llm.request, tool.result, ...) is counted from its bytes, not parsed, and a
    canonical hook.fired line is tallied from its decision's bytes (parsed only if it is
    among the last `recent`): a summary checks the lines it reads; `agentos verify` checks
    every line."""
    fold = _BoundedFold(recent)
    fold_path(path, fold, at, on_torn, parse_all=False)
    return fold.summary()

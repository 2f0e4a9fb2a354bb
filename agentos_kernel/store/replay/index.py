"""The snapshot after any prefix of a log, in time and memory bounded by constants (for the
widgets).

Handing out one snapshot per event (`replay_steps` kept in a list) costs O(N²) time and
memory: at 100k events, 90 s and 10 GB. `ReplayIndex` folds the log once, keeping a mark
every `every` events (the scalars and the lengths of the append-only lists, as tuples),
then answers `snapshot(k)` by resuming the nearest mark at or before k, or the fold it left
at its last answer when that is nearer, and folding at most `every - 1` events. It keeps
no list item: the snapshot's lists are read back from the log (`LogItems`, by the positions
of the events they come from), whole for `snapshot(k)`, on demand for `view(k)` (what the
widgets show: a table's first items and what the last event appended). The same pass
records each event's type and layer as one byte and where each hook fired (a stepper finds
an event's layer counts and gating hook decisions without a scan; 1M events: a few MB).
`folded` and `built` count the work done after the pass (the regression guard's hook).
"""

from __future__ import annotations

import gc
import sys
from array import array
from bisect import bisect_left
from collections.abc import Iterable, Iterator, Sequence
from copy import deepcopy
from typing import Any

from ..events import EVENT_KEYS, Event
from ..recorder import layer_for
from .fold import FOLDED_TYPES, Snapshot, _Fold, error_item, hook_item, tool_item, violation_item
from .logitems import LogItems
from .logview import LogEvents, rows_of
from .snapshot import LISTS, Cost

CHECKPOINT_EVERY = 256
"""Events between two marks: a step folds fewer than this; a mark is a few hundred bytes."""

_SOURCE = {"tool.invoke": "tools_invoked", "hook.fired": "hook_decisions",
           "schema.violation": "schema_violations", "domain.error": "errors"}
# The event type each append-only list is folded from, and how an item is made of a payload.
_ITEM = {"tools_invoked": tool_item, "hook_decisions": hook_item,
         "schema_violations": violation_item, "errors": error_item}
_LISTED_ONLY = frozenset({"hook.fired", "tool.invoke", "domain.error"})
# Types the fold only counts and appends an item for (schema.violation's item can raise on a
# bad payload, as the fold would: it is folded).
_SCALARS = tuple(k for k in Snapshot.__dataclass_fields__ if k not in {*LISTS, "cost", "roles", "workflow"})


def _shared(v: Any) -> Any:
    return sys.intern(v) if type(v) is str and len(v) < 64 else v


def _counted(t: str) -> bool:
    """The construction pass only counts events of type t (their items come from the log)."""
    return t in _LISTED_ONLY or (t not in FOLDED_TYPES and not t.startswith("workflow."))


class ReplayIndex:
    """Snapshots, layers and hook decisions at any position of one session's events."""

    def __init__(self, events: Sequence[Event], every: int = CHECKPOINT_EVERY) -> None:
        if every < 1:
            raise ValueError(f"every must be at least 1, not {every}")
        self.events = events
        self.every = every
        self.folded = 0
        """Events folded to answer snapshot() or view() (the construction pass not counted)."""
        self.built = 0
        """Snapshots built by snapshot() or view()."""
        # One code per (type, layer, a worker.report whose id was reported before): a byte
        # each while there are at most 256 (bytearray.rfind finds a type's last event).
        self._names: list[tuple[str, str, bool]] = []
        self._code: dict[tuple[str, str, bool], int] = {}
        self._codes: bytearray | array[int] = bytearray()
        self._positions: dict[str, array[int]] = {name: array("I") for name in LISTS}
        self._by_hook: dict[str, array[int]] = {}
        self._marks: list[tuple[Any, ...]] = []
        self._layer_marks: list[array[int]] = []
        self._cursor: tuple[int, _Fold, tuple[int, ...]] | None = None
        self._recent: dict[int, dict[str, Any]] = {}
        # The pass makes a dict per event and no cycle: the cyclic collector finds nothing in
        # them, and walking them was 8% of opening a 400k-event log. Reference counting still
        # frees each; the collector is back on after the pass, whatever happens.
        collecting = gc.isenabled()
        gc.disable()
        try:
            self._build()
        finally:
            if collecting:
                gc.enable()

    def _build(self) -> None:
        fold, every = _Fold(), self.every
        d, codes = fold.d, self._codes
        # type -> (code, whether the pass only counts it, the list it feeds): counted, a type whose
        # item is read back from the log or that the fold only counts; looked up each time, a
        # type whose layer or code depends on the event (domain.error, worker.report).
        info: dict[str, tuple[int, bool, str | None]] = {}
        positions, by_hook = self._positions, self._by_hook
        counts: list[int] = []
        self._marks.append(self._mark(fold, (0,) * len(LISTS)))
        self._layer_marks.append(array("I"))
        log = self.events if isinstance(self.events, LogEvents) else None  # lines to check
        # no session id folded yet; the number of events folded at the next mark
        keys, e, no_sid, nxt = EVENT_KEYS, None, True, every
        for a, values in self._values():
            for i, e in enumerate(values, a):
                # LogEvents.rows' check, inlined (a row tuple per event was a tenth of the pass)
                if log is not None and (type(e) is not dict or e.keys() not in keys
                                        or type(e["type"]) is not str or type(e["actor"]) is not str):
                    Event.from_dict(e, where=log.where(i))
                t = e["type"]
                got = info.get(t)
                if got is None:
                    repeat = t == "worker.report" and e["id"] in fold.reports
                    got = (self._code_of(t, layer_for(t, e["payload"]), repeat), _counted(t),
                           _SOURCE.get(t))
                    if t not in ("domain.error", "worker.report"):
                        info[t] = got
                    codes = self._codes
                c, counted, name = got
                if not counted:
                    fold.fold(e["id"], e["session_id"], t, e["actor"], e["payload"])
                    no_sid = not d["session_id"]
                elif no_sid and not d["session_id"]:  # what fold.fold does with it, items left
                    d["session_id"] = e["session_id"]  # to the log; `events` and the last id
                    no_sid = not d["session_id"]  # are set at each mark (below)
                codes.append(c)
                if name is not None:
                    positions[name].append(i)
                    if t == "hook.fired" and isinstance(e["payload"], dict):
                        by_hook.setdefault(str(e["payload"].get("hook")), array("I")).append(i)
                if i + 1 == nxt:
                    d["events"], d["last_event_id"] = nxt, e["id"]  # each event counts one
                    self._marks.append(self._mark(fold, tuple(len(positions[n]) for n in LISTS)))
                    self._layer_marks.append(self._tally(counts, nxt - every, nxt))
                    for key in LISTS:  # the items are read back from the log: none kept
                        d[key].clear()
                    nxt += every
        if e is not None:
            d["events"], d["last_event_id"] = len(self._codes), e["id"]
        self._end = self._mark(fold, tuple(len(positions[n]) for n in LISTS))

    def _values(self) -> Iterator[tuple[int, Iterable[Any]]]:
        """Batches of (a, the events a.. as dicts): a LogEvents' lines as parsed (checked in
        the pass), any other sequence's Events as the fields the pass reads."""
        return self.events.batches() if isinstance(self.events, LogEvents) else iter([(0, [
            {"id": ev.id, "session_id": ev.session_id, "type": ev.type, "actor": ev.actor,
             "payload": ev.payload} for ev in self.events])])

    def _tally(self, counts: list[int], lo: int, hi: int) -> array[int]:
        """`counts` (events per code so far) with codes lo..hi-1 added, as an array."""
        while len(counts) < len(self._names):
            counts.append(0)
        codes = self._codes
        if isinstance(codes, bytearray):
            for c in set(codes[lo:hi]):
                counts[c] += codes.count(c, lo, hi)
        else:
            for c in codes[lo:hi]:
                counts[c] += 1
        return array("I", counts)

    def _code_of(self, t: str, layer: str, repeat: bool) -> int:
        key = (t, layer, repeat)
        c = self._code.get(key)
        if c is None:
            c = self._code[key] = len(self._names)
            self._names.append(key)
            if c == 256 and isinstance(self._codes, bytearray):  # past a byte: four each
                self._codes = array("I", list(self._codes))
        return c

    @staticmethod
    def _mark(fold: _Fold, lengths: tuple[int, ...]) -> tuple[Any, ...]:
        d = fold.d
        latest = next(reversed(fold.reports)) if fold.reports else None
        # A role, state or skill is one of a few strings, parsed afresh on each line: the
        # marks share one copy of each (sys.intern) instead of holding one from each event.
        return (tuple(_shared(d[k]) for k in _SCALARS), tuple(d["cost"].values()),
                tuple((_shared(r), _shared(v)) for r, v in d["roles"].items()),
                deepcopy(d["workflow"]), lengths, latest)

    def _resume(self, mark: tuple[Any, ...]) -> _Fold:
        scalars, cost, roles, workflow, _, latest = mark
        fold = _Fold()
        d = fold.d
        d.update(zip(_SCALARS, scalars, strict=True))
        d["cost"] = dict(zip(d["cost"], cost, strict=True))
        d["roles"], d["workflow"] = dict(roles), deepcopy(workflow)
        # Only the latest report id decides an amendment; a report whose id came earlier is
        # folded as a repeat (its code says so), which leaves the latest where it is.
        fold.reports = {} if latest is None else {latest: None}
        return fold

    def __len__(self) -> int:
        return len(self._codes)

    def type(self, i: int) -> str:
        """The type of event i (0-based)."""
        return self._names[self._codes[i]][0]

    def layer(self, i: int) -> str:
        """The layer of event i (0-based), as recorder.layer_of says."""
        return self._names[self._codes[i]][1]

    def item(self, name: str, j: int) -> dict[str, Any]:
        """Item j of the snapshot list `name` (tools_invoked, ...), made from its event."""
        p = next(rows_of(self.events, self._positions[name][j], self._positions[name][j] + 1))[4]
        return _ITEM[name](p if isinstance(p, dict) else {})

    def _state(self, k: int) -> dict[str, Any]:
        """The fold's fields after the first k events, lists as their lengths."""
        if not 0 <= k <= len(self):
            raise IndexError(f"position {k} is outside 0..{len(self)}")
        hit = self._recent.get(k)
        if hit is not None:
            return hit
        base = k // self.every * self.every
        if k == len(self):
            fold, lengths = self._resume(self._end), self._end[4]
        else:
            if self._cursor is not None and base <= self._cursor[0] <= k:
                pos, fold, lengths = self._cursor
            else:
                mark = self._marks[k // self.every]
                pos, fold, lengths = base, self._resume(mark), mark[4]
            codes, names = self._codes, self._names
            for i, row in enumerate(rows_of(self.events, pos, k), pos):
                if names[codes[i]][2]:  # a repeated report id: folded, not made the latest
                    had = row[0] in fold.reports
                    fold.fold(*row)
                    if not had:
                        del fold.reports[row[0]]
                else:
                    fold.fold(*row)
                self.folded += 1
            self._cursor = (k, fold, lengths)
        self.built += 1
        d = dict(fold.d)
        d["cost"] = Cost(**d["cost"])
        d["roles"] = dict(d["roles"])
        d["workflow"] = deepcopy(d["workflow"])
        for name, n in zip(LISTS, lengths, strict=True):
            d[name] = n + len(d[name])
        if len(self._recent) >= 4:  # a scrubber's diff asks for k-1 and k: keep the last few
            del self._recent[next(iter(self._recent))]
        self._recent[k] = d
        return d

    def snapshot(self, k: int) -> Snapshot:
        """The snapshot after the first k events (0 <= k <= len), its lists read whole from
        the log (replay's value, field for field)."""
        d = dict(self._state(k))
        for name in LISTS:
            d[name] = tuple(LogItems(self, name, d[name]))
        return Snapshot(**d)

    def view(self, k: int) -> Snapshot:
        """`snapshot(k)` with its lists as LogItems: read from the log when shown."""
        d = dict(self._state(k))
        for name in LISTS:
            d[name] = LogItems(self, name, d[name])
        return Snapshot(**d)

    def layer_counts(self, k: int) -> dict[str, int]:
        """Events per layer among the first k (layers with none left out)."""
        j = k // self.every
        counts = dict(enumerate(self._layer_marks[j]))  # codes unseen at the mark: 0, left out below
        for c in self._codes[j * self.every:k]:
            counts[c] = counts.get(c, 0) + 1
        out: dict[str, int] = {}
        for c, n in counts.items():
            if n:
                layer = self._names[c][1]
                out[layer] = out.get(layer, 0) + n
        return out

    def _last_of_type(self, t: str, before: int) -> int:
        """Position of the last event of type t before `before`, or -1."""
        codes = [c for c, name in enumerate(self._names) if name[0] == t]
        if isinstance(self._codes, bytearray):
            return max((self._codes.rfind(c, 0, before) for c in codes), default=-1)
        return next((p for p in range(before - 1, -1, -1) if self._codes[p] in codes), -1)

    def hook_run(self, i: int, hook: str) -> list[int]:
        """Positions of the hook.fired events of `hook` that decided on event i: the latest
        unbroken run of them before i and after the previous event of i's type
        (jupyter.layers.hook_decisions_for, answered by bisection instead of a scan)."""
        return latest_run(self._by_hook.get(hook, array("I")), i, self._last_of_type(self.type(i), i))


def latest_run(fired: Sequence[int], i: int, floor: int) -> list[int]:
    """The latest unbroken run of positions in `fired` (ascending) before i and after floor."""
    m = bisect_left(fired, i) - 1
    run: list[int] = []
    while m >= 0 and fired[m] > floor and (not run or fired[m] == run[-1] - 1):
        run.append(fired[m])
        m -= 1
    return run[::-1]

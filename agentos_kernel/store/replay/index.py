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
records each event's type and layer as one byte and where each hook fired, so a stepper
finds an event's layer counts and gating hook decisions without a scan; a million events
cost a few MB. `folded` and `built` count the work done after the pass (the regression
guard's hook).
"""

from __future__ import annotations

from array import array
from bisect import bisect_left
from collections.abc import Iterator, Sequence
from copy import deepcopy
from typing import Any, overload

from ..events import Event
from ..recorder import layer_for
from .fold import Snapshot, _Fold, error_item, hook_item, tool_item, violation_item
from .logview import rows_of
from .snapshot import LISTS, Cost

CHECKPOINT_EVERY = 256
"""Events between two marks: a step folds fewer than this; a mark is a few hundred bytes."""

_SOURCE = {"tool.invoke": "tools_invoked", "hook.fired": "hook_decisions",
           "schema.violation": "schema_violations", "domain.error": "errors"}
# The event type each append-only list is folded from, and how an item is made of a payload.
_ITEM = {"tools_invoked": tool_item, "hook_decisions": hook_item,
         "schema_violations": violation_item, "errors": error_item}
_SCALARS = tuple(k for k in Snapshot.__dataclass_fields__ if k not in {*LISTS, "cost", "roles", "workflow"})


class LogItems(Sequence[dict[str, Any]]):
    """One append-only list of a snapshot (tools_invoked, ...), its items read from the log
    when asked for: equal to the fold's tuple, item for item."""

    def __init__(self, source: ReplayIndex, name: str, n: int) -> None:
        self.source, self.name, self.n = source, name, n

    def __len__(self) -> int:
        return self.n

    @overload
    def __getitem__(self, i: int) -> dict[str, Any]: ...

    @overload
    def __getitem__(self, i: slice) -> tuple[dict[str, Any], ...]: ...

    def __getitem__(self, i: int | slice) -> dict[str, Any] | tuple[dict[str, Any], ...]:
        if isinstance(i, slice):
            return tuple(self.source.item(self.name, j) for j in range(*i.indices(self.n)))
        if i < 0:
            i += self.n
        if not 0 <= i < self.n:
            raise IndexError(f"item {i} of {self.n}")
        return self.source.item(self.name, i)

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return (self.source.item(self.name, j) for j in range(self.n))

    def same_list(self, other: object) -> bool:
        """`other` is this list of the same index (one a prefix of the other)."""
        return isinstance(other, LogItems) and other.source is self.source and other.name == self.name

    def __eq__(self, other: object) -> bool:
        if self.same_list(other):
            return self.n == len(other)  # type: ignore[arg-type]
        return isinstance(other, Sequence) and len(other) == self.n and tuple(self) == tuple(other)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"LogItems({self.name}, {self.n} item(s))"


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
        self._layer_marks: list[tuple[int, ...]] = []
        self._cursor: tuple[int, _Fold, tuple[int, ...]] | None = None
        self._recent: dict[int, dict[str, Any]] = {}
        self._build()

    def _build(self) -> None:
        fold, every, codes = _Fold(), self.every, self._codes
        known: dict[str, int] = {}  # type -> code, for the types whose layer is the type's
        positions, by_hook = self._positions, self._by_hook
        counts: list[int] = []
        self._marks.append(self._mark(fold, (0,) * len(LISTS)))
        self._layer_marks.append(())
        for i, (eid, sid, t, actor, payload) in enumerate(rows_of(self.events)):
            c = known.get(t)
            if c is None:
                repeat = t == "worker.report" and eid in fold.reports
                c = self._code_of(t, layer_for(t, payload), repeat)
                if t not in ("domain.error", "worker.report"):
                    known[t] = c
                codes = self._codes
            fold.fold(eid, sid, t, actor, payload)
            codes.append(c)
            while len(counts) <= c:
                counts.append(0)
            counts[c] += 1
            name = _SOURCE.get(t)
            if name is not None:
                positions[name].append(i)
                if t == "hook.fired" and isinstance(payload, dict):
                    by_hook.setdefault(str(payload.get("hook")), array("I")).append(i)
            if (i + 1) % every == 0:
                self._marks.append(self._mark(fold, tuple(len(positions[n]) for n in LISTS)))
                self._layer_marks.append(tuple(counts))
                for name in LISTS:  # the items are read back from the log: none kept
                    fold.d[name].clear()
        self._end = self._mark(fold, tuple(len(positions[n]) for n in LISTS))

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
        return (tuple(d[k] for k in _SCALARS), tuple(d["cost"].values()), tuple(d["roles"].items()),
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
        payload = rows_of(self.events, self._positions[name][j], self._positions[name][j] + 1)
        p = next(payload)[4]
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
        counts = dict(enumerate(self._layer_marks[j]))
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
        floor = self._last_of_type(self.type(i), i)
        fired = self._by_hook.get(hook, array("I"))
        m = bisect_left(fired, i) - 1
        run: list[int] = []
        while m >= 0 and fired[m] > floor and (not run or fired[m] == run[-1] - 1):
            run.append(fired[m])
            m -= 1
        return run[::-1]

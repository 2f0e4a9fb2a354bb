"""The rows of a log diff (`runs/diff.py`), kept compact: the lockstep prefix as a count, each
row after it as (kind, A's position, B's position, the changed path) in arrays. A row's
events are read from the logs when the row is asked for, so two million-event logs that
agree cost their two `LogEvents` indexes, not two million Events.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import overload

from ..store.events import Event, LogError
from ..store.replay.logview import ROWS_BATCH, LogEvents

KINDS = ("same", "changed", "only_a", "only_b")
"""A row's kind by its code in `_Tail.kinds`."""
KEPT = 64
"""Rows kept built (the last asked for): a widget asking for its row twice gets the same one."""


def step_of(e: Event) -> tuple[str, str]:
    """The step: (role, type); `hook:x` and `tool:x` actors count as hook and tool,
    so a different handler at the same gate is a changed step, not two unrelated ones."""
    role = e.actor.split(":", 1)[0] if ":" in e.actor else e.actor
    return role, e.type


@dataclass(frozen=True)
class DiffRow:
    """One aligned step: an event of A, of B, or of both."""

    kind: str
    """same | changed (same step, other content) | only_a | only_b."""
    a: Event | None
    """A's event (None: only B has this step)."""
    b: Event | None
    """B's event (None: only A has this step)."""
    path: str | None = None
    """For `changed`: the first path that differs."""

    @property
    def step(self) -> tuple[str, str]:
        """(role, event type) of the row."""
        return step_of(self.a if self.a is not None else self.b)  # type: ignore[arg-type]


class _Tail:
    """The rows after the lockstep prefix: 1 + 8 + 8 + 4 bytes a row, paths interned."""

    def __init__(self) -> None:
        self.kinds, self.ia, self.ib, self.paths = array("b"), array("q"), array("q"), array("i")
        self.names: dict[str, int] = {}

    def add(self, kind: str, i: int, j: int, path: str | None) -> None:
        self.kinds.append(KINDS.index(kind))
        self.ia.append(i)
        self.ib.append(j)
        self.paths.append(-1 if path is None else self.names.setdefault(path, len(self.names)))

    def __len__(self) -> int:
        return len(self.kinds)


class DiffRows(Sequence[DiffRow]):
    """Every aligned row of two logs: rows 0..same-1 are the lockstep prefix (A's i-th event
    beside B's), the others the tail's; each built when asked for."""

    def __init__(self, a: Sequence[Event], b: Sequence[Event], same: int, tail: _Tail | None = None) -> None:
        self._a, self._b, self.same, self._tail = a, b, same, tail or _Tail()
        self._path_of = {v: k for k, v in self._tail.names.items()}
        self._kept: dict[int, DiffRow] = {}
        kinds = self._tail.kinds
        self.changes = array("q", (same + k for k in range(len(kinds)) if kinds[k]))
        """Positions of the rows that are not `same`, in order."""

    def __len__(self) -> int:
        return self.same + len(self._tail)

    @property
    def first_change(self) -> int | None:
        """Index of the first row that is not `same` (None: none)."""
        return self.changes[0] if self.changes else None

    def side(self, side: int) -> Sequence[Event]:
        """Log A's events (0) or B's (1)."""
        return self._b if side else self._a

    def kind(self, i: int) -> str:
        """Row i's kind, without reading its events."""
        return "same" if i < self.same else KINDS[self._tail.kinds[i - self.same]]

    def row_of_a(self, i: int) -> int:
        """The row holding A's i-th event."""
        return i if i < self.same else self.same + self._tail.ia.index(i)

    def row_of_b(self, j: int) -> int:
        """The row holding B's j-th event."""
        return j if j < self.same else self.same + self._tail.ib.index(j)

    @overload
    def __getitem__(self, i: int) -> DiffRow: ...

    @overload
    def __getitem__(self, i: slice) -> list[DiffRow]: ...

    def __getitem__(self, i: int | slice) -> DiffRow | list[DiffRow]:
        if isinstance(i, slice):
            return [self[k] for k in range(*i.indices(len(self)))]
        if i < 0:
            i += len(self)
        if not 0 <= i < len(self):
            raise IndexError(f"row {i} of {len(self)}")
        row = self._kept.get(i)
        if row is None:
            row = self._build(i)
            if len(self._kept) >= KEPT:
                del self._kept[next(iter(self._kept))]
            self._kept[i] = row
        return row

    def _build(self, i: int) -> DiffRow:
        if i < self.same:
            return DiffRow("same", self._a[i], self._b[i])
        t, k = self._tail, i - self.same
        ia, ib, p = t.ia[k], t.ib[k], t.paths[k]
        return DiffRow(KINDS[t.kinds[k]], self._a[ia] if ia >= 0 else None,
                       self._b[ib] if ib >= 0 else None, self._path_of[p] if p >= 0 else None)

    def window(self, lo: int, hi: int) -> list[DiffRow]:
        """Rows lo..hi-1 (as `self[i]` builds each), the lockstep prefix's events read from
        a log a batch of lines at a time rather than a line each (a table shows 500 rows)."""
        cut = max(lo, min(hi, self.same))
        rows = [DiffRow("same", x, y) for x, y in zip(_events(self._a, lo, cut), _events(self._b, lo, cut),
                                                        strict=True)]
        return rows + [self[i] for i in range(cut, hi)]

    def __iter__(self) -> Iterator[DiffRow]:
        # built one by one and not kept: walking a million rows holds one
        for i in range(len(self)):
            yield self._kept.get(i) or self._build(i)

    def changed(self) -> Iterator[tuple[int, DiffRow]]:
        """(index, row) of every row that is not `same`, in order."""
        for i in self.changes:
            yield i, self[i]


def _events(events: Sequence[Event], lo: int, hi: int) -> list[Event]:
    """Events lo..hi-1 of a log, each as `events[i]` reads it (a LogEvents: its lines parsed a
    batch at a time; a line that is not an event read again by `events[i]`, which names it)."""
    if not isinstance(events, LogEvents) or hi <= lo:
        return [events[i] for i in range(lo, hi)]
    out = []
    for i, record in enumerate(events.records(lo, hi, batch=ROWS_BATCH), lo):
        try:
            out.append(Event.from_dict(record, where="-"))
        except LogError:
            out.append(events[i])  # raises the LogError naming the line
    return out

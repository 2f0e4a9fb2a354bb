"""The one diff engine for logs: `rerun --verify`, `agentos diff A B`, `%diff` and the LogDiff
widget all call `diff_events`.

Two logs are walked in lockstep while their events match (type, actor, payload, the
volatile fields in IGNORED left out, A's session id read as B's); the first event where
they do not is the first divergence, reported as the path that differs (`type`, `actor`,
`payload.<field>...`, or `event` when one log ends first). After it, the rest is aligned
by step, (role, event type, hook point), with difflib's SequenceMatcher, so an inserted event (a fork's
`session.forked`, an extra rework round) shows as one row on one side instead of shifting
every later pair. A hook.fired's hook point is part of its step: a Stop decision and a
PreToolUse decision are two steps, never one changed one. Per-role token and cost totals
come from each log's `llm.response` events.

Nothing here holds a log: both are read streaming (`rows_of`, a LogEvents a batch of lines at
a time), the agreeing prefix kept as a count and each later event as an interned alignment
key; the rows (`diffrows.DiffRows`) read their events back when asked for.
"""

from __future__ import annotations

import difflib
from array import array
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import orjson

from ..schemas.jsondiff import MISSING, first_difference, rename_session
from ..store.events import LogError
from ..store.replay.logview import LogEvents, Row, rows_of
from .difflines import IGNORED, agreeing
from .diffrows import DiffRow, DiffRows, _Tail, step_of

if TYPE_CHECKING:
    from ..store.events import Event

__all__ = ["IGNORED", "DiffRow", "DiffRows", "Divergence", "EventsDiff", "RoleUsage", "align_key",
           "diff_events", "step_of", "usage", "view"]



@dataclass(frozen=True)
class Divergence:
    """Where two logs first differ."""

    index: int
    """1-based position of the first differing event in both logs (the trace's seq)."""
    path: str
    """What differs: `type`, `actor`, `payload.<field>...`, or `event` when one log ends first."""
    recorded: Any
    """Log A's value there (`<missing>` when absent)."""
    new: Any
    """Log B's value there (`<missing>` when absent)."""


@dataclass(frozen=True)
class RoleUsage:
    """One role's model use in both logs."""

    role: str
    """The role (the llm.response's actor)."""
    calls: tuple[int, int]
    """llm.response events in A and in B."""
    tokens: tuple[int, int]
    """Input + output tokens in A and in B."""
    cost_usd: tuple[float, float]
    """Summed cost_usd in A and in B."""

    @property
    def token_delta(self) -> int:
        """B's tokens minus A's."""
        return self.tokens[1] - self.tokens[0]

    @property
    def cost_delta(self) -> float:
        """B's cost minus A's (USD)."""
        return round(self.cost_usd[1] - self.cost_usd[0], 8)


@dataclass(frozen=True)
class EventsDiff:
    """What `diff_events` found."""

    a: str
    """Log A's session id."""
    b: str
    """Log B's session id."""
    rows: DiffRows
    """Every step of both logs, aligned (each row's events read when it is asked for)."""
    first: Divergence | None
    """The first divergence (None: the logs do the same thing)."""
    compared: int
    """Event pairs compared up to and including the first divergence (all when none)."""
    roles: tuple[RoleUsage, ...] = field(default=())
    """Per-role usage in both logs, in order of first appearance."""

    @property
    def identical(self) -> bool:
        """No divergence."""
        return self.first is None

    @property
    def first_row(self) -> int | None:
        """Index in `rows` of the first row that is not `same`."""
        return self.rows.first_change


def align_key(e: Event) -> tuple[str, str, str]:
    """What aligns two events after the first divergence: `step_of` and, for hook.fired, the
    hook point (a different handler at the same hook point is one changed step)."""
    return _key(_row(e))


def view(e: Event, rename: tuple[str, str] | None = None) -> dict[str, Any]:
    """What is compared: type, actor and payload without the IGNORED fields."""
    return _view(_row(e), rename)


def _row(e: Event) -> Row:
    return e.id, e.session_id, e.type, e.actor, e.payload


def diff_events(a: Sequence[Event], b: Sequence[Event], rename: tuple[str, str] | None = None,
                names: tuple[str, str] = ("A", "B")) -> EventsDiff:
    """Diff log A against log B (module docstring). `rename=(A's id, B's id)`.

    Both logs are read streaming (a LogEvents a batch of lines at a time): the lockstep prefix
    is kept as a count, the rest as one interned alignment key an event, and the rows as
    arrays of positions (`DiffRows`), their events read back when a row is asked for."""
    try:
        return _diff(a, b, rename, names)
    except LogError:
        # both logs bad: A's line is the one named, as when A was read whole before B
        for _ in rows_of(a):
            pass
        raise


def _diff(a: Sequence[Event], b: Sequence[Event], rename: tuple[str, str] | None,
          names: tuple[str, str]) -> EventsDiff:
    fold = _UsageFold()
    same = _same_fast(a, b, rename)
    n = 0
    if isinstance(a, LogEvents) and isinstance(b, LogEvents):  # the agreeing prefix by its bytes
        n = agreeing(a, b, rename, lambda x, y: same(x, y) or not first_difference(
            _view(x, rename), _view(y)), fold.row)
    ra, rb = fold.tap(rows_of(a, n), 0), fold.tap(rows_of(b, n), 1)
    x, y, found = next(ra, None), next(rb, None), None
    while x is not None and y is not None:
        if not same(x, y):
            found = first_difference(_view(x, rename), _view(y))
            if found:
                break
        n, x, y = n + 1, next(ra, None), next(rb, None)
    if x is None and y is None:
        return EventsDiff(*names, DiffRows(a, b, n), None, n, fold.result())
    if found:
        first = Divergence(n + 1, *found)
    else:
        first = Divergence(n + 1, "event", x[2] if x is not None else MISSING,
                           y[2] if y is not None else MISSING)
    keys: dict[tuple[str, str, str], int] = {}
    ka = array("l", (keys.setdefault(_key(r), len(keys)) for r in _chain(x, ra)))
    kb = array("l", (keys.setdefault(_key(r), len(keys)) for r in _chain(y, rb)))
    del keys
    matcher = difflib.SequenceMatcher(None, ka, kb, autojunk=False)
    tail = _Tail()
    ca, cb = _Cursor(rows_of(a, n)), _Cursor(rows_of(b, n))
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op == "equal":
            for i, j in zip(range(i1, i2), range(j1, j2), strict=True):
                diff = first_difference(_view(ca.at(i), rename), _view(cb.at(j)))
                tail.add("changed" if diff else "same", n + i, n + j, diff[0] if diff else None)
        else:  # replace, delete, insert: A's side, then B's
            for i in range(i1, i2):
                tail.add("only_a", n + i, -1, None)
            for j in range(j1, j2):
                tail.add("only_b", -1, n + j, None)
    return EventsDiff(*names, DiffRows(a, b, n, tail), first, n + 1, fold.result())


def _view(r: Row, rename: tuple[str, str] | None = None) -> dict[str, Any]:
    """`view` of a row, without building its Event."""
    v = {"type": r[2], "actor": r[3], "payload": _payload(r)}
    return rename_session(v, *rename) if rename else v


def _same_fast(a: Sequence[Event], b: Sequence[Event], rename: tuple[str, str] | None
               ) -> Callable[[Row, Row], bool]:
    """A check that two rows' views are equal, true only when they are (else the exact
    comparison decides): for two logs read from files (every value as orjson parsed it: JSON's
    types only), the same JSON bytes are the same values, types included, when A's id needs
    no renaming in them (it is absent from A's type, actor and bytes)."""
    old = rename[0] if rename and rename[0] != rename[1] else ""
    needle = old.encode()
    if not (isinstance(a, LogEvents) and isinstance(b, LogEvents)) or \
            orjson.dumps(old) != b'"' + needle + b'"':  # an id JSON escapes: no byte search
        return lambda x, y: False

    def same(x: Row, y: Row) -> bool:
        if x[2] != y[2] or x[3] != y[3] or (old and (old in x[2] or old in x[3])):
            return False
        try:
            ja = orjson.dumps(_payload(x))
            return ja == orjson.dumps(_payload(y)) and not (old and needle in ja)
        except orjson.JSONEncodeError:  # nested deeper than orjson encodes: the exact walk
            return False

    return same


def _payload(r: Row) -> Any:
    """A row's payload without the IGNORED fields."""
    payload = r[4]
    if isinstance(payload, dict) and r[2] in IGNORED:
        payload = {k: v for k, v in payload.items() if k not in IGNORED[r[2]]}
    return payload


def _key(r: Row) -> tuple[str, str, str]:
    """`align_key` of a row."""
    typ, actor, payload = r[2], r[3], r[4]
    hook = payload.get("hook") if typ == "hook.fired" and isinstance(payload, dict) else None
    return actor.split(":", 1)[0] if ":" in actor else actor, typ, str(hook or "")


def _chain(head: Row | None, rest: Iterator[Row]) -> Iterator[Row]:
    if head is not None:
        yield head
    yield from rest


class _Cursor:
    """Rows of a log read forwards once: `at(i)` is the i-th from where it started."""

    def __init__(self, rows: Iterator[Row]) -> None:
        self._rows, self._next = rows, 0

    def at(self, i: int) -> Row:
        while True:
            r = next(self._rows)
            self._next += 1
            if self._next > i:
                return r


class _UsageFold:
    """`usage`, folded while the rows stream past; roles in order of first appearance in A,
    then B's others (the order the fold over A, then B, gave)."""

    def __init__(self) -> None:
        self.table: dict[str, list[list[float]]] = {}
        self.seen: tuple[dict[str, None], dict[str, None]] = ({}, {})

    def tap(self, rows: Iterator[Row], side: int) -> Iterator[Row]:
        for r in rows:
            self.row(side, r)
            yield r

    def row(self, side: int, r: Row) -> None:
        if r[2] == "llm.response" and isinstance(r[4], dict):
            self.add(side, r[3], r[4])

    def add(self, side: int, actor: str, payload: dict[str, Any]) -> None:
        u = payload.get("usage") or {}
        role = str(payload.get("role") or actor)
        self.seen[side][role] = None
        row = self.table.setdefault(role, [[0, 0], [0, 0], [0.0, 0.0]])
        row[0][side] += 1
        row[1][side] += int(u.get("input_tokens", 0)) + int(u.get("output_tokens", 0))
        row[2][side] = round(row[2][side] + float(u.get("cost_usd", 0)), 8)

    def result(self) -> tuple[RoleUsage, ...]:
        out = []
        for r in {**self.seen[0], **self.seen[1]}:
            c, t, m = self.table[r]
            out.append(RoleUsage(r, (int(c[0]), int(c[1])), (int(t[0]), int(t[1])), (m[0], m[1])))
        return tuple(out)


def usage(a: Sequence[Event], b: Sequence[Event]) -> tuple[RoleUsage, ...]:
    """Per-role calls, tokens and cost of both logs (a pure fold over llm.response)."""
    fold = _UsageFold()
    for side, events in enumerate((a, b)):
        for _ in fold.tap(rows_of(events), side):
            pass
    return fold.result()

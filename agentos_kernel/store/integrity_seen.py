"""L4 integrity: which events a verify pass has seen, in state that does not grow with a log
our writer wrote (integrity_scan.Scan is one; docs/reliability.md "What verify checks, and
how").

- seqs are not kept: before the first problem a numbered log's seqs are 1..k in line order,
  so a seq below the next one was seen, at the line its position gives (blank lines
  counted in, the only lines before the problem that hold no event);
- ids are not kept when they are the writer's, `<prefix><seq, zero-padded>` with the first
  event's prefix and width: one such id per seq, so two are equal only if their seqs are;
- nor, when the log can be read again (`reread`), while they rise: a live run's ids are
  UUIDv7s, strictly increasing, so an id above every earlier one is new; the first id that
  is not is looked up by reading the log again up to it, and from then on every id is kept;
- any other id is kept with its line.

A Finding, what a verify pass names, is defined here too (integrity_scan re-exports it).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from functools import lru_cache
from itertools import chain, islice
from operator import itemgetter
from typing import Any

import orjson

_NUMBERED_ID = re.compile(r"(.*?)([0-9]+)")
TEN = ("seq", "id", "session_id", "actor", "ts", "type", "chain", "parent_id", "payload", "schema_version")
"""The fields integrity_scan.Scan.run reads from each line, in the order it unpacks them."""


@dataclass(frozen=True)
class Finding:
    """One thing wrong with a log."""

    kind: str
    """altered | removed | reordered | duplicated | forged | appended | head-missing |
    duplicate-key | misplaced | bad-envelope | empty-log | blank-line | torn-tail."""
    line: int | None
    """File line (1-based) where it shows, when there is one."""
    seq: int | None
    """The event's seq (for `removed`, the first missing seq), when known."""
    message: str
    """What was found and what it means, in one sentence."""


class Seen:
    """The seqs and ids read so far (before the first problem)."""

    def __init__(self) -> None:
        self.prev_seq = 0
        self.ids: dict[str, int] = {}  # id -> line, for the ids that are not the writer's
        self.other_seqs: set[int] = set()  # the seqs of those ids
        self.id_form: tuple[str, str] | None = None  # the writer's ids: (prefix, seq format)
        self.blanks: list[int] = []  # blank lines before the problem, for a seq's line
        self.reread: Callable[[], Iterable[bytes]] | None = None  # the log's lines again
        self.top: str | None = None  # the last id while every id rose (the earlier ones not kept)

    def record(self, eid: str, seq: int | None, n: int) -> None:
        """Remember the id of the event at line `n` as far as it needs remembering."""
        if self.writers(eid, seq):
            return
        if self.id_form is None and self.reread is not None and (self.top is None or eid > self.top) \
                and (self.top is not None or not self.ids):
            self.top = eid  # above every earlier id: new, and not kept
            return
        self.ids[eid] = n
        if self.id_form is not None and type(seq) is int:
            self.other_seqs.add(seq)

    def writers(self, eid: str, seq: int | None) -> bool:
        """True when `eid` is the writer's id for `seq` (not kept: its seq stands for it)."""
        form = self.id_form
        return form is not None and eid == form[0] + format(seq, form[1])

    def seen(self, eid: str, n: int) -> int | None:
        """The line of an earlier event with id `eid` (this one at line `n`), else None."""
        if self.top is not None and eid <= self.top:  # not rising: recall the ids not kept
            self._recall(n)
        if eid in self.ids:
            return self.ids[eid]
        form = self.id_form
        if form is None or not eid.startswith(form[0]):
            return None
        digits = eid[len(form[0]):]
        if not (digits.isascii() and digits.isdigit()):
            return None
        seq = int(digits)
        # A writer's id of a seq already read, which that seq's event carried.
        if 1 <= seq <= self.prev_seq and seq not in self.other_seqs and eid == form[0] + format(seq, form[1]):
            return self.line_of(seq)
        return None

    def _recall(self, n: int) -> None:
        """Keep every id of the lines before line `n` (read again), and every id from now on."""
        assert self.reread is not None
        for k, raw in enumerate(self.reread(), 1):
            if k >= n:
                break
            if raw.strip():
                obj = orjson.loads(raw)  # it was read before the problem: an event object
                self.ids.setdefault(obj["id"], k)
        self.top = None

    def line_of(self, seq: int) -> int:
        """The line of the event with `seq` (read before any problem: seqs are 1..k in order)."""
        line = seq
        for b in self.blanks:
            if b > line:
                break
            line += 1
        return line


def id_form(eid: str, seq: int | None) -> tuple[str, str] | None:
    """(prefix, format) when the first event's id is a prefix and its seq zero-padded, the
    way our writer numbers ids (`s0001-e0001`): every later id is expected that way."""
    m = _NUMBERED_ID.fullmatch(eid)
    if m is None or seq is None or not m[2].isascii() or int(m[2]) != seq:
        return None
    return m[1], f"0{len(m[2])}d"


_LAST3 = [f"{k:03d}" for k in range(1000)]


def thousand_ids(pct: str, width: int, seq: int) -> tuple[str, list[str], int]:
    """The writer's ids (`pct % seq`, pct a prefix and `%0<width>d`) of the thousand seqs from
    `seq` to the next multiple of 1000 as (hi, low, end): the id of each is `hi + low[s % 1000]`
    (Scan.run: a concatenation instead of a format). From 1000 on, or with 3 digits or more,
    the ids of a thousand differ in their last three digits only; below, at 1 or 2 digits,
    `low` holds the whole ids."""
    end = seq - seq % 1000 + 1000
    if seq >= 1000 or width >= 3:
        return (pct % seq)[:-3], _LAST3, end
    return "", [pct % k for k in range(1000)], end


def writer_ids(form: tuple[str, str], seq: int) -> Iterator[str]:
    """The writer's ids (`form`: id_form's prefix and format) of seq, seq + 1, ... without
    end, a thousand at a time from thousand_ids (integrity_scan.Scan.run zips them with the
    lines)."""
    pct = form[0].replace("%", "%%") + "%" + form[1]
    return chain.from_iterable(_thousands(pct, int(form[1][1:-1]), seq))


def _thousands(pct: str, width: int, seq: int) -> Iterator[Iterable[str]]:
    yield islice(thousand(pct, width, seq - seq % 1000), seq % 1000, None)
    while True:
        seq = seq - seq % 1000 + 1000
        yield thousand(pct, width, seq)


@lru_cache(maxsize=1)
def thousand(pct: str, width: int, start: int) -> list[str]:
    """The writer's ids of the thousand seqs from `start` (a multiple of 1000; the one of seq
    0 unused), made once: `Scan.run` starts again after each line the general way takes
    (the first of each actor and type, a few dozen on any log), and making a thousand ids
    each time was most of verifying a short log (≈ 0.9 ms of 1.2 ms at 100 events)."""
    hi, low, _ = thousand_ids(pct, width, start)
    return [hi + x for x in low]  # a comprehension: faster than map(hi.__add__)


def ten_fields(last: Any) -> itemgetter[Any]:
    """The getter of TEN, its keys the very str objects orjson gave `last` (a line that checked
    out) where it has them: orjson hands out the same object for a key each time (its key
    cache), and a lookup by that object skips comparing characters (a third of the getter's
    cost, bench/RESULTS.md "Session 5, scan3"). An equal key is found all the same: only the
    speed depends on it."""
    keys = {k: k for k in last} if type(last) is dict else {}
    return itemgetter(*(keys.get(k, k) for k in TEN))


def missing(n: int, want: int, found: int) -> str:
    """The message of a gap: seq `want` expected at line `n`, seq `found` there."""
    which = f"seq {want}" if found == want + 1 else f"seqs {want}..{found - 1}"
    return (f"{which} missing before line {n} (which holds seq {found}): "
            f"{'an event was' if found == want + 1 else 'events were'} removed")

"""Which event ids an audit pass has seen, and where.

`CompactIds` (the streaming pass) keeps our writer's counter ids (`<prefix><seq, zero
padded>`, the first event's prefix and width: `s0001-e0001`) as one bit per seq, so a log we
wrote costs 1 bit an event; a live run's rising ids (UUIDv7) as the highest and the last
1024, until one does not rise or a parent_id names an older one (then the log is read again
up to there and every id kept, as any other id is). It answers only "seen before?":
what the audit needs to know about an earlier event beyond that (a duplicate id's first
event, an answer's target that is not open) is what only a log with a gap asks, and the
audit then goes again the exact way (`FullIds`, every id's first and last event, from a
first pass over the log).
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

_NUMBERED_ID = re.compile(r"(.*?)([0-9]+)")
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def id_form(eid: str, seq: Any) -> tuple[str, str] | None:
    """(prefix, format) when `eid` is a prefix and `seq` zero-padded, the way our writer
    numbers ids (`s0001-e0001` for seq 1), else None. A UUID never is: one in 40 of a live
    run's first ids ends in a letter and `1` (or `01`, ...) and would otherwise be taken for
    a counter id, the later ids then kept one by one instead of as rising ones."""
    if _UUID.fullmatch(eid):
        return None
    m = _NUMBERED_ID.fullmatch(eid)
    if m is None or type(seq) is not int or not m[2].isascii() or int(m[2]) != seq:
        return None
    return m[1], f"0{len(m[2])}d"


class CompactIds:
    """The ids read so far: counter ids of the first event's form as bits; rising ids (a live
    run's UUIDv7s) as the highest one and the last `RECENT`, while every id rises and every
    parent_id is one of those (`reread` given); any other id as itself."""

    RECENT = 1024
    """Rising ids kept as themselves: a parent_id names a recent event (a request, its hook)."""

    def __init__(self, reread: Callable[[], Iterable[bytes]] | None = None) -> None:
        self.form: tuple[str, str] | None = None
        self.decided = False
        self.bits = bytearray(1024)
        self.high = 0  # the highest seq whose bit is set
        self.others: set[str] = set()
        self.reread = reread
        self.rising = False
        self.top: str | None = None
        self.recent: deque[str] = deque()
        self.recent_set: set[str] = set()

    def add(self, eid: str, seq: Any, n: int = 0) -> bool:
        """Record `eid` (its event numbered `seq`, at line `n`); True when it was read before."""
        if not self.decided:
            self.decided = True
            self.form = id_form(eid, seq)
            self.rising = self.form is None and self.reread is not None
        form = self.form
        if form is not None and type(seq) is int and seq > 0 and eid == form[0] + format(seq, form[1]):
            byte, bit = seq >> 3, 1 << (seq & 7)
            bits = self.bits
            if byte >= len(bits):
                bits.extend(bytes(max(byte + 1 - len(bits), len(bits))))
            if bits[byte] & bit:
                return True
            bits[byte] |= bit
            if seq > self.high:
                self.high = seq
            return bool(self.others) and eid in self.others
        if self.rising:
            if self.top is None or eid > self.top:  # above every earlier id: new
                self.top = eid
                self.recent.append(eid)
                self.recent_set.add(eid)
                if len(self.recent) > self.RECENT:
                    self.recent_set.discard(self.recent.popleft())
                return False
            self._recall(n)
        if self.seen(eid, n):
            return True
        self.others.add(eid)
        return False

    def seen(self, eid: str, n: int = 0) -> bool:
        """`eid` was read before (line `n`, the one asking)."""
        if self.rising:
            if self.top is None or eid > self.top:
                return False
            if eid in self.recent_set:
                return True
            self._recall(n)
        if eid in self.others:
            return True
        form = self.form
        if form is None or not eid.startswith(form[0]):
            return False
        digits = eid[len(form[0]):]
        if not (digits.isascii() and digits.isdigit()):
            return False
        k = int(digits)
        if k < 1 or (k >> 3) >= len(self.bits) or eid != form[0] + format(k, form[1]):
            return False
        return bool(self.bits[k >> 3] & (1 << (k & 7)))

    def _recall(self, n: int) -> None:
        """An id that does not rise, or a parent_id below the recent ones: keep every id of
        the events before line `n` (the log read again up to it), and every id from now on."""
        from .reading import read_line  # reading's envelope check is the one that counts events

        assert self.reread is not None
        source = self.reread()
        try:
            for k, line in enumerate(source, 1):
                if k >= n:
                    break
                got = read_line(k, line, [])
                if got is not None:
                    self.others.add(got[0]["id"])
        finally:
            close = getattr(source, "close", None)
            if close is not None:
                close()
        self.rising = False
        self.recent.clear()
        self.recent_set.clear()


@dataclass(frozen=True)
class Seen:
    """What the exact pass knows of one event by its id."""

    pos: int
    """Its position among the events."""
    seq: int
    """Its seq (its position when it has none)."""
    line: int
    """Its line in the file."""
    type: str
    """Its type."""
    keys: tuple[Any, Any]
    """Its payload's `call_id` and `id` (what an answer is compared on)."""

    def name(self) -> str:
        return f"{self.type} (seq {self.seq})"


class FullIds:
    """Every id of the log with its first and last event (from a pass over the whole log):
    the exact way, for a log with a duplicate id or an answer to no open request."""

    def __init__(self) -> None:
        self.first: dict[str, Seen] = {}
        self.last: dict[str, Seen] = {}

    def record(self, eid: str, seen: Seen) -> None:
        self.first.setdefault(eid, seen)
        self.last[eid] = seen

    def before(self, eid: str, pos: int) -> Seen | None:
        """The first event with `eid` when it is before position `pos`."""
        s = self.first.get(eid)
        return s if s is not None and s.pos < pos else None

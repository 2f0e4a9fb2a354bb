"""Which event ids an audit pass has seen, and where.

`CompactIds` (the streaming pass) keeps our writer's counter ids (`<prefix><seq, zero
padded>`, the first event's prefix and width: `s0001-e0001`) as one bit per seq, so a log we
wrote costs 1 bit an event; any other id is kept as itself. It answers only "seen before?":
what the audit needs to know about an earlier event beyond that (a duplicate id's first
event, an answer's target that is not open) is what only a log with a gap asks, and the
audit then goes again the exact way (`FullIds`, every id's first and last event, from a
first pass over the log).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

_NUMBERED_ID = re.compile(r"(.*?)([0-9]+)")


def id_form(eid: str, seq: Any) -> tuple[str, str] | None:
    """(prefix, format) when `eid` is a prefix and `seq` zero-padded, the way our writer
    numbers ids (`s0001-e0001` for seq 1), else None."""
    m = _NUMBERED_ID.fullmatch(eid)
    if m is None or type(seq) is not int or not m[2].isascii() or int(m[2]) != seq:
        return None
    return m[1], f"0{len(m[2])}d"


class CompactIds:
    """The ids read so far: counter ids of the first event's form as bits, others as themselves."""

    def __init__(self) -> None:
        self.form: tuple[str, str] | None = None
        self.decided = False
        self.bits = bytearray(1024)
        self.others: set[str] = set()

    def add(self, eid: str, seq: Any) -> bool:
        """Record `eid` (its event numbered `seq`); True when it was read before."""
        if not self.decided:
            self.decided = True
            self.form = id_form(eid, seq)
        form = self.form
        if form is not None and type(seq) is int and seq > 0 and eid == form[0] + format(seq, form[1]):
            byte, bit = seq >> 3, 1 << (seq & 7)
            bits = self.bits
            if byte >= len(bits):
                bits.extend(bytes(max(byte + 1 - len(bits), len(bits))))
            if bits[byte] & bit:
                return True
            bits[byte] |= bit
            return bool(self.others) and eid in self.others
        if self.seen(eid):
            return True
        self.others.add(eid)
        return False

    def seen(self, eid: str) -> bool:
        """`eid` was read before."""
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

"""The lockstep prefix of a log diff (`runs/diff.py`) walked over two logs' stored line bytes.

While two logs read from files agree, each pair of lines is decided by its bytes where that is
provably the exact answer, and only A's line is parsed (it is checked as `rows_of` checks it):

- B's line is A's line byte for byte, and no view changes under the rename (no rename; or no
  `\\u` escape in A's bytes that could spell A's id, and A's id absent from them or only
  the event's own session_id: parsed as A's id, and A's id occurs once in the bytes);
- B's line is A's line with `"session_id":"<A's id>"` read as `"session_id":"<B's id>"`, A's
  id occurs once in A's bytes (inside that pattern) and A's line has no `\\u` escape.

Why the second is exact: in a line that parses, the `"` after `:` opens a string (a closing
one would be followed by an id character, which JSON never allows), so the one occurrence is
a whole string value equal to A's id (ids are `[A-Za-z0-9._-]`: no escape spells or splits
them). B's line is then A's JSON with that one value, and nothing else, read as B's id: the
same shape (an event, as A's is), and a view equal to A's with A's id read as B's wherever
it is a whole word (`rename_session`) — every other string lacks A's id, as no `\\u` escape
hides one. So B's line needs no parse of its own; for the usage fold an `llm.response`
line of B is A's row when that one value is A's own session_id, else it is parsed.

A pair neither rule decides (a rerun's lines: their id, parent_id, chain and session id
differ) is parsed on both sides and decided by its payloads' stored bytes where a byte search
finds them exactly (`payload_bytes`, `region_rule`); any other pair as before (`exact`). A
batch with a blank line inside goes through `rows_of` whole, which names a bad line as it did.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import orjson

from ..store.events import EVENT_KEYS
from ..store.replay.logview import STRIDE, LogEvents, Row, rows_of

SPAN = 16 * STRIDE
"""Lines read from each log at once (about 0.6 MB of a reference log's bytes)."""
_ID = re.compile(r"[A-Za-z0-9._-]+")
ByteRule = Callable[[bytes, bytes, object, bool], bool]
_ESCAPE = re.compile(rb"\\u")
"""A `\\u` escape (searched a batch of lines at once: `in` is slow on a two-byte needle)."""


def byte_rule(rename: tuple[str, str] | None) -> ByteRule:
    """When A's line `xa` (its session_id parsed: `sid`; `esc`: False when no line of its batch
    holds a `\\u`) and B's line `xb` have equal views by their bytes alone (module docstring);
    False means "parse and compare", never "they differ"."""
    if not rename or rename[0] == rename[1]:
        return lambda xa, xb, sid, esc: xa == xb
    old, new = rename
    if not (_ID.fullmatch(old) and _ID.fullmatch(new)):
        return lambda xa, xb, sid, esc: False
    needle = old.encode()
    sa, sb = b'"session_id":"%s"' % needle, b'"session_id":"%s"' % new.encode()

    def same(xa: bytes, xb: bytes, sid: object, esc: bool) -> bool:
        if esc and b"\\u" in xa:
            return False
        if xa == xb:  # no view changes: A's id absent, or only the event's own session_id
            return needle not in xa or (sid == old and xa.count(needle) == 1)
        # (one occurrence: any other would overlap the one in `sa`, which ids cannot)
        return xb == xa.replace(sa, sb) and xa.count(needle) == 1

    return same


def region_rule(rename: tuple[str, str] | None) -> Callable[[Row, Row, bytes, bytes, bool], bool]:
    """When two parsed rows `x`, `y` of lines `xa`, `xb` have equal views by their payloads'
    stored bytes (a rerun's lines differ in id, chain and session id, not in payload): the
    same type and actor, the same payload bytes (`payload_bytes`), and nothing in them or in
    A's type and actor that the rename would change (A's id, or a `\\u` escape that could
    spell it). False means "compare them exactly", never "they differ"."""
    old = rename[0] if rename and rename[0] != rename[1] else ""
    needle = old.encode()
    if old and not _ID.fullmatch(old):
        return lambda x, y, xa, xb, esc: False

    def same(x: Row, y: Row, xa: bytes, xb: bytes, esc: bool) -> bool:
        if x[2] != y[2] or x[3] != y[3] or (old and (old in x[2] or old in x[3])):
            return False
        pa = payload_bytes(xa)
        return pa is not None and pa == payload_bytes(xb) and \
            not (old and (needle in pa or (esc and b"\\u" in pa)))

    return same


def payload_bytes(line: bytes) -> bytes | None:
    """The stored bytes that decide the payload of `line`, a line that parses as an event
    object, or None when they cannot be told by a byte search: what lies between the first
    `,"payload":` and the last `,"schema_version":`, when neither `{` (but the object's own)
    nor `[` comes before the one and neither `]` nor `}` (but the object's own) nor another
    `"payload":` after the other. Then both are top-level keys (a `"` after `,` opens a string:
    a closing one would be followed by a letter), and every top-level `payload` key whose
    value can be the last one, and that value, lies within those bytes: two lines with the
    same such bytes parse to the same payload, types included."""
    i, j = line.find(b',"payload":'), line.rfind(b',"schema_version":')
    if i < 0 or j < i or line.count(b"{", 0, i) != 1 or line.find(b"[", 0, i) >= 0 or \
            line.count(b"}", j) != 1 or line.find(b"]", j) >= 0 or line.find(b'"payload":', j) >= 0:
        return None
    return line[i + 11:j]


def agreeing(a: LogEvents, b: LogEvents, rename: tuple[str, str] | None,
             exact: Callable[[Row, Row], bool], fold: Callable[[int, Row], None]) -> int:
    """How many leading event pairs of `a` and `b` have equal views (`exact`'s answer), each
    of their rows passed to `fold` (0: A's, 1: B's); it stops before the first pair that
    differs (its rows not folded) or where the shorter log ends. A bad line raises the
    LogError `rows_of` raises for it."""
    rule, region, m, n = byte_rule(rename), region_rule(rename), min(len(a), len(b)), 0
    old = rename[0] if rename else None
    loads = orjson.loads
    for lo in range(0, m, SPAN):
        hi = min(lo + SPAN, m)
        (chunk, la), (_, lb) = _lines(a, lo, hi), _lines(b, lo, hi)
        if la is None or lb is None:  # a blank line inside: as LogEvents reads it
            for x, y in zip(rows_of(a, lo, hi), rows_of(b, lo, hi), strict=True):
                if not exact(x, y):
                    return n
                fold(0, x)
                fold(1, y)
                n += 1
            continue
        esc, bytewise = _ESCAPE.search(chunk) is not None, True
        for xa, xb in zip(la, lb, strict=True):
            try:  # (as `_row`, inlined: this loop runs once a line, and `_row` is B's parse)
                d = loads(xa)
            except orjson.JSONDecodeError:
                d = None
            if type(d) is dict and d.keys() in EVENT_KEYS and type(d["type"]) is str \
                    and type(d["actor"]) is str:
                x = d["id"], d["session_id"], d["type"], d["actor"], d["payload"]
            else:
                x = next(rows_of(a, n, n + 1))  # raises the LogError naming the line
            if bytewise and rule(xa, xb, x[1], esc):
                if x[2] == "llm.response":  # B's row is A's when A's id is only its session_id
                    fold(0, x)
                    fold(1, x if x[1] == old or xa == xb else _row(loads, xb) or next(rows_of(b, n, n + 1)))
            else:
                y = _row(loads, xb) or next(rows_of(b, n, n + 1))
                if region(x, y, xa, xb, esc):
                    bytewise = False  # (a rerun's lines: the rest of the batch by payloads)
                elif not exact(x, y):
                    return n
                fold(0, x)
                fold(1, y)
            n += 1
    return n


def _lines(events: LogEvents, lo: int, hi: int) -> tuple[bytes, list[bytes] | None]:
    """The bytes of lines lo..hi-1 and the lines (newlines cut), None when blank lines lie
    between them."""
    chunk = events.span(lo, hi)[0]
    lines = chunk.split(b"\n")
    if not lines[-1]:  # (the last line's newline; the log's last line may have none)
        lines.pop()
    return chunk, lines if len(lines) == hi - lo else None


def _row(loads: Callable[[bytes], Any], line: bytes) -> Row | None:
    """The row of a line that is an event as `rows_of` checks it, else None."""
    try:
        d = loads(line)
    except orjson.JSONDecodeError:
        return None
    if type(d) is not dict or d.keys() not in EVENT_KEYS or type(d["type"]) is not str \
            or type(d["actor"]) is not str:
        return None
    return d["id"], d["session_id"], d["type"], d["actor"], d["payload"]

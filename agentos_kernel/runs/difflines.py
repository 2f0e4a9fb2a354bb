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

A batch whose first pair neither rule decides (a rerun's lines: their id, parent_id, chain
and session id differ) is parsed on both sides VIEWS lines at a time, every line checked as
`rows_of` checks it, and its views (type, actor, payload) compared by their orjson encoding,
one call a side for VIEWS pairs: equal encodings of parsed JSON are equal values, types
included (`true`, `1` and `1.0` encode apart), and the list's encoding is its items'
encodings joined by commas, each a complete JSON value (so equal lists are equal items). With
a rename, a run of views whose encoding holds A's id is not decided so (ids are
`[A-Za-z0-9._-]`, which orjson never escapes: a string holding A's id shows it). Where the
encodings differ, the IGNORED fields are dropped and the first pair that still differs is
found by bisection and decided by `exact`. A batch with a line that is not an event, or a view
orjson will not encode, goes the way below. Elsewhere a pair neither rule decides is parsed on
both sides and decided by its payloads' stored bytes where a byte search finds them exactly
(`payload_bytes`, `region_rule`); any other pair as before (`exact`). A batch with a blank
line inside goes through `rows_of` whole, which names a bad line as it did.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from operator import itemgetter
from typing import Any

import orjson

from ..store.events import EVENT_KEYS
from ..store.replay.logview import STRIDE, LogEvents, Row, rows_of

IGNORED = {"hook.fired": ("ms",), "llm.response": ("attempts", "chunks")}
"""Payload fields that measure the run rather than decide it (wall time, retries)."""
SPAN = 16 * STRIDE
"""Lines read from each log at once (about 0.6 MB of a reference log's bytes)."""
VIEWS = STRIDE
"""Pairs of a rerun's lines parsed and compared at once: what they parse to stays in the CPU's
caches (a batch of 1024 a side, ~10 MB of values, measured as slow as parsing a line at a time)."""
_DICT, _STR = {dict}, {str}
_VIEW, _TYPE, _ACTOR = itemgetter("type", "actor", "payload"), itemgetter(0), itemgetter(1)
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
    needle = rename[0].encode() if rename and rename[0] != rename[1] else b""  # A's id, to be renamed
    sa, sb = (b'"session_id":"%s"' % x.encode() for x in rename) if rename else (b"", b"")
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
        if la[0] != lb[0] and la[0].replace(sa, sb) != lb[0]:  # a rerun's batch (a guess)
            k = 0
            for s in range(0, hi - lo, VIEWS):
                got = _views_agree(la[s:s + VIEWS], lb[s:s + VIEWS], needle, exact, fold)
                if got is None:  # a line that is not an event: the rest as before, naming it
                    break
                k += got
                if got < min(VIEWS, hi - lo - s):
                    return n + k
            n += k
            if k == hi - lo:
                continue
            la, lb = la[k:], lb[k:]
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


def _views(lines: list[bytes]) -> list[tuple[str, str, Any]] | None:
    """What the diff compares of each line but the IGNORED fields, (type, actor, payload),
    when every line is an event as `rows_of` checks it; None when one is not (the caller
    then reads the batch as before, naming the line). Each check runs over the whole batch
    in C (map, set): no bytecode runs a line."""
    try:
        ds = list(map(orjson.loads, lines))
    except orjson.JSONDecodeError:
        return None
    if set(map(type, ds)) != _DICT or not all(map(EVENT_KEYS.__contains__, map(dict.keys, ds))):
        return None
    views = list(map(_VIEW, ds))
    if set(map(type, map(_TYPE, views))) != _STR or set(map(type, map(_ACTOR, views))) != _STR:
        return None
    return views


def _drop_ignored(views: list[tuple[str, str, Any]]) -> None:
    """The IGNORED fields taken out of each view's payload (the dicts were just parsed)."""
    for t, _, p in views:
        if t in IGNORED and type(p) is dict:
            for f in IGNORED[t]:
                p.pop(f, None)


def _views_agree(la: list[bytes], lb: list[bytes], needle: bytes, exact: Callable[[Row, Row], bool],
                 fold: Callable[[int, Row], None]) -> int | None:
    """How many leading pairs of a batch have equal views, decided by the views' encodings;
    None when a line is not an event or a view does not encode (read the batch as before)."""
    va = _views(la)
    vb = None if va is None else _views(lb)
    if va is None or vb is None:
        return None
    dumps, k, m = orjson.dumps, 0, len(va)

    def equal(i: int, j: int) -> bool:  # pairs i..j-1 all equal by their encodings
        ea = dumps(va[i:j])
        return ea == dumps(vb[i:j]) and not (needle and needle in ea)

    try:  # (when every view encodes, so does any part of them: nothing raises after this)
        whole = equal(0, m)
    except orjson.JSONEncodeError:
        return None
    if whole:  # the common case
        _fold_same(va, vb, 0, m, fold)
        return m
    _drop_ignored(va)
    _drop_ignored(vb)
    while k < m:
        if equal(k, m):
            j = m
        else:  # the first pair that does not encode equal: bisect
            lo, hi = k, m - 1
            while lo < hi:
                mid = (lo + hi) // 2
                if equal(lo, mid + 1):
                    lo = mid + 1
                else:
                    hi = mid
            j = lo
        _fold_same(va, vb, k, j, fold)
        if j == m:
            return m
        x, y = _as_row(va[j]), _as_row(vb[j])
        if not exact(x, y):
            return j
        fold(0, x)
        fold(1, y)
        k = j + 1
    return m


def _fold_same(va: list[tuple[str, str, Any]], vb: list[tuple[str, str, Any]], i: int, j: int,
               fold: Callable[[int, Row], None]) -> None:
    """The rows of pairs i..j-1 folded (only an `llm.response`'s row is read by the fold)."""
    for k in range(i, j):
        if va[k][0] == "llm.response":
            fold(0, _as_row(va[k]))
            fold(1, _as_row(vb[k]))


def _as_row(v: tuple[str, str, Any]) -> Row:
    """A view as a row: neither the fold nor the comparison reads its id or session id."""
    return "", "", *v

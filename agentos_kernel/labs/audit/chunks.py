"""A run of our writer's lines taken a 64 KiB chunk at a time (stream.py calls `take`).

Every check the line-by-line loop makes on one of our lines is made here on the whole chunk
at once where it can be (in C: one orjson.dumps of the chunk's events compared with its
bytes, the ids against the counter ids formatted in one `%` or each above the one before,
the seqs against a range, the session and envelope version counted), and per event only
where it cannot (the chain, a parent read before, the flow checks, dispatched on the
event's type). Nothing changes until the chunk is known to hold only lines the one-pass loop
would take; the first event that is not (a chain that does not match, a parent not read
before) ends the run there, and the rest of the chunk goes line by line, so findings and
their messages are the loop's.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator
from itertools import chain

import orjson

from .flowfold import PRESENT
from .fold import LogFold
from .model import schema_invalid

CHUNK = 1 << 16
KEYS = ("actor", "chain", "id", "parent_id", "payload", "schema_version", "seq", "session_id",
        "ts", "type")
"""An event of ours, its keys in canonical (sorted) order."""
_KEYSET = frozenset(KEYS)
_BOUNDARY = frozenset(("session.start", "session.close"))
_loads, _dumps, _SORT, _sha = orjson.loads, orjson.dumps, orjson.OPT_SORT_KEYS, hashlib.sha256


def chunks(read: Callable[[int], bytes]) -> Iterator[tuple[list[bytes], bool]]:
    """The file's lines (without their newlines), about `CHUNK` bytes of them at a time,
    and whether they end with a newline (only the file's last line may not)."""
    held: list[bytes] = []  # the start of a line not ended yet
    while data := read(CHUNK):
        lines = data.split(b"\n")
        if len(lines) == 1:
            held.append(data)
            continue
        if held:  # only the first line is copied again
            held.append(lines[0])
            lines[0] = b"".join(held)
            held = []
        if tail := lines.pop():
            held.append(tail)
        yield lines, True
    if held:
        yield [b"".join(held)], False


def take(fold: LogFold, lines: list[bytes], n0: int) -> int:
    """How many of `lines` (a chunk's lines without their newlines, the first being line
    `n0 + 1`) were audited here: 0 when the chunk is not all lines the one-pass loop takes,
    else up to the first event that needs the line-by-line way."""
    ids, flow = fold.ids, fold.flow
    e, m, form, rising = fold.expected, len(lines), ids.form, ids.rising
    if (ids.top is None or m > ids.RECENT) if rising else (form is None or ids.high >= e):
        return 0
    if (ids.others or fold.full is not None or fold.close is not None or not fold.has_seq
            or not fold.has_chain or type(fold.sid) is not str or e < 2):
        return 0
    try:
        objs = list(map(_loads, lines))
        # each line its event's canonical bytes (each line is one JSON value: the joined
        # lines equal the joined encodings only line for line)
        enc, joined = _dumps(objs, option=_SORT), b",".join(lines)
        if len(enc) != len(joined) + 2 or not enc.startswith(joined, 1):
            return 0
        # every key one of ours, and ten of them (the strict zip and the ten names below raise
        # ValueError otherwise): each event has exactly our keys
        if not set(chain.from_iterable(objs)) <= _KEYSET:
            return 0
        columns = zip(*map(dict.values, objs), strict=True)
        actor, digest, eid, pid, payload, version, seq, sid, ts, typ = columns
        seqs = range(e, e + m)
        if rising:  # each a string (else TypeError), each above the one before
            if not ("".join(eid) and eid[0] > ids.top and all(map(str.__lt__, eid, eid[1:]))):
                return 0
        elif form is not None:  # the counter ids: joined, the same string (no id holds "\n")
            tmpl = form[0].replace("%", "%%") + "%" + form[1] + "\n"
            if "\n".join(eid) + "\n" != (tmpl * m) % tuple(seqs):
                return 0
        if (seq != tuple(seqs) or type(sum(seq)) is not int or sid.count(fold.sid) != m
                or version.count("v1") != m):
            return 0
        "".join(ts)  # each a string, else TypeError
        actors = "".join(actor)
        types = set(typ)
    except (orjson.JSONDecodeError, orjson.JSONEncodeError, TypeError, ValueError):
        return 0
    if not all(type(t) is str and t for t in types) or not types.isdisjoint(_BOUNDARY):
        return 0
    if fold.later and not fold.later.keys().isdisjoint(eid):
        return 0
    if actors.isascii() and actors.isprintable() and '"' not in actors and "\\" not in actors:
        at = [11 + len(a) for a in actor]  # where `,"chain":"` starts: the actor needs no escape
    else:
        at = [line.find(b',"chain":"') for line in lines]
    if list(map(type, payload)).count(dict) != m:
        payload = tuple(p if type(p) is dict else {} for p in payload)
    simple = not flow.violations and "schema.violation" not in types
    schema = simple and not flow.seen_violation
    known, event = flow.handlers, flow.event
    handlers = {t: known[t] if t in known else flow.handler(t) for t in types}  # this chunk's
    prev, s, dn, dp = fold.prev, e - 1, n0 + 1 - e, fold.count + 1 - e
    stops, denied, sha, seen = flow.stops, flow.denied, _sha, ids.seen
    width = len(form[0]) if form is not None else 0
    asked, invoked, recent, ordered = flow.llm.open_ids, flow.tool.open_ids, ids.recent_set, ids.recent
    here = set(eid) if rising and pid.count(None) != m else set()
    # the recent ids still among the last RECENT read at every event of this chunk
    low = ordered[len(ordered) + m - ids.RECENT] if len(ordered) + m > ids.RECENT else ""
    for line, k, c, i, par, p, t in zip(lines, at, digest, eid, pid, payload, typ, strict=True):
        if sha(prev + line[:k] + line[k + 75:]).hexdigest() != c:
            break
        if par is None:
            pass
        elif rising:  # an open request's, a recent one, or one of this chunk before it
            if not (type(par) is str and (par in asked or par in invoked
                                          or (par >= low and par in recent) or (par < i and par in here))):
                break
        else:  # read before: an earlier event of this chunk, or a bit set
            try:
                j = int(par[width:]) - e
            except (TypeError, ValueError):
                j = -1
            if not (0 <= j <= s - e and eid[j] == par) and not (type(par) is str and seen(par)):
                break
        s += 1
        prev = c.encode()
        if not simple:
            event(t, i, par, p, s, s + dn, s + dp)
            continue
        if t in stops:
            denied(t, s, s + dn)
        h = handlers[t]
        if h is not None:
            h(t, i, par, p, s, s + dn, s + dp)
        if schema and ("code" in p or "error" in p) and schema_invalid(t, p):
            flow.unlogged(t, s, s + dn, s + dp)
    done = s - e + 1
    if done and rising:  # kept as ids.add keeps them: the highest, the last RECENT
        ids.top = eid[done - 1]
        ordered.extend(eid[:done])
        recent.update(eid[:done])
        while len(ordered) > ids.RECENT:
            recent.discard(ordered.popleft())
    elif done:
        _set_bits(ids, e, s + 1)
    if done:
        flow.present.update(PRESENT.intersection(types if done == m else typ[:done]))
        fold.prev, fold.expected, fold.count = prev, s + 1, fold.count + done
        fold.last = (typ[done - 1], s, s + dn)
    return done


def _set_bits(ids: object, a: int, b: int) -> None:
    """Mark seqs a..b-1 as read (their counter ids)."""
    bits: bytearray = ids.bits  # type: ignore[attr-defined]
    if (b >> 3) >= len(bits):
        bits.extend(bytes(max((b >> 3) + 1 - len(bits), len(bits))))
    while a < b and a & 7:
        bits[a >> 3] |= 1 << (a & 7)
        a += 1
    whole = (b >> 3) - (a >> 3) if a < b else 0
    if whole > 0:
        bits[a >> 3:b >> 3] = b"\xff" * whole
        a += whole * 8
    while a < b:
        bits[a >> 3] |= 1 << (a & 7)
        a += 1
    ids.high = max(ids.high, b - 1)  # type: ignore[attr-defined]

"""Driving the audit over a log's lines: a file 64 KiB at a time, a run of our writer's
lines checked a chunk at once (chunks.py), the common line otherwise in one local loop, any
other through LogFold.event, and the exact way when the one pass cannot answer (fold.py)."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable

import orjson

from .chunks import chunks, take
from .fold import Hints, LogFold
from .ids import Seen
from .model import Gap
from .pairs import Exact
from .reading import read_line

_BOUNDARY = ("session.start", "session.close")


def run(fold: LogFold, lines: Iterable[bytes]) -> None:
    """Feed every line to `fold`: a file a chunk at a time (chunks.py takes a run of our
    writer's lines at once; any other line goes `run_lines`), anything else line by line."""
    read = getattr(lines, "read", None)
    if read is None:
        run_lines(fold, lines)
        return
    n = 0
    for part, ended in chunks(read):
        done = take(fold, part, n) if ended else 0
        if done < len(part):
            # the rest, as the file read line by line gives it: each line with its newline
            # (which a JSON error's position counts)
            rest = part[done:] if done else part
            run_lines(fold, [x + b"\n" for x in rest] if ended else rest, n + done)
        n += len(part)


def run_lines(fold: LogFold, lines: Iterable[bytes], n0: int = 0) -> None:
    """Feed `lines` (the first being line `n0 + 1`) to `fold`. A line our writer wrote that
    is the next link of a numbered, chained log with counter or rising ids (ten fields of the right types, its
    bytes the canonical encoding, the expected seq, the next counter id or an id above the
    highest, the session's id, a parent read recently, its chain the digest) is taken here
    without building anything; any other line,
    and any line before the log shows that form, goes the general way (LogFold.feed), which
    reports what is wrong. Both keep the same state: nothing changes before the line is
    known to be one of ours."""
    loads, dumps, sort, sha = orjson.loads, orjson.dumps, orjson.OPT_SORT_KEYS, hashlib.sha256
    ids, flow_event = fold.ids, fold.flow.event
    open_llm, open_tool = fold.flow.llm.open_ids, fold.flow.tool.open_ids  # ids read before
    bits, recent = ids.bits, ids.recent_set
    ready, rising, prefix, fmt = _ready(fold), fold.ids.rising, "", ""
    if ready:
        prefix, fmt = fold.ids.form or ("", "")
    sid, expected, prev, count = fold.sid, fold.expected, fold.prev, fold.count
    for n, line in enumerate(lines, n0 + 1):
        if ready:
            try:
                obj = loads(line)
                eid, typ, pid, seq, chain = obj["id"], obj["type"], obj["parent_id"], obj["seq"], obj["chain"]
                p, ts, actor = obj["payload"], obj["ts"], obj["actor"]
                # (a chain equal to the digest is 64 lowercase hex digits; an id equal to the
                # counter id, or above the highest id, is a string: any other type raises)
                ok = (len(obj) == 10 and seq == expected and type(seq) is int
                      and (eid > ids.top if rising else eid == prefix + format(seq, fmt))
                      and type(typ) is str and typ
                      and typ not in _BOUNDARY and type(ts) is str and type(actor) is str
                      and obj["session_id"] == sid and obj["schema_version"] == "v1"
                      and (pid is None or pid in open_llm or pid in open_tool
                           or (type(pid) is str and (pid in recent if rising else ids.seen(pid)))))
            except (orjson.JSONDecodeError, KeyError, TypeError):
                ok = False
            if ok:
                byte, bit = seq >> 3, 1 << (seq & 7)
                try:
                    enc = dumps(obj, option=sort)
                except (TypeError, orjson.JSONEncodeError):  # deeper than orjson writes
                    enc = b"-"
                if ((rising or (byte < len(bits) and not bits[byte] & bit))
                        and len(line) - len(enc) <= 1 and line.startswith(enc)):
                    i = enc.find(b',"chain":"')
                    if sha(prev + enc[:i] + enc[i + 75:]).hexdigest() == chain:
                        if rising:
                            ids.add(eid, seq, n)  # above the highest: kept as a recent one
                        else:
                            bits[byte] |= bit
                            if seq > ids.high:
                                ids.high = seq
                        prev, expected = chain.encode(), seq + 1
                        count += 1
                        if fold.later and eid in fold.later:
                            fold.later[eid] = f"{typ} (seq {seq})"
                        flow_event(typ, eid, pid, p if type(p) is dict else {}, seq, n, count)
                        fold.last = (typ, seq, n)
                        continue
            fold.prev, fold.expected, fold.count = prev, expected, count
        fold.feed(n, line)
        bits, form, rising = ids.bits, ids.form, ids.rising
        ready = _ready(fold)
        if ready:
            prefix, fmt = form or ("", "")
            sid, expected, prev, count = fold.sid, fold.expected, fold.prev, fold.count
    if ready:
        fold.prev, fold.expected, fold.count = prev, expected, count


def _ready(fold: LogFold) -> bool:
    """Whether the next line may be taken as the next link of a log of ours."""
    ids = fold.ids
    return ((ids.form is not None or ids.rising) and fold.has_seq and fold.has_chain
            and not ids.others and fold.full is None and fold.close is None
            and type(fold.sid) is str and (ids.top is not None or not ids.rising))


def _hints(lines: Iterable[bytes]) -> Hints:
    """The exact way's first pass: every id, and whether any event has a seq or chain."""
    hints, pos, started = Hints(), 0, False
    for n, line in enumerate(lines, 1):
        got = read_line(n, line, [])
        if got is None:
            continue
        obj = got[0]
        pos += 1
        raw_seq, typ = obj.get("seq"), obj["type"]
        p = obj["payload"] if type(obj["payload"]) is dict else {}
        hints.seq = hints.seq or raw_seq is not None
        hints.chain = hints.chain or "chain" in obj
        if typ == "workflow.started" and not started:
            started, hints.phase = True, p.get("entry_phase")
        hints.ids.record(obj["id"], Seen(pos, pos if raw_seq is None else raw_seq, n, typ,
                                         (p.get("call_id"), p.get("id"))))
    return hints


def audit_gaps(lines: Callable[[], Iterable[bytes]], name: str) -> tuple[int, list[Gap], list[str]]:
    """(events, gaps, notes) of the log whose lines `lines()` gives (called again for the
    exact way)."""
    notes: list[str] = []
    try:
        fold = LogFold(reread=lines)
        _run(fold, lines)
        count, gaps = fold.finish(name, notes)
        return count, gaps, notes
    except Exact:
        pass
    notes = []
    source = lines()
    try:
        hints = _hints(source)
    finally:
        _close(source)
    fold = LogFold(hints)
    _run(fold, lines)
    count, gaps = fold.finish(name, notes)
    return count, gaps, notes


def _run(fold: LogFold, lines: Callable[[], Iterable[bytes]]) -> None:
    source = lines()
    try:
        run(fold, source)
    finally:
        _close(source)


def _close(source: Iterable[bytes]) -> None:
    """Close what `lines()` opened (a file, a generator over pages)."""
    close = getattr(source, "close", None)
    if close is not None:
        close()

"""L4 integrity, line by line: the checks `integrity.verify_lines` runs on each complete line of
a log (envelope, key held twice, folder, place, chain, close), in the order docs/log-format.md
gives, and the Finding each names. One pass, streaming, in bounded state for a log our writer
wrote (what was seen: integrity_seen.py); a line that is the next canonical link of the chain
is checked by `Scan.run` without building an Event (docs/reliability.md "What verify
checks, and how")."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator
from itertools import count, repeat
from pathlib import Path
from typing import Any

import orjson

from .dupkeys import duplicate_key
from .events import Event, LogError, canonical, chain_of
from .integrity_seen import Finding, Seen, id_form, missing, ten_fields, writer_ids

_CANONICAL_LINE = orjson.OPT_SORT_KEYS | orjson.OPT_APPEND_NEWLINE
_REMEMBERED = 256
"""How many actors and types a Scan remembers (`Scan.run` takes a line only with one of them)."""


class Scan(Seen):
    """The state of one pass over a log: the first problem, and what it needs to name it
    (integrity.verify_lines feeds it each complete line)."""

    def __init__(self, path: Path, anchor: str | None, folder: str | None) -> None:
        self.path = path
        self.anchor = anchor
        self.folder = folder  # the session id the log's place names, when it names one
        self.blank: Finding | None = None
        self.misplaced: Finding | None = None
        self.respelled = 0  # lines that are not canonical bytes (noted for a chained log)
        self.first_respelled: int | None = None
        self.anchored_at: int | None = None  # events up to the line whose chain is the anchor
        self.events = 0
        self.problem: Finding | None = None
        self.chained: bool | None = None  # decided by the first event
        self.numbered: bool | None = None
        self.session_id: str | None = None
        self.prev_chain: str | None = None
        super().__init__()
        self.fold: Any = None  # integrity.Folding: folds each event as it checks out
        self.last: Any = None  # the last event read before any problem
        # An actor's canonical bytes as a line begins (`{"actor":"..."`), and where the chain
        # member after them ends; what `run` calls for a type (`fold.for_type`). Never session.close.
        self.heads: dict[str, tuple[bytes, int]] = {}
        self.steps: dict[str, Callable[[dict[str, Any]], None] | None] = {}
        self.next_id: str | bool | None = None  # the id `run` expects next (True: any id above
        # the last, the ids rising; None: `run` is off)
        self.prev_link = b""  # prev_chain, encoded
        self.closed_at: int | None = None
        self.gap: tuple[int, int, int] | None = None  # (line, first missing seq, seq found)

    def line(self, n: int, obj: Any, raw: bytes) -> None:
        self.events += 1
        self.next_id = None  # `fast` resumes only after this line checks out
        if self.problem is not None:
            self._after_problem(n, obj)
            return
        try:
            ev = Event.from_dict(obj, where=f"line {n}")
        except LogError as exc:
            self.problem = Finding("bad-envelope", n, _seq(obj), f"{exc}; the envelope is in "
                                   "docs/log-format.md")
            return
        self.problem = self._check(n, ev, obj, raw)
        if self.problem is not None:
            return
        if self.events == 1 and self.numbered:
            self.id_form = id_form(ev.id, ev.seq)
        self.record(ev.id, ev.seq, n)
        self.last = obj
        self._remember(ev.actor, ev.type)
        self.prev_chain, self.prev_seq = ev.chain, ev.seq or 0
        self.prev_link = (ev.chain or "").encode()
        if ev.chain is not None and ev.chain == self.anchor:
            self.anchored_at = self.events
        if ev.type == "session.close" and self.closed_at is None:
            self.closed_at = n
        self.next_id = self._next_id()  # None from a session.close on: `run` is not for what follows

    def run(self, lines: Iterator[bytes]) -> tuple[int, bytes | None]:
        """Take lines from `lines` while each is the next canonical, chained link of a
        numbered log with the writer's or rising ids (`next_id`) whose actor and type an
        earlier line had (session.close never: the general way takes it); return how many it
        took and the first line it did not take (None at the end), to be checked the general
        way (`line`). What it takes, the general way would take too (test_verify_bounded.py,
        test_verify_differential.py)."""
        loads, dumps, sha = orjson.loads, orjson.dumps, hashlib.sha256
        first = self.prev_seq + 1
        link, sid, ids, heads, steps = self.prev_link, self.session_id, self.ids, self.heads, self.steps
        rising = self.next_id is True
        expected = repeat(None) if rising or self.id_form is None else writer_ids(self.id_form, first)
        anchor = self.anchor or ""  # never a chain: a str compared with a str, not with None
        top: Any = self.top
        last: Any = self.last
        envelope = ten_fields(last)
        want, stop = first - 1, None
        for raw, want, e in zip(lines, count(first), expected):
            try:  # the ten fields, no other key; the expected seq and id; the session's id; ts
                # a str; an actor and a type seen before (the caches hold str keys only)
                obj = loads(raw)
                q, i, s, a, ts, t, chain, _, _, _ = envelope(obj)
                head, cut = heads[a]
                step = steps[t]
                if (q != want or type(q) is not int or len(obj) != 10 or s != sid or type(ts) is not str
                        or ((i != e or (ids and e in ids)) if e is not None
                            else (type(i) is not str or i <= top))
                        # Its bytes are the canonical encoding of what was read, a newline after
                        # (so they begin with `head`, the chain member next), and its chain the
                        # digest of those bytes with the chain member cut out.
                        or dumps(obj, option=_CANONICAL_LINE) != raw
                        or sha(link + head + raw[cut:-1]).hexdigest() != chain):
                    stop = raw
                    break
            except (ValueError, TypeError, KeyError):  # orjson's errors are ValueError, TypeError
                stop = raw
                break
            if step is not None:
                step(obj)
            link, top, last = chain.encode(), i, obj
            if chain == anchor:
                self.anchored_at = self.events + want - first + 1
        else:
            want += 1  # the lines ran out: the last one was taken
        taken = want - first
        if taken:
            self.prev_seq, self.prev_link, self.prev_chain = want - 1, link, link.decode()
            self.events, self.last = self.events + taken, last
            if rising:
                self.top = top
        self.next_id = self._next_id()
        return taken, stop

    def _remember(self, actor: str, t: str) -> None:
        if actor not in self.heads and len(self.heads) < _REMEMBERED:
            head = b'{"actor":' + orjson.dumps(actor)  # what canonical() begins a line with
            self.heads[actor] = head, len(head) + 75  # ',"chain":"' + 64 hex digits + '"'
        if t not in self.steps and t != "session.close" and len(self.steps) < _REMEMBERED:
            self.steps[t] = None if self.fold is None else self.fold.for_type(t)

    def _next_id(self) -> str | bool | None:
        """The writer's id of the next seq, when the log is chained, numbered and its ids
        the writer's, with no id of that form kept (else None: `fast` does not apply)."""
        form = self.id_form
        if not self.chained or not self.numbered or self.problem is not None or self.closed_at is not None:
            return None
        if form is None:
            return True if self.top is not None else None
        eid = form[0] + format(self.prev_seq + 1, form[1])
        return None if eid in self.ids else eid

    def blank_line(self, n: int) -> None:
        if self.problem is None:
            self.blanks.append(n)
        if self.blank is None:
            self.blank = Finding("blank-line", n, None, f"line {n} is blank: our writer never writes "
                                 "one, so the file was edited (the events around it are checked on)")

    def _check(self, n: int, ev: Event, obj: dict[str, Any], raw: bytes) -> Finding | None:
        if not isinstance(ev.id, str) or not isinstance(ev.session_id, str):
            return Finding("bad-envelope", n, _seq(ev.to_dict()), f"line {n}: id and session_id must "
                                                                   "be strings")
        try:
            enc = canonical(obj)
        except (TypeError, orjson.JSONEncodeError):  # orjson encodes 254 levels, reads 1024
            return Finding("bad-envelope", n, ev.seq, f"line {n} nests its JSON too deep to be "
                                                      "encoded (over 254 levels): it has no canonical bytes")
        # Our writer writes each line as its canonical bytes (a newline after). Any other
        # spelling is read again for a key held twice, which orjson reads last-wins unseen.
        exact = len(raw) - len(enc) <= 1 and raw.startswith(enc)
        if not exact:
            if (key := duplicate_key(raw)) is not None:
                return Finding("duplicate-key", n, ev.seq, f"line {n} holds the key {key} twice in one "
                                                           "object: readers that keep the first value see "
                                                           "another event than those that keep the last "
                                                           "(as this check does); written by hand")
            self.respelled += 1
            self.first_respelled = self.first_respelled or n
        if self.chained is None:  # the first event decides what the log carries
            self.chained, self.numbered = ev.chain is not None, ev.seq is not None
            self.session_id = ev.session_id
            if self.folder is not None and ev.session_id != self.folder:  # reported beside
                self.misplaced = Finding("misplaced", n, ev.seq, f"line {n} belongs to session "
                                         f"{ev.session_id!r}, but the log lies in the folder of "
                                         f"{self.folder!r}: another session's log was copied or moved here")
        if (first := self.seen(ev.id, n)) is not None:
            return Finding("duplicated", n, ev.seq, f"line {n} repeats event {ev.id!r}, first written "
                                                    f"at line {first}: a line was copied")
        if self.numbered:
            found = self._seq(n, ev)
            if found is not None:
                return found
        if self.chained:
            if ev.chain is None:
                return Finding("forged", n, ev.seq, f"line {n} ({ev.type}) has no chain while the log is "
                                                    "chained: it was added by hand")
            # The chain from the line's own bytes, its chain member cut out, when they are the
            # canonical ones and hold what chain_of would encode (ts a string, seq not null).
            if exact and type(obj["ts"]) is str and obj.get("seq", 0) is not None \
                    and (at := enc.find(b',"chain":"')) > 0:
                link = hashlib.sha256((self.prev_chain or "").encode() + enc[:at] + enc[at + 75:]).hexdigest()
            else:
                link = chain_of(self.prev_chain, ev)
            if link != ev.chain:
                return Finding("altered", n, ev.seq, f"line {n} ({ev.type}) does not hash to its recorded "
                                                     "chain: it was edited after it was written (or the "
                                                     "line before it was, and that line's chain recomputed)")
        elif ev.chain is not None:
            return Finding("bad-envelope", n, ev.seq, f"line {n} has a chain but the first line has "
                                                      "none: a log is chained on every line or on none")
        if ev.session_id != self.session_id:
            return Finding("bad-envelope", n, ev.seq, f"line {n} belongs to session {ev.session_id!r}, "
                                                      f"the log to {self.session_id!r}: one log, one session")
        if self.closed_at is not None and ev.type != "event.amended":
            return Finding("appended", n, ev.seq, f"line {n} ({ev.type}) follows session.close at line "
                                                  f"{self.closed_at}: only event.amended may; it was "
                                                  "appended after the session closed")
        return None

    def _seq(self, n: int, ev: Event) -> Finding | None:
        seq, want = ev.seq, self.prev_seq + 1
        if not isinstance(seq, int) or isinstance(seq, bool):
            return Finding("bad-envelope", n, None, f"line {n} has no integer seq while the log is "
                                                    "numbered: every line carries one, 1..N")
        if 1 <= seq < want:  # seqs so far are 1..want-1, each once
            return Finding("duplicated", n, seq, f"line {n} repeats seq {seq} of line {self.line_of(seq)}: "
                                                 "a line was copied")
        if seq < want:
            return Finding("reordered", n, seq, f"line {n} holds seq {seq} after seq {self.prev_seq}: "
                                                "lines were moved")
        if seq > want:
            self.gap = (n, want, seq)
            return Finding("removed", n, want, missing(n, want, seq))
        return None

    def _after_problem(self, n: int, obj: Any) -> None:
        """A gap whose missing seq turns up later was a swap, not a removal."""
        if self.gap is None or self.problem is None or self.problem.kind != "removed":
            return
        line, want, found = self.gap
        seq = _seq(obj)
        if isinstance(seq, int) and want <= seq < found:
            self.problem = Finding("reordered", line, found,
                                   f"line {line} holds seq {found} before seq {seq} (line {n}): "
                                   "lines were swapped or moved")

    def finish(self, notes: list[str]) -> tuple[Finding | None, Finding | None, str | None]:
        """The problem, the blank line and the head, once every line was read (notes added)."""
        problem, blank = self.problem, self.blank
        if problem is None and self.events == 0:
            blank = None  # only whitespace: that is what an empty log is
            problem = Finding("empty-log", None, None, "the log holds no complete event: nothing to replay "
                                                       "(a session that never started, or a wiped log)")
        if problem is None and self.anchor is not None:
            problem = self._anchor(self.anchor)
        if not self.chained and self.events:
            notes.append("no chain to verify: edits cannot be proven (envelope, seq and ids were checked)")
        if self.respelled and self.chained and self.problem is None:
            notes.append(f"{self.respelled} line(s) hold their values in another spelling than "
                         f"the canonical bytes our writer writes (first: line {self.first_respelled}); the "
                         "chain covers the values, so they verify")
        if self.events and self.closed_at is None and self.problem is None:
            notes.append("no session.close: the session is running, was killed, or its last lines "
                         "were cut (the chain alone cannot tell; an expected head can)")
        head = self.prev_chain if self.problem is None and self.chained else None
        return problem, blank, head

    def _anchor(self, expected: str) -> Finding | None:
        """An anchored head (noted elsewhere) proves what the chain alone cannot."""
        if not self.chained:
            return Finding("head-missing", None, None, "an expected head was given but the log has no chain")
        count = self.anchored_at
        if count is None:
            return Finding("head-missing", None, None,
                           f"the expected head {expected[:12]}… is not the chain of any line: the log "
                           f"was cut short or its tail rewritten (its head is now {self.prev_chain})")
        if count < self.events:
            return Finding("appended", None, count + 1,
                           f"the log continues past the expected head (event {count}): "
                           f"{self.events - count} event(s) were appended after it was noted")
        return None


def _seq(obj: Any) -> int | None:
    seq = obj.get("seq") if isinstance(obj, dict) else None
    return seq if isinstance(seq, int) and not isinstance(seq, bool) else None

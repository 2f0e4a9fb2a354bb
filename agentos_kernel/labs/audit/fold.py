"""The audit as one pass over a log's lines, in state bounded by what is open at once.

Each line is parsed once and checked where it stands: its envelope, seq, chain (over its
canonical bytes, which the same encoding also compares with the line), parent, start and
close (here), then the flow checks (flowfold.py: requests and their answers, transitions,
hook denies and schema violations awaiting what follows them, the cycle's phase). A check
whose verdict on an event waits on a later one (a parent_id naming a later event; a
missing seq or chain, a finding only once any event has one) keeps that event's finding
pending. Gaps are kept per check and listed in the same order as ever: check order, then
log order.

What only a log with a gap asks (a repeated id, an answer whose parent_id names no open
request of its kind), or held findings past `PENDING_CAP`, raise `Exact`: the log is then
read twice more, once to index every id (ids.FullIds) and to learn what the first pass had
to wait for, then audited again knowing it. That way keeps every id with its event's type
and seq (the list-based audit it replaced kept every event object). stream.py drives it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable
from typing import Any

from . import flowfold
from .flowfold import PENDING_CAP
from .ids import CompactIds, FullIds
from .model import Gap
from .pairs import Exact
from .reading import read_line

_CHAIN_KEY = b',"chain":"'
_sha256 = hashlib.sha256


class Hints:
    """What the exact way knows before its second pass (from the first)."""

    def __init__(self) -> None:
        self.seq = False
        """Some event has a seq."""
        self.chain = False
        """Some event has a chain."""
        self.phase: Any = None
        """The first workflow.started's entry_phase."""
        self.ids = FullIds()
        """Every id's first and last event."""


class LogFold:
    """One pass of the audit; `feed` each line, then `finish`."""

    def __init__(self, hints: Hints | None = None,
                 reread: Callable[[], Iterable[bytes]] | None = None) -> None:
        self.hints = hints
        self.full = hints.ids if hints is not None else None
        self.ids = CompactIds(reread)  # `reread`: the log's lines again, for rising ids
        self.read: list[Gap] = []
        self.envelope: list[Gap] = []
        self.seq: list[Gap] = []
        self.chain: list[Gap] = []
        self.start: list[Gap] = []
        self.closes: list[Gap] = []
        self.has_seq = hints is not None and hints.seq
        self.has_chain = hints is not None and hints.chain
        self.pending_seq: list[Gap] | None = []  # None: past the cap
        self.pending_chain: list[Gap] | None = []
        self.parents: list[tuple[int, int, str, str]] = []  # seq, line, type, parent_id
        self.later: dict[str, str] = {}  # a parent_id not yet read -> the last event with it
        self.expected = 1
        self.prev = b""
        self.count = 0
        self.sid: Any = None
        self.first: tuple[str, Any] = ("", None)  # the first event's type and actor
        self.last: tuple[str, int, int] = ("", 0, 0)  # the last event's type, seq and line
        self.started = False
        self.close: tuple[int, int, dict[str, Any]] | None = None  # seq, line, payload
        self.after: list[Any] = [0, None]  # events after the close, the first one (name, line)
        self.flow = flowfold.FlowFold(self.full, hints.phase if hints is not None else flowfold.UNKNOWN)

    def feed(self, n: int, line: bytes) -> None:
        got = read_line(n, line, self.read)
        if got is not None:
            self.event(n, got[0], got[1])

    def event(self, n: int, obj: dict[str, Any], enc: bytes) -> None:
        pos = self.count = self.count + 1
        eid, typ, pid = obj["id"], obj["type"], obj["parent_id"]
        raw_seq = obj.get("seq")
        seq = pos if raw_seq is None else raw_seq
        p = obj["payload"]
        if type(p) is not dict:
            p = {}
        if pos == 1:
            self.sid, self.first = obj["session_id"], (typ, obj.get("actor"))
        full = self.full
        # check_parents: before this event's own id is counted
        if pid is not None and not (self.ids.seen(pid, n) if full is None else full.before(pid, pos)):
            self.parents.append((seq, n, typ, pid))
            self.later.setdefault(pid, "")
        if full is None:
            if self.ids.add(eid, raw_seq, n):
                raise Exact
        else:
            first = full.before(eid, pos)
            if first is not None:
                self.envelope.append(Gap("envelope", seq, n, f"id {eid!r} is already the id of "
                                         f"{first.name()} (line {first.line}); every event needs a "
                                         "unique id"))
        if self.later and eid in self.later:
            self.later[eid] = f"{typ} (seq {seq})"
        if obj["session_id"] != self.sid:
            self.envelope.append(Gap("envelope", seq, n, f"session_id is {obj['session_id']!r} but "
                                     f"the log began as session {self.sid!r}; one log holds one session"))
        self._seq(n, typ, seq, raw_seq)
        self._chain(n, typ, seq, obj.get("chain"), enc)
        if typ == "session.start":
            if self.started:
                self.start.append(Gap("start", seq, n, "a second session.start: one log holds one session"))
            else:
                self.started = True
                if pos != 1:
                    self.start.append(Gap("start", seq, n, f"session.start is at line {n}, not first; "
                                                           "nothing happens before a session starts"))
        close = self.close
        if typ == "session.close":
            if close is None:
                self.close = (seq, n, p)
            else:
                self.closes.append(Gap("closed", seq, n, f"a second session.close (the first is seq "
                                                         f"{close[0]}): a session closes once"))
        elif close is not None and typ != "event.amended":
            self.after[0] += 1
            if self.after[1] is None:
                self.after[1] = (f"{typ} (seq {seq})", n)
        self.last = (typ, seq, n)
        self.flow.event(typ, eid, pid, p, seq, n, pos)

    def _seq(self, n: int, typ: str, seq: int, raw_seq: Any) -> None:
        expected = self.expected
        if raw_seq is None:
            gap = Gap("seq", seq, n, f"{typ} at line {n} has no seq while the rest of the log is "
                                     f"numbered; expected seq {expected}")
            if self.has_seq:
                self.seq.append(gap)
            else:
                self.pending_seq = _hold(self.pending_seq, gap)
        else:
            if not self.has_seq:
                self.has_seq = True
                self.seq = _flush(self.pending_seq)
            if raw_seq != expected:
                missing = f"{expected}" if raw_seq == expected + 1 else f"{expected}..{raw_seq - 1}"
                why = (f"seq {missing} is missing (a dropped line?)" if raw_seq > expected
                       else "a repeated or reordered line")
                self.seq.append(Gap("seq", seq, n, f"{typ} has seq {raw_seq} where {expected} was "
                                                   f"expected: {why}; seq must count 1..N in file order"))
                expected = raw_seq
        self.expected = expected + 1

    def _chain(self, n: int, typ: str, seq: int, recorded: str | None, enc: bytes) -> None:
        if recorded is None:
            gap = Gap("chain", seq, n, f"{typ} at line {n} has no chain while the rest of the log "
                                       "is chained: a line was added by hand")
            if self.has_chain:
                self.chain.append(gap)
            else:
                self.pending_chain = _hold(self.pending_chain, gap)
            return
        if not self.has_chain:
            self.has_chain = True
            self.chain = _flush(self.pending_chain)
        # The chain is over the canonical bytes without `chain`, which sorts right after actor.
        i = enc.find(_CHAIN_KEY)
        if _sha256(self.prev + enc[:i] + enc[i + 75:]).hexdigest() != recorded:
            self.chain.append(Gap("chain", seq, n, f"{typ}'s chain does not match sha256(previous "
                                                   "chain + its canonical bytes): this line, or the "
                                                   "one before it, was edited, dropped or reordered "
                                                   "after it was written"))
        self.prev = recorded.encode()

    def finish(self, name: str, notes: list[str]) -> tuple[int, list[Gap]]:
        """(events read, every gap in check order)."""
        gaps = self.read
        if not self.count:
            if not gaps:
                gaps.append(Gap("envelope", None, None, f"{name} holds no event; a session log "
                                                        "starts with session.start"))
            return 0, gaps
        gaps += self.envelope + self.seq + self.chain
        for seq, n, typ, pid in self.parents:
            later = self.later.get(pid) if self.full is None else (
                s.name() if (s := self.full.last.get(pid)) is not None else None)
            where = f"a later event, {later}" if later else "no event in this log"
            gaps.append(Gap("parent", seq, n, f"{typ} has parent_id {pid!r}, which is {where}; "
                                              "parent_id must name an earlier event (the one it answers)"))
        if not self.started:
            gaps.append(Gap("start", None, None, "no session.start: a session log begins with "
                                                 "session.start {prompt, ...}"))
        gaps += self.start
        gaps += self._closed()
        gaps += self.flow.finish(self.close, self.first, notes)
        return self.count, gaps

    def _closed(self) -> list[Gap]:
        if self.close is None:
            typ, seq, line = self.last
            return [Gap("closed", None, None, f"no session.close: the log ends with {typ} (seq {seq}) "
                                              f"at line {line}; close every session, ok or not "
                                              "(session.close {ok, reason})")]
        gaps = self.closes
        seq, n, p = self.close
        count, first = self.after
        if count:
            gaps.append(Gap("closed", seq, n, f"session.close is not the last event: {count} event(s) "
                                              f"follow it, first {first[0]} at line {first[1]}; only "
                                              "event.amended may follow the close"))
        ok = p.get("ok")
        if not isinstance(ok, bool):
            gaps.append(Gap("closed", seq, n, "session.close has no boolean `ok`; say whether the "
                                              "session succeeded"))
        elif not ok and not p.get("reason"):
            gaps.append(Gap("closed", seq, n, "session.close {ok: false} has no `reason`; a failed "
                                              "session says why it failed"))
        return gaps


def _hold(pending: list[Gap] | None, gap: Gap) -> list[Gap] | None:
    """`gap` held in `pending` (or a check's list); None once past the cap."""
    if pending is None or len(pending) >= PENDING_CAP:
        return None
    pending.append(gap)
    return pending


def _flush(pending: list[Gap] | None) -> list[Gap]:
    """The held findings, now that they apply; Exact when some were not held."""
    if pending is None:
        raise Exact
    return pending

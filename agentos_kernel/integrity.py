"""L4 integrity: does a session log still hold what its writer wrote?

`verify_log` reads a log once, streaming, and checks every line's envelope, its place
(`seq`, unique `id`) and the hash chain (events.chain_of), and names the first problem by
kind, seq and line: an altered, removed, reordered, duplicated, forged (unchained) or
appended event, a bad envelope, an empty log. A torn final line (a writer killed
mid-append) is reported beside it; `log_repair.repair_torn` sets it aside in
`.events.jsonl.torn`. What a keyless chain can and cannot prove is in docs/log-format.md.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import orjson

from .events import Event, LogError, TornTail, chain_of

TORN_SUFFIX = ".torn"


@dataclass(frozen=True)
class Finding:
    """One thing wrong with a log."""

    kind: str
    """altered | removed | reordered | duplicated | forged | appended | head-missing |
    bad-envelope | empty-log | torn-tail."""
    line: int | None
    """File line (1-based) where it shows, when there is one."""
    seq: int | None
    """The event's seq (for `removed`, the first missing seq), when known."""
    message: str
    """What was found and what it means, in one sentence."""


@dataclass(frozen=True)
class VerifyReport:
    """The verdict on one log file."""

    path: Path
    """The log file."""
    events: int
    """Complete lines read (a torn final line is not one)."""
    chained: bool
    """The log carries the hash chain (else only envelope, seq and ids were checked)."""
    head: str | None
    """The chain of the last event, when every link verified: the log's fingerprint; note it
    elsewhere and pass it back as `expected_head` to prove nothing was appended or cut."""
    problem: Finding | None = None
    """The first problem among the complete lines (or the empty log, or a missing head)."""
    torn: TornTail | None = None
    """A torn final line, set aside by every reader."""
    notes: tuple[str, ...] = ()
    """What is worth knowing but is not a problem (no chain to verify, no final newline)."""
    unterminated: bool = False
    """The last line is a complete event without its newline (`repair_torn` adds it)."""

    @property
    def ok(self) -> bool:
        """Nothing wrong: no problem and no torn line."""
        return self.problem is None and self.torn is None

    @property
    def findings(self) -> tuple[Finding, ...]:
        """The problem, then the torn line, as Findings."""
        torn = None if self.torn is None else Finding(
            "torn-tail", self.torn.line, None,
            f"torn final line ({self.torn.size} bytes, no newline, not JSON): a writer stopped "
            f"mid-append; the complete lines before it load; `agentos verify --repair` moves it "
            f"to {self.path.name}{TORN_SUFFIX}")
        return tuple(f for f in (self.problem, torn) if f is not None)

    def verdict(self) -> str:
        """One line per finding (`path:line: kind: message`), or one `ok` line."""
        if self.ok:
            what = (f"chain intact, head {self.head}" if self.chained
                    else "no chain to verify (envelope, seq and ids checked)")
            return f"ok {self.path}: {self.events} events, {what}"
        return "\n".join(f"{self.path}:{f.line or '-'}: {f.kind}: {f.message}" for f in self.findings)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready data: path, ok, events, chained, head, findings, notes."""
        return {"path": str(self.path), "ok": self.ok, "events": self.events, "chained": self.chained,
                "head": self.head, "findings": [asdict(f) for f in self.findings],
                "notes": list(self.notes)}


class _Scan:
    """The state of one pass over a log: the first problem, and what it needs to name it."""

    def __init__(self, path: Path, anchor: str | None) -> None:
        self.path = path
        self.anchor = anchor
        self.anchored_at: int | None = None  # events up to the line whose chain is the anchor
        self.events = 0
        self.problem: Finding | None = None
        self.chained: bool | None = None  # decided by the first event
        self.numbered: bool | None = None
        self.session_id: str | None = None
        self.prev_chain: str | None = None
        self.prev_seq = 0
        self.ids: dict[str, int] = {}  # id -> line
        self.seqs: dict[int, int] = {}  # seq -> line
        self.closed_at: int | None = None
        self.gap: tuple[int, int, int] | None = None  # (line, first missing seq, seq found)

    def line(self, n: int, obj: Any) -> None:
        self.events += 1
        if self.problem is not None:
            self._after_problem(n, obj)
            return
        try:
            ev = Event.from_dict(obj, where=f"line {n}")
        except LogError as exc:
            self.problem = Finding("bad-envelope", n, _seq(obj), f"{exc}; the envelope is in "
                                   "docs/log-format.md")
            return
        self.problem = self._check(n, ev)
        if self.problem is not None:
            return
        self.ids[ev.id] = n
        if ev.seq is not None:
            self.seqs[ev.seq] = n
        self.prev_chain, self.prev_seq = ev.chain, ev.seq or 0
        if ev.chain is not None and ev.chain == self.anchor:
            self.anchored_at = self.events
        if ev.type == "session.close" and self.closed_at is None:
            self.closed_at = n

    def _check(self, n: int, ev: Event) -> Finding | None:
        if not isinstance(ev.id, str) or not isinstance(ev.session_id, str):
            return Finding("bad-envelope", n, _seq(ev.to_dict()), f"line {n}: id and session_id must "
                                                                   "be strings")
        if self.chained is None:  # the first event decides what the log carries
            self.chained, self.numbered = ev.chain is not None, ev.seq is not None
            self.session_id = ev.session_id
        if ev.id in self.ids:
            return Finding("duplicated", n, ev.seq, f"line {n} repeats event {ev.id!r}, first written "
                                                    f"at line {self.ids[ev.id]}: a line was copied")
        if self.numbered:
            found = self._seq(n, ev)
            if found is not None:
                return found
        if self.chained and ev.chain is None:
            return Finding("forged", n, ev.seq, f"line {n} ({ev.type}) has no chain while the log is "
                                                "chained: it was added by hand")
        if self.chained and chain_of(self.prev_chain, ev) != ev.chain:
            return Finding("altered", n, ev.seq, f"line {n} ({ev.type}) does not hash to its recorded "
                                                 "chain: it was edited after it was written (or the line "
                                                 "before it was, and that line's chain recomputed)")
        if not self.chained and ev.chain is not None:
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
        if seq in self.seqs:
            return Finding("duplicated", n, seq, f"line {n} repeats seq {seq} of line {self.seqs[seq]}: "
                                                 "a line was copied")
        if seq < want:
            return Finding("reordered", n, seq, f"line {n} holds seq {seq} after seq {self.prev_seq}: "
                                                "lines were moved")
        if seq > want:
            self.gap = (n, want, seq)
            return Finding("removed", n, want, _missing(n, want, seq))
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

    def report(self, torn: TornTail | None, notes: list[str], unterminated: bool) -> VerifyReport:
        problem = self.problem
        if problem is None and self.events == 0:
            problem = Finding("empty-log", None, None, "the log holds no complete event: nothing to replay "
                                                       "(a session that never started, or a wiped log)")
        if problem is None and self.anchor is not None:
            problem = self._anchor(self.anchor)
        if not self.chained and self.events:
            notes.append("no chain to verify: edits cannot be proven (envelope, seq and ids were checked)")
        if self.events and self.closed_at is None and self.problem is None:
            notes.append("no session.close: the session is running, was killed, or its last lines "
                         "were cut (the chain alone cannot tell; an expected head can)")
        head = self.prev_chain if self.problem is None and self.chained else None
        return VerifyReport(self.path, self.events, bool(self.chained), head, problem, torn,
                            tuple(notes), unterminated)

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


def _missing(n: int, want: int, found: int) -> str:
    which = f"seq {want}" if found == want + 1 else f"seqs {want}..{found - 1}"
    return (f"{which} missing before line {n} (which holds seq {found}): "
            f"{'an event was' if found == want + 1 else 'events were'} removed")


def verify_log(path: Path, expected_head: str | None = None) -> VerifyReport:
    """Check a log line by line; streaming, one pass. `expected_head` (a head noted earlier,
    e.g. from a previous `agentos verify`) also proves an appended or cut-off tail."""
    path = Path(path)
    with path.open("rb") as f:
        return verify_lines(f, path, expected_head)


def verify_session(store: Any, session_id: str, expected_head: str | None = None) -> VerifyReport:
    """`verify_log` of one session of a store (JSONL or PostgreSQL: anything with `lines` and
    `path`), over its lines as stored."""
    return verify_lines(store.lines(session_id), Path(store.path(session_id)), expected_head)


def verify_lines(lines: Iterable[bytes], path: Path, expected_head: str | None = None) -> VerifyReport:
    """`verify_log` over a log's lines (each with its newline) from anywhere, e.g. a database
    (pg_store.PostgresEventStore.lines); `path` names the log in the report."""
    scan = _Scan(path, expected_head)
    torn: TornTail | None = None
    notes: list[str] = []
    unterminated = False
    offset = 0
    for n, raw in enumerate(lines, 1):
        offset += len(raw)
        if not raw.strip():
            continue
        try:
            obj = orjson.loads(raw)
        except orjson.JSONDecodeError as exc:
            if not raw.endswith(b"\n"):  # the final segment: torn, set aside
                torn = TornTail(path, n, offset - len(raw), len(raw))
                break
            scan.events += 1
            if scan.problem is None:
                scan.problem = Finding("bad-envelope", n, None, f"line {n} is not JSON ({exc}): a "
                                       "line in the middle of a log is never torn, so it was damaged")
            continue
        if not raw.endswith(b"\n"):
            unterminated = True
            notes.append(f"line {n} is complete but has no final newline (--repair adds it)")
        scan.line(n, obj)
    return scan.report(torn, notes, unterminated)

"""L4 integrity: does a session log still hold what its writer wrote?

`verify_log` reads a log once, streaming, and checks every line's envelope, its place
(`seq`, unique `id`) and the hash chain (events.chain_of), and names the first problem by
kind, seq and line: an altered, removed, reordered, duplicated, forged (unchained) or
appended event, a key held twice in one object, a bad envelope, an empty log. A log in
another session's folder, a blank line and a torn final line (a writer killed mid-append)
are reported beside it; `log_repair.repair_torn` sets a torn line aside in
`.events.jsonl.torn`. What a keyless chain can and cannot prove is in docs/log-format.md.
The checks of each line are in integrity_scan.py.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator
from dataclasses import asdict, dataclass
from itertools import islice
from pathlib import Path
from typing import Any, Protocol

import orjson

from .events import LOG_NAME, TornTail
from .integrity_scan import Finding, Scan

TORN_SUFFIX = ".torn"
READ_BUFFER = 1 << 16
"""verify_log reads a file 64 KiB at a time: a third of what reading a line costs at the
default 8 KiB (bench/RESULTS.md, issue 24)."""
FAST = True
"""`Scan.run` takes the lines that are the next canonical link (off: every line the general
way, which the tests compare it with)."""


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
    blank: Finding | None = None
    """The first blank line: it holds no event, so the checks go on past it, but our writer
    never writes one: it is reported beside the problem."""
    misplaced: Finding | None = None
    """The log's events name another session than its place (its folder, its rows): a valid
    log put where another belongs. Reported beside the problem: its lines are checked on."""

    @property
    def broken(self) -> Finding | None:
        """The first reason the complete lines do not verify (the problem, a misplaced log, a
        blank line), else None; a torn final line is not one (`repair_torn` sets it aside)."""
        return self.problem or self.misplaced or self.blank

    @property
    def ok(self) -> bool:
        """Nothing wrong: no problem, no misplaced log, no blank line and no torn line."""
        return self.broken is None and self.torn is None

    @property
    def findings(self) -> tuple[Finding, ...]:
        """The problem, a misplaced log, the blank line and the torn line, in line order."""
        torn = None if self.torn is None else Finding(
            "torn-tail", self.torn.line, None,
            f"torn final line ({self.torn.size} bytes, no newline, not JSON): a writer stopped "
            f"mid-append; the complete lines before it load; `agentos verify --repair` moves it "
            f"to {self.path.name}{TORN_SUFFIX}")
        found = [f for f in (self.problem, self.misplaced, self.blank, torn) if f is not None]
        return tuple(sorted(found, key=lambda f: f.line or 0))

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


class Folding(Protocol):
    """What folds the events of a verify pass as it reads them (a summary made in the same
    pass: `store.reading.verified_summary`); events after the first problem are never folded."""

    def take(self, e: dict[str, Any]) -> None:
        """An event the general way checked (every line of the log when `for_type` gives None)."""

    def for_type(self, t: str) -> Callable[[dict[str, Any]], None] | None:
        """What `Scan.run` calls with each event of type `t` it takes; None: such an event is
        only counted (`end` tells how many events there were in all)."""

    def end(self, events: int, last: dict[str, Any] | None) -> None:
        """Once all lines were read: how many events, and the last one before any problem."""


@dataclass(frozen=True)
class _Each:
    """`each` as a Folding: called with every event."""

    each: Callable[[dict[str, Any]], None]
    """The callable."""

    def take(self, e: dict[str, Any]) -> None:
        self.each(e)

    def for_type(self, t: str) -> Callable[[dict[str, Any]], None] | None:
        return self.each

    def end(self, events: int, last: dict[str, Any] | None) -> None:
        pass


def verify_log(path: Path, expected_head: str | None = None, *,
               each: Callable[[dict[str, Any]], None] | None = None,
               fold: Folding | None = None) -> VerifyReport:
    """Check a log line by line; streaming, one pass. `expected_head` (a head noted earlier,
    e.g. from a previous `agentos verify`) also proves an appended or cut-off tail. A log
    named `.events.jsonl` must be the one of the session its folder is named after.
    `each`, `fold`: as verify_lines."""
    path = Path(path)
    folder = Path(os.path.abspath(path)).parent.name if path.name == LOG_NAME else None
    with path.open("rb", buffering=READ_BUFFER) as f:
        return verify_lines(f, path, expected_head, folder, reread=lambda: _file_lines(path), each=each,
                            fold=fold)


def _file_lines(path: Path) -> Iterator[bytes]:
    with path.open("rb") as f:
        yield from f


def verify_session(store: Any, session_id: str, expected_head: str | None = None, *,
                   each: Callable[[dict[str, Any]], None] | None = None,
                   fold: Folding | None = None) -> VerifyReport:
    """`verify_log` of one session of a store (JSONL or PostgreSQL: anything with `lines` and
    `path`), over its lines as stored; they must be `session_id`'s. `each`, `fold`: as
    verify_lines."""
    return verify_lines(store.lines(session_id), Path(store.path(session_id)), expected_head, session_id,
                        reread=lambda: store.lines(session_id), each=each, fold=fold)


def verify_lines(lines: Iterable[bytes], path: Path, expected_head: str | None = None,
                 session_id: str | None = None, *,
                 reread: Callable[[], Iterable[bytes]] | None = None,
                 each: Callable[[dict[str, Any]], None] | None = None,
                 fold: Folding | None = None) -> VerifyReport:
    """`verify_log` over a log's lines (each with its newline) from anywhere, e.g. a database
    (pg_store.PostgresEventStore.lines); `path` names the log in the report. `session_id`:
    the session the log is stored as (its folder, its rows), which its events must name.
    `reread`: the same lines again (a list is its own), so that rising ids need not be kept
    (integrity_seen.py); without it every id that is not the writer's counter form is kept.
    `each`: called with every event read before the first problem, in order (a summary
    folded in the same pass). `fold`: folds them instead, told only the events of the types
    it asks for where the fast loop takes them (`Folding`)."""
    if each is not None:
        if fold is not None:
            raise ValueError("verify_lines takes `each` or `fold`, not both")
        fold = _Each(each)
    scan = Scan(path, expected_head, session_id)
    if reread is None and isinstance(lines, list | tuple):
        reread = lambda: lines  # noqa: E731 - a list reads again as it is
    read = [0]  # bytes read, counted only where the lines cannot be read again
    it = iter(lines) if reread is not None else _counted(lines, read)
    scan.reread = reread
    scan.fold = fold
    torn: TornTail | None = None
    notes: list[str] = []
    unterminated = False
    n = 0
    for raw in it:
        n += 1
        while True:  # the general way for this line, then `Scan.run` while lines are links
            if not raw.strip():
                if raw.endswith(b"\n"):
                    scan.blank_line(n)
                    break
                torn = _torn(path, n, raw, reread, read)  # the last segment, not JSON
                break
            try:
                obj = orjson.loads(raw)
            except orjson.JSONDecodeError as exc:
                if not raw.endswith(b"\n"):  # the final segment: torn, set aside
                    torn = _torn(path, n, raw, reread, read)
                    break
                scan.events += 1
                scan.next_id = None
                if scan.problem is None:
                    scan.problem = Finding("bad-envelope", n, None, f"line {n} is not JSON ({exc}): a "
                                           "line in the middle of a log is never torn, so it was damaged")
                break
            if not raw.endswith(b"\n"):
                unterminated = True
                notes.append(f"line {n} is complete but has no final newline (--repair adds it)")
            scan.line(n, obj, raw)
            if fold is not None and scan.problem is None:
                fold.take(obj)
            if scan.next_id is None or not FAST:
                break
            taken, stop = scan.run(it)
            n += taken
            if stop is None:
                break
            n, raw = n + 1, stop
        if torn is not None:
            break
    if fold is not None:
        fold.end(scan.events, scan.last)
    problem, blank, head = scan.finish(notes)
    return VerifyReport(path, scan.events, bool(scan.chained), head, problem, torn, tuple(notes),
                        unterminated, blank, scan.misplaced)


def _counted(lines: Iterable[bytes], read: list[int]) -> Iterator[bytes]:
    for raw in lines:
        read[0] += len(raw)
        yield raw


def _torn(path: Path, n: int, raw: bytes, reread: Callable[[], Iterable[bytes]] | None,
          read: list[int]) -> TornTail:
    """The torn final segment `raw` at line `n`, at the offset of the bytes before it (summed
    again from the lines read again: `Scan.run` does not count them)."""
    before = read[0] - len(raw) if reread is None else sum(map(len, islice(reread(), n - 1)))
    return TornTail(path, n, before, len(raw))


__all__ = ["TORN_SUFFIX", "Finding", "Folding", "VerifyReport", "verify_lines", "verify_log",
           "verify_session"]

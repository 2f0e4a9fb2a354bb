"""Audit Completeness (spec) for any event log: ours, or one another implementation wrote.

`audit_log(path)` reads a `.events.jsonl` (or a session directory) line by line and reports
every gap: a line that is not an event, a broken seq or hash chain, an LLM request or tool
invoke without its answer, a transition from a state never entered, a hook decision that is
not a decision, a schema violation nothing refused, a session that is not closed, and (for a
successful session) a required event type that never appears. It never raises on bad
content; each problem is a `Gap` naming the check, the event's seq and the file's line.

What a log must show for each check is written down in docs/log-format.md ("Audit").
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from ...store.events import LOG_NAME
from ...store.redaction import maybe_secret, redact
from .model import Entry, Gap
from .reading import read_line
from .stream import audit_gaps


@dataclass(frozen=True)
class AuditReport:
    """The audit of one log."""

    path: str
    """The log file audited."""
    events: int
    """How many lines were read as events."""
    gaps: tuple[Gap, ...]
    """Every gap found, in check order then log order."""
    notes: tuple[str, ...] = field(default=())
    """What the audit decided without it being a gap (e.g. a successful session without a
    skill, which needs no skill or tool events)."""

    @property
    def ok(self) -> bool:
        """True when the log has no gap."""
        return not self.gaps

    def to_dict(self) -> dict[str, Any]:
        """The report as JSON (for `agentos audit --json`)."""
        return {"path": self.path, "events": self.events, "ok": self.ok,
                "gaps": [g.to_dict() for g in self.gaps], "notes": list(self.notes)}


def log_file(path: Path | str) -> Path:
    """The log file for `path`: the file itself, or `<dir>/.events.jsonl` of a session
    directory. FileNotFoundError names what is missing."""
    p = Path(path)
    if p.is_file():
        return p
    if p.is_dir():
        if (p / LOG_NAME).is_file():
            return p / LOG_NAME
        raise FileNotFoundError(f"{p}: no {LOG_NAME} in this directory; give a log file or a "
                                "session directory (sessions/<id>/)")
    if p.exists():  # a FIFO, a device: reading it could block
        raise FileNotFoundError(f"{p}: not a regular file or a directory")
    raise FileNotFoundError(f"{p}: no such file or directory")


def find_logs(path: Path | str) -> list[Path]:
    """Every log under `path`: a log file, a session directory, or a directory of session
    directories (`<path>/<id>/.events.jsonl`, sorted). FileNotFoundError when there is none."""
    p = Path(path)
    if p.is_file() or (p / LOG_NAME).is_file():
        return [log_file(p)]
    if not p.is_dir():
        raise FileNotFoundError(f"{p}: no such file or directory")
    found = sorted(p.glob(f"*/{LOG_NAME}"))
    if not found:
        raise FileNotFoundError(f"{p}: no {LOG_NAME} here nor in any {p}/<session>/ directory")
    return found


def audit_log(path: Path | str, root: Path | str | None = None) -> AuditReport:
    """Audit one log (a `.events.jsonl` file or a session directory) in one pass (fold.py).
    Bad content is a Gap; only a missing path raises (FileNotFoundError). With `root` (the
    directory the log was found in), a log that a symlink leads out of `root` is not read:
    that is its one gap."""
    file = log_file(path)
    away = outside(file, root) if root is not None else None
    if away:
        return redacted(AuditReport(str(file), 0, (Gap("envelope", None, None, away),)))
    count, gaps, notes = audit_gaps(lambda: _file_lines(file), str(file))
    return _redacted(str(file), count, gaps, notes)


def redacted(report: AuditReport) -> AuditReport:
    """The report with its messages redacted like a session log: a gap quotes the log's own
    values, and a log another implementation wrote may hold secrets in clear."""
    return AuditReport(redact(report.path), report.events,
                       tuple(Gap(g.check, g.seq, g.line, redact(g.what)) for g in report.gaps),
                       tuple(redact(list(report.notes))))


def _redacted(path: str, events: int, gaps: list[Gap], notes: list[str]) -> AuditReport:
    """`redacted` of the report, each gap replaced in place (a long log's report is not held
    twice). A message no secret shape can match (`maybe_secret`, the scan `redact` starts
    with) is what `redact` returns: it is kept as it is, without remembering it among the
    clean strings redaction looks up (a long log's messages, each new, would fill and clear
    that cache, and keep up to 2 M characters of them alive after the report is gone)."""
    for i, g in enumerate(gaps):
        if maybe_secret(g.what):
            gaps[i] = Gap(g.check, g.seq, g.line, redact(g.what))
    return AuditReport(redact(path), events, tuple(gaps), tuple(redact(notes)))


def outside(file: Path, root: Path | str) -> str | None:
    """Why `file` is not read as a log found under `root` (a symlink on the way leads out of
    it; the file is not a regular file), else None."""
    real, base = os.path.realpath(file), os.path.realpath(root)
    if real != base and not real.startswith(base + os.sep):
        return (f"{file}: leads outside {root} (a symlink, to {real}); not read: put the log "
                "itself there")
    return None


def audit_lines(lines: Iterable[bytes] | Callable[[], Iterable[bytes]], name: str) -> AuditReport:
    """`audit_log` of a log's lines from anywhere (a session in PostgreSQL: its stored lines);
    `name` names the log in the report. Give a function that reads the lines afresh (or a
    list) when the log may be long: a log with a gap the one pass cannot place is read again
    (fold.py); lines given once as an iterator are kept in memory for that."""
    if callable(lines):
        again: Callable[[], Iterable[bytes]] = lines
    else:
        kept = lines if iter(lines) is not lines else list(lines)
        again = lambda: kept  # noqa: E731
    count, gaps, notes = audit_gaps(again, name)
    return _redacted(name, count, gaps, notes)


def read_entries(file: Path | str, lines: Iterable[bytes] | None = None) -> tuple[list[Entry], list[Gap]]:
    """The lines of `file` (or the given `lines` of the log `file` names) that are events
    (with their line numbers), and an `envelope` gap for each line that is not: the whole
    log in memory, for a conformance scenario's expectations (audit_log does not keep it)."""
    entries: list[Entry] = []
    gaps: list[Gap] = []
    with contextlib.ExitStack() as stack:
        source = stack.enter_context(Path(file).open("rb")) if lines is None else lines
        for n, line in enumerate(source, 1):
            got = read_line(n, line, gaps)
            if got is not None:
                entries.append(Entry(n, len(entries) + 1, got[0]))
    if not entries and not gaps:
        gaps.append(Gap("envelope", None, None, f"{file} holds no event; a session log starts "
                                                "with session.start"))
    return entries, gaps


def _file_lines(file: Path) -> BinaryIO:
    """The open file: its lines, iterated without a generator in between (the caller closes it)."""
    return file.open("rb")


__all__ = ["AuditReport", "Gap", "audit_lines", "audit_log", "find_logs", "log_file", "read_entries"]

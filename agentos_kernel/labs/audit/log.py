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

import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from ...store.dupkeys import duplicate_key
from ...store.events import LOG_NAME, Event, LogError, canonical
from ...store.redaction import redact
from . import checks as audit_checks
from .model import Entry, Gap


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
    """Audit one log (a `.events.jsonl` file or a session directory). Bad content is a Gap;
    only a missing path raises (FileNotFoundError). With `root` (the directory the log was
    found in), a log that a symlink leads out of `root` is not read: that is its one gap."""
    file = log_file(path)
    away = outside(file, root) if root is not None else None
    if away:
        return redacted(AuditReport(str(file), 0, (Gap("envelope", None, None, away),)))
    entries, gaps = read_entries(file)
    notes: list[str] = []
    gaps += audit_checks.run_all(entries, notes)
    return redacted(AuditReport(str(file), len(entries), tuple(gaps), tuple(notes)))


def redacted(report: AuditReport) -> AuditReport:
    """The report with its messages redacted like a session log: a gap quotes the log's own
    values, and a log another implementation wrote may hold secrets in clear."""
    return AuditReport(redact(report.path), report.events,
                       tuple(Gap(g.check, g.seq, g.line, redact(g.what)) for g in report.gaps),
                       tuple(redact(list(report.notes))))


def outside(file: Path, root: Path | str) -> str | None:
    """Why `file` is not read as a log found under `root` (a symlink on the way leads out of
    it; the file is not a regular file), else None."""
    real, base = os.path.realpath(file), os.path.realpath(root)
    if real != base and not real.startswith(base + os.sep):
        return (f"{file}: leads outside {root} (a symlink, to {real}); not read: put the log "
                "itself there")
    return None


def audit_lines(lines: Iterable[bytes], name: str) -> AuditReport:
    """`audit_log` of a log's lines from anywhere (a session in PostgreSQL: its stored lines);
    `name` names the log in the report."""
    entries, gaps = read_entries(name, lines)
    notes: list[str] = []
    gaps += audit_checks.run_all(entries, notes)
    return redacted(AuditReport(name, len(entries), tuple(gaps), tuple(notes)))


def read_entries(file: Path | str, lines: Iterable[bytes] | None = None) -> tuple[list[Entry], list[Gap]]:
    """The lines of `file` (or the given `lines` of the log `file` names) that are events
    (with their line numbers), and an `envelope` gap for each line that is not."""
    entries: list[Entry] = []
    gaps: list[Gap] = []
    numbered = _lines(Path(file)) if lines is None else (
        (n, line) for n, line in enumerate(lines, 1) if line.strip())
    for n, line in numbered:
        try:
            obj = orjson.loads(line)
        except orjson.JSONDecodeError as exc:
            gaps.append(Gap("envelope", None, n, f"line {n} is not JSON ({exc}); every line must "
                                                 "be one event object"))
            continue
        problem = envelope_problem(obj, f"line {n}")
        try:
            enc = canonical(obj)
        except (TypeError, orjson.JSONEncodeError):  # orjson writes 254 levels, reads 1024
            problem = problem or f"line {n}: nested over 254 levels deep: it has no canonical bytes"
        if problem:
            gaps.append(Gap("envelope", None, n, problem))
            continue
        if not (len(line) - len(enc) <= 1 and line.startswith(enc)) and (key := duplicate_key(line)):
            # not our writer's bytes, and ambiguous: audited as orjson reads it (the last value)
            gaps.append(Gap("envelope", None, n, f"line {n}: holds the key {key} twice in one object: "
                                                 "readers that keep the first value read another event"))
        entries.append(Entry(n, len(entries) + 1, obj))
    if not entries and not gaps:
        gaps.append(Gap("envelope", None, None, f"{file} holds no event; a session log starts "
                                                "with session.start"))
    return entries, gaps


def _lines(file: Path) -> Iterator[tuple[int, bytes]]:
    with file.open("rb") as f:
        for n, line in enumerate(f, 1):
            if line.strip():
                yield n, line


def envelope_problem(obj: Any, where: str) -> str | None:
    """Why `obj` is not an event_v1 envelope (the eight fields, optional seq and chain),
    else None."""
    try:
        Event.from_dict(obj, where=where)
    except LogError as exc:
        return f"{exc}; an event has id, session_id, ts, type, actor, payload, schema_version, parent_id"
    except TypeError as exc:  # a field of the wrong type reaching the dataclass
        return f"{where}: {exc}"
    if obj["schema_version"] != "v1":
        return f"{where}: schema_version: is {obj['schema_version']!r}; the envelope is 'v1'"
    for name in ("id", "session_id", "type", "actor"):  # another runtime's log may hold anything
        if not isinstance(obj[name], str):
            return f"{where}: {name}: must be a string, not {type(obj[name]).__name__}"
    if obj["parent_id"] is not None and not isinstance(obj["parent_id"], str):
        return f"{where}: parent_id: must be a string or null"
    if not obj["id"] or not obj["type"]:
        return f"{where}: {'id' if not obj['id'] else 'type'}: must not be empty"
    seq = obj.get("seq")
    if "seq" in obj and (not isinstance(seq, int) or isinstance(seq, bool) or seq < 1):
        return f"{where}: seq: must be an integer from 1"
    chain = obj.get("chain")
    if "chain" in obj and not (isinstance(chain, str) and len(chain) == 64
                               and all(c in "0123456789abcdef" for c in chain)):
        return f"{where}: chain: must be 64 lowercase hex digits (a sha256)"
    return None


__all__ = ["AuditReport", "Gap", "audit_lines", "audit_log", "find_logs", "log_file", "read_entries"]

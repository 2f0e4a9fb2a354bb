"""The audit before it streamed (labs/audit at main 1ed2d5a: read every entry, then run each
check over the list): the oracle the streaming fold must agree with, finding for finding."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import orjson

from agentos_kernel.labs.audit.log import AuditReport, redacted
from agentos_kernel.labs.audit.model import Entry, Gap
from agentos_kernel.labs.audit.reading import envelope_problem
from agentos_kernel.store.dupkeys import duplicate_key
from agentos_kernel.store.events import canonical

from . import checks


def read_entries(name: str, lines: Iterable[bytes]) -> tuple[list[Entry], list[Gap]]:
    entries: list[Entry] = []
    gaps: list[Gap] = []
    for n, line in ((n, line) for n, line in enumerate(lines, 1) if line.strip()):
        try:
            obj = orjson.loads(line)
        except orjson.JSONDecodeError as exc:
            gaps.append(Gap("envelope", None, n, f"line {n} is not JSON ({exc}); every line must "
                                                 "be one event object"))
            continue
        problem = envelope_problem(obj, f"line {n}")
        try:
            enc = canonical(obj)
        except (TypeError, orjson.JSONEncodeError):
            problem = problem or f"line {n}: nested over 254 levels deep: it has no canonical bytes"
        if problem:
            gaps.append(Gap("envelope", None, n, problem))
            continue
        if not (len(line) - len(enc) <= 1 and line.startswith(enc)) and (key := duplicate_key(line)):
            gaps.append(Gap("envelope", None, n, f"line {n}: holds the key {key} twice in one object: "
                                                 "readers that keep the first value read another event"))
        entries.append(Entry(n, len(entries) + 1, obj))
    if not entries and not gaps:
        gaps.append(Gap("envelope", None, None, f"{name} holds no event; a session log starts "
                                                "with session.start"))
    return entries, gaps


def log_lines(file: Path) -> list[bytes]:
    """The lines of `file` as main 1ed2d5a's audit read them, and every reader of a log does
    (the file iterated in binary mode): split after each `\n` only. Not `bytes.splitlines`,
    which also breaks at a bare `\r`: docs/log-format.md says a line is `\n`-terminated and
    JSON takes `\r` for whitespace, so `{...}\r\r\n` is one line (one event), not two, and the
    lines after it keep their numbers."""
    with file.open("rb") as f:
        return list(f)


def old_audit(file: Path) -> AuditReport:
    """audit_log as it was, for one log file."""
    entries, gaps = read_entries(str(file), log_lines(file))
    notes: list[str] = []
    gaps += checks.run_all(entries, notes)
    return redacted(AuditReport(str(file), len(entries), tuple(gaps), tuple(notes)))

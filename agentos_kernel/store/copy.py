"""`agentos store copy`: move session logs between stores (JSONL folders, PostgreSQL) as
they are, byte for byte: a line is copied, never re-encoded, so JSONL -> Postgres -> JSONL
gives back the same file and the hash chain still verifies (or still shows where it breaks:
a log that does not verify is evidence, copied as it is).

A copy is refused, before anything is written, when a line is not one event of the session
(a blank line, a torn or unterminated last line: `agentos verify ID --repair` first), and
for a session the destination already holds with other bytes. A session already there with
the same bytes is left as it is, so a copy that stopped half-way can simply be run again.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Protocol

from .events import EventStore, LogError, line_event


class LineStore(EventStore, Protocol):
    """A store whose lines can be read and written as stored (JSONL and PostgreSQL)."""

    def lines(self, session_id: str) -> Iterator[bytes]:
        """The session's stored lines, each with its newline."""

    def append_line(self, session_id: str, line: bytes) -> None:
        """Append one stored line exactly as given."""

    def path(self, session_id: str) -> object:
        """How messages name the session's log."""


class CopyRefused(ValueError):
    """A session that cannot be copied losslessly; the message names it and the fix."""


@dataclass(frozen=True)
class Copied:
    """One session's copy."""

    session_id: str
    """The session."""
    events: int
    """Lines (events) it holds."""
    copied: bool
    """False when the destination already held the same bytes (nothing written)."""
    sha256: str
    """sha256 of the log's bytes, the same at both ends."""


def _digest(lines: Iterator[bytes]) -> tuple[str, int]:
    h, n = hashlib.sha256(), 0
    for line in lines:
        h.update(line)
        n += 1
    return h.hexdigest(), n


def _checked_lines(src: LineStore, sid: str) -> tuple[str, int]:
    """Read the source once: every line one event of `sid`, each ended by a newline."""
    h, n = hashlib.sha256(), 0
    for n, line in enumerate(src.lines(sid), 1):
        where = f"{src.path(sid)}:{n}"
        if not line.endswith(b"\n"):
            raise CopyRefused(f"{where}: the last line has no newline (torn or unterminated); set it "
                              f"aside first: agentos verify {sid} --repair")
        try:
            line_event(line, sid, where)
        except LogError as exc:
            raise CopyRefused(f"{exc}; only a log of whole events is copied") from None
        h.update(line)
    if n == 0:
        raise CopyRefused(f"{src.path(sid)}: the log is empty: nothing to copy")
    return h.hexdigest(), n


def copy_session(src: LineStore, dest: LineStore, sid: str) -> Copied:
    """Copy one session's log from `src` to `dest` byte for byte (see the module docstring)."""
    digest, n = _checked_lines(src, sid)
    if dest.exists(sid):
        there, _ = _digest(dest.lines(sid))
        if there != digest:
            raise CopyRefused(f"{dest.path(sid)} already holds a different log for session {sid!r}; "
                              "a copy never merges or overwrites: copy to another store")
        return Copied(sid, n, False, digest)
    dest.create(sid)
    try:
        for line in src.lines(sid):
            dest.append_line(sid, line)
    finally:
        dest.close(sid)
    after, _ = _digest(dest.lines(sid))
    if after != digest:  # the source grew while we copied (a live session): say so
        raise CopyRefused(f"{dest.path(sid)}: the copy differs from {src.path(sid)} (the session was "
                          "being written during the copy?); copy it again once it is closed")
    return Copied(sid, n, True, digest)


def copy_store(src: LineStore, dest: LineStore, only: list[str] | None = None) -> list[Copied]:
    """Copy every session of `src` (or those in `only`) to `dest`, in id order."""
    return [copy_session(src, dest, sid) for sid in (only if only is not None else src.sessions())]

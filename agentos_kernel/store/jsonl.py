"""L4 store: `JsonlEventStore`, the EventStore of one workspace's sessions/ folder (one
`.events.jsonl` per session, one writer per session). The event, its canonical bytes and
the readers are in events.py.

A workspace's store is confined (`confine=` the workspace): a sessions/ that is a symbolic
link leading out of it is refused (ContractError, when the store is made and at each claim),
and a session whose folder or log leads out of it is not read. A session folder that is a
link is never written through, wherever it leads (sessionlock.SessionLinked)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

from ..errors import ContractError, Problem
from .durability import Durability, LogWriter
from .events import LOG_NAME, Event, canonical, check_session_id, line_event, read_log
from .lock import SessionLocked

LINK_OUT_FIX = "event_store: {kind: jsonl, sessions_may_link_out: true}"


class JsonlEventStore:
    """`<root>/<session_id>/.events.jsonl`, one canonical JSON line per event.

    One writer per session: a session is claimed (`create`, `reopen`, or its first
    `append`) under an OS lock held until `close`, so another writer gets SessionLocked.
    Each line is flushed, so a killed process loses nothing appended; `durability` says
    when the log is fsynced too, so that a power cut loses nothing closed (durability.py).
    """

    def __init__(self, root: Path, durability: Durability | None = None, *,
                 confine: Path | None = None) -> None:
        self.root = Path(root)
        self.durability = durability or Durability()
        self.confine = confine
        """What the sessions must lie in (the workspace), or None: a folder named by hand."""
        self._open: dict[str, LogWriter] = {}
        self._last: tuple[str | None, Path] = (None, self.root)
        self._root_name = os.fspath(self.root)
        self._check_root()

    def _check_root(self) -> None:
        """ContractError when sessions/ is a symbolic link leading out of `confine`."""
        if self.confine is None or not os.path.islink(self.root):  # a folder in it is in it
            return
        real = leads_out(self.root, self.confine)
        if real is not None:
            raise ContractError([Problem(str(self.root), "-", (
                f"is a symbolic link to {real}, outside the workspace {self.confine}: every session "
                f"would be written there; make it a folder (rm {self.root} && mkdir {self.root}), "
                f"or let the profile allow it ({LINK_OUT_FIX})"))])
        if not os.path.isdir(self.root):
            raise ContractError([Problem(str(self.root), "-", (
                f"is a symbolic link to {os.path.realpath(self.root)}, which is not a folder: make "
                f"it one, or make {self.root} a folder"))])

    def _log(self, session_id: str) -> Path:
        """The log to read; KeyError when there is none, or when it leads out of `confine`."""
        p = self.path(session_id)
        if self.confine is not None and (os.path.islink(p.parent) or os.path.islink(p)):
            real = leads_out(p, self.confine)
            if real is not None:
                raise KeyError(f"session {session_id!r} is not read: {p} leads outside "
                               f"{self.confine} (to {real}); put the session's own folder there")
        if not p.is_file():
            raise KeyError(f"no session {session_id!r}: {p} does not exist")
        return p

    def path(self, session_id: str) -> Path:
        """The log file of a session (its id is checked first)."""
        if session_id == self._last[0]:  # a request asks for its own log's path 4 times
            return self._last[1]
        problem = check_session_id(session_id)
        if problem:
            raise ValueError(problem)
        path = self.root / session_id / LOG_NAME
        self._last = (session_id, path)
        return path

    def create(self, session_id: str) -> None:
        """Claim a new session: SessionLocked when another writer holds it, SessionExists
        when it already has a log (checked under the lock, so two claimers never both win)."""
        self._claim(session_id, new=True)

    def reopen(self, session_id: str) -> None:
        """Claim an existing session to append to it (amend): SessionLocked, or KeyError."""
        self._claim(session_id, new=False)

    def _claim(self, session_id: str, new: bool | None) -> LogWriter:
        path = self.path(session_id)
        self._check_root()  # again: sessions/ may have been swapped for a link since
        if session_id in self._open:  # this store writes it already: a second writer here
            raise SessionLocked(session_id, os.getpid(), path.parent)
        writer = self._open[session_id] = LogWriter.claim(path, session_id, self.durability,
                                                          new=new)
        return writer

    def append(self, event: Event, line: bytes | None = None) -> None:
        writer = self._open.get(event.session_id) or self._claim(event.session_id, None)
        writer.write((line or canonical(event.to_dict())) + b"\n")

    def append_line(self, session_id: str, line: bytes) -> None:
        """Append one stored line exactly as given, newline added when missing (`agentos store
        copy`). LogError when it is not one event of `session_id`."""
        line_event(line, session_id, str(self.path(session_id)))
        writer = self._open.get(session_id) or self._claim(session_id, None)
        writer.write(line if line.endswith(b"\n") else line + b"\n")

    def lines(self, session_id: str) -> Iterator[bytes]:
        """The log's lines as stored, each with its newline (the last one may lack it);
        KeyError when the session has no log."""
        return _file_lines(self._log(session_id))

    def read(self, session_id: str) -> Iterator[Event]:
        return read_log(self._log(session_id))

    def tail(self, session_id: str) -> Event | None:
        try:
            p = self._log(session_id)
        except KeyError:
            if self.path(session_id).is_file():  # there, but it leads out: say so
                raise
            return None
        last = None
        for last in read_log(p):  # noqa: B007 - streaming keeps memory flat
            pass
        return last

    def sessions(self) -> list[str]:
        if not self.root.is_dir():
            return []
        return sorted(p.parent.name for p in self.root.glob(f"*/{LOG_NAME}"))

    def exists(self, session_id: str) -> bool:
        problem = check_session_id(session_id)
        if problem:
            raise ValueError(problem)
        # Strings, not Paths: the next counted id is found by O(log N) of these probes.
        return os.path.isfile(os.path.join(self._root_name, session_id, LOG_NAME))

    def close(self, session_id: str) -> None:
        writer = self._open.pop(session_id, None)
        if writer is not None:
            writer.close()


def leads_out(path: Path, inside: Path) -> str | None:
    """Where `path` really is, when symbolic links take it out of `inside`; else None."""
    real, base = os.path.realpath(path), os.path.realpath(inside)
    return None if real == base or real.startswith(base.rstrip(os.sep) + os.sep) else real


def _file_lines(path: Path) -> Iterator[bytes]:
    with path.open("rb") as f:
        yield from f

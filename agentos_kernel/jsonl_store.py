"""L4 store: `JsonlEventStore`, the EventStore of one workspace's sessions/ folder (one
`.events.jsonl` per session, one writer per session). The event, its canonical bytes and
the readers are in events.py."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

from .durability import Durability, LogWriter
from .events import LOG_NAME, Event, canonical, check_session_id, line_event, read_log
from .sessionlock import SessionLocked


class JsonlEventStore:
    """`<root>/<session_id>/.events.jsonl`, one canonical JSON line per event.

    One writer per session: a session is claimed (`create`, `reopen`, or its first
    `append`) under an OS lock held until `close`, so another writer gets SessionLocked.
    Each line is flushed, so a killed process loses nothing appended; `durability` says
    when the log is fsynced too, so that a power cut loses nothing closed (durability.py).
    """

    def __init__(self, root: Path, durability: Durability | None = None) -> None:
        self.root = Path(root)
        self.durability = durability or Durability()
        self._open: dict[str, LogWriter] = {}
        self._last: tuple[str | None, Path] = (None, self.root)
        self._root_name = os.fspath(self.root)

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
        p = self.path(session_id)
        if not p.is_file():
            raise KeyError(f"no session {session_id!r}: {p} does not exist")
        return _file_lines(p)

    def read(self, session_id: str) -> Iterator[Event]:
        p = self.path(session_id)
        if not p.is_file():
            raise KeyError(f"no session {session_id!r}: {p} does not exist")
        return read_log(p)

    def tail(self, session_id: str) -> Event | None:
        p = self.path(session_id)
        if not p.is_file():
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


def _file_lines(path: Path) -> Iterator[bytes]:
    with path.open("rb") as f:
        yield from f

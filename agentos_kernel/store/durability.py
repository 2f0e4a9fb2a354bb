"""The write side of one session's log: its lock, its file and when it is fsynced.

Flushing hands each line to the OS, so a killed process loses nothing; only fsync puts it
on the disk, so only fsync survives a power cut. The profile's `fsync` says when
(docs/reliability.md, "Durability", has the measured cost of each policy):

- `never`: flush only.
- `close` (the default): when the session closes, fsync the log, then (for a log this
  writer created) its directory and the sessions directory. One fsync of the log per
  session, not two: nothing is fsynced while the session runs.
- `every_n`: the log, its directory and the sessions directory when the log is created (its
  first event); the log after every `fsync_every` events and at close.
- `always`: as `every_n`, with the log fsynced after every event.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from .lock import SessionExists, SessionLinked, SessionLock

FsyncPolicy = Literal["never", "close", "every_n", "always"]
FSYNC_POLICIES: tuple[FsyncPolicy, ...] = ("never", "close", "every_n", "always")
DEFAULT_FSYNC: FsyncPolicy = "close"


@dataclass(frozen=True)
class Durability:
    """When a session's log is fsynced (the profile's `fsync` and `fsync_every`)."""

    fsync: FsyncPolicy = DEFAULT_FSYNC
    """never | close | every_n | always (see the module docstring)."""
    every: int = 1
    """For `every_n`: fsync the log after this many events since its last fsync."""

    def __post_init__(self) -> None:
        if self.fsync not in FSYNC_POLICIES:
            raise ValueError(f"fsync must be one of {', '.join(FSYNC_POLICIES)}, not {self.fsync!r}")
        if not isinstance(self.every, int) or self.every < 1:
            raise ValueError(f"fsync_every must be an integer of 1 or more, not {self.every!r}")

    def due(self, unsynced: int) -> bool:
        """Whether the log is fsynced now, `unsynced` events after its last fsync."""
        if self.fsync == "always":
            return True
        return self.fsync == "every_n" and unsynced >= self.every


def fsync_dir(path: Path) -> None:
    """Make the entries of directory `path` (a new file, a new subdirectory) durable."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class LogWriter:
    """The one writer of one session's log, from its claim to its close."""

    def __init__(self, path: Path, lock: SessionLock, durability: Durability) -> None:
        self.path = path
        """The session's `.events.jsonl`."""
        self.durability = durability
        self._lock = lock
        self._fd: int | None = None
        self._created = False
        self._unsynced = 0

    @classmethod
    def claim(cls, path: Path, session_id: str, durability: Durability, *,
              new: bool | None) -> LogWriter:
        """Lock the session (SessionLocked when another writer has it). `new=True` also
        requires that it has no log (SessionExists), `new=False` that it has one (KeyError);
        the check is made under the lock, so two claimers cannot both see the id free."""
        # Written through, a planted link lands outside sessions/: the folder is opened with
        # O_NOFOLLOW by the lock, the log is looked at (not followed) under it.
        lock = SessionLock.acquire(path.parent, session_id)
        try:
            mode = os.lstat(path).st_mode
        except FileNotFoundError:
            mode = 0
        except BaseException:
            lock.release()
            raise
        if stat.S_ISLNK(mode):
            lock.release()
            raise SessionLinked(f"session {session_id!r}: {path} is a symbolic link, not the "
                                "session's own file (remove it)")
        exists = stat.S_ISREG(mode)
        if new is not None and exists == new:
            lock.release()
            if new:
                raise SessionExists(f"session {session_id!r} already exists ({path})")
            raise KeyError(f"no session {session_id!r}: {path} does not exist")
        return cls(path, lock, durability)

    def write(self, line: bytes) -> None:
        """Append one line, hand it to the OS, and fsync as the policy says."""
        if self._fd is None:
            self._fd, self._created = _open_log(self.path)
        # One write(2) per line on an unbuffered descriptor: in the OS before this returns,
        # so a killed process loses nothing (a BufferedWriter's write + flush cost the same
        # syscall plus a copy: 91 -> 52 µs for the canonical request's 32 lines).
        done = os.write(self._fd, line)
        if done != len(line):  # a short write (a signal, a nearly full disk): go on with the rest
            view = memoryview(line)[done:]
            while view:
                view = view[os.write(self._fd, view):]
        self._unsynced += 1
        if self.durability.fsync == "never":
            return
        if self._created and self.durability.fsync == "close":
            return  # the file and its name are made durable together at close
        if self._created:  # the first line of a new log: make the file and its name durable
            self._sync()
            fsync_dir(self.path.parent)
            fsync_dir(self.path.parent.parent)
            self._created = False
        elif self.durability.due(self._unsynced):
            self._sync()

    def close(self) -> None:
        """fsync what is not yet (unless `never`), close the file and release the lock."""
        try:
            if self._fd is not None and self.durability.fsync != "never":
                if self._unsynced:
                    self._sync()
                if self._created:  # `close` deferred the new log's name to now, after its data
                    fsync_dir(self.path.parent)
                    fsync_dir(self.path.parent.parent)
                    self._created = False
        finally:
            fd, self._fd = self._fd, None
            if fd is not None:
                os.close(fd)
            self._lock.release(holds_file=fd is not None)

    def _sync(self) -> None:
        assert self._fd is not None
        os.fsync(self._fd)
        self._unsynced = 0


_APPEND = os.O_WRONLY | os.O_APPEND | os.O_CLOEXEC


def _open_log(path: Path) -> tuple[int, bool]:
    """(descriptor, created): the log opened for appending, made if missing (as "ab" would,
    mode 0o666 less the umask); `created` says whether this call made it."""
    try:
        return os.open(path, _APPEND | os.O_CREAT | os.O_EXCL, 0o666), True
    except FileExistsError:
        return os.open(path, _APPEND | os.O_CREAT, 0o666), False

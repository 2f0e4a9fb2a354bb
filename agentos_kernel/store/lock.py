"""One writer per session: an OS lock on the session's directory, held from the session's
claim to its close.

`sessions/<id>/` itself is locked with `flock` (exclusive, non-blocking) on a descriptor
opened with O_NOFOLLOW, so a planted link is never locked or written through. No lock file
is made: the kernel knows the holder (a second writer is told its pid, read from
/proc/locks), drops the lock when the holder dies (a crash or `kill -9` never leaves a
session locked, and leaves nothing behind), and a clean release removes the directory when
nothing is in it. flock locks belong to an open file, so a second claim in the *same*
process is refused too. POSIX only, on a local filesystem (flock over NFS is not reliable);
the holder's pid is named where /proc/locks exists (Linux).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import weakref
from pathlib import Path

_OPEN = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


class SessionLocked(Exception):
    """Another writer (process, or another store in this process) holds the session."""

    def __init__(self, session_id: str, pid: int | None, path: Path) -> None:
        self.session_id, self.pid, self.path = session_id, pid, path
        who = "an unknown pid" if pid is None else f"pid {pid}"
        if pid == os.getpid():
            who += " (this process)"
        super().__init__(f"session {session_id} is being written by {who} (lock {path}); one "
                         "writer per session: wait for it to close, or use another session id")


class SessionExists(FileExistsError):
    """A new session was asked for, but the id already has a log."""


class SessionLinked(SessionExists):
    """The session's folder or log is a symbolic link: writing through it could land anywhere,
    so the id is treated as taken (the message names the link)."""


class SessionLock:
    """A held session lock; `release()` once the writer is done."""

    def __init__(self, fd: int, path: Path) -> None:
        self._fd: int | None = fd
        self.path = path
        """The locked directory, `sessions/<id>/`."""
        # A writer dropped without close() must not keep others out until the process exits:
        # collecting it closes the descriptor, which drops the lock.
        self._finalizer = weakref.finalize(self, os.close, fd)

    @classmethod
    def acquire(cls, directory: Path, session_id: str) -> SessionLock:
        """Lock `directory` (made if missing) for `session_id`: SessionLocked when held,
        SessionLinked when it is a symbolic link."""
        directory = Path(directory)
        while True:  # retried only when a releasing holder removed the directory under us
            try:
                os.mkdir(directory)
            except FileExistsError:
                pass
            except FileNotFoundError:  # no sessions/ yet (one that is a dangling link raises here)
                directory.parent.mkdir(parents=True, exist_ok=True)
                continue
            try:
                fd = os.open(directory, _OPEN)
            except FileNotFoundError:  # a release removed it between our mkdir and open
                continue
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.ENOTDIR) and directory.is_symlink():
                    raise SessionLinked(f"session {session_id!r}: {directory} is a symbolic "
                                        "link, not the session's own folder (remove it)") from None
                raise
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as exc:
                os.close(fd)
                if exc.errno not in (errno.EAGAIN, errno.EWOULDBLOCK, errno.EACCES):
                    raise
                raise SessionLocked(session_id, holder(directory), directory) from None
            if _same_dir(fd, directory):
                return cls(fd, directory)
            os.close(fd)  # we locked a directory its holder removed on release: again

    def release(self, *, holds_file: bool = False) -> None:
        """Remove the directory if it is empty, while still holding it (so no one locks a
        removed one unseen), then drop the lock. Releasing twice is harmless. `holds_file`:
        the holder opened a file in it (its log), so it is not empty and no removal is tried
        (a failed rmdir costs more than any other call of a request's claim)."""
        if self._fd is None:
            return
        fd, self._fd = self._fd, None
        self._finalizer.detach()
        if not holds_file:
            with contextlib.suppress(OSError):  # not empty (a log): kept
                os.rmdir(self.path)
        os.close(fd)


def _same_dir(fd: int, path: Path) -> bool:
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return False
    own = os.fstat(fd)
    return (st.st_dev, st.st_ino) == (own.st_dev, own.st_ino)


def holder(path: Path) -> int | None:
    """The pid holding a flock on `path`, from /proc/locks (None where it cannot be told)."""
    try:
        st = os.stat(path)
        with open("/proc/locks", encoding="ascii", errors="replace") as f:
            table = f.read()
    except OSError:
        return None
    where = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino} "
    for line in table.splitlines():
        fields = line.split()
        # "1: FLOCK  ADVISORY  WRITE 4242 fe:00:7309003 0 EOF"; waiters' lines start "->"
        if len(fields) >= 6 and fields[1] == "FLOCK" and f"{fields[5]} " == where:
            pid = int(fields[4]) if fields[4].isdigit() else 0
            return pid or None
    return None

"""One writer per session: an OS file lock held from the session's claim to its close.

`sessions/<id>/.events.lock` is locked with `flock` (exclusive, non-blocking) and holds the
writer's pid, so a second writer is told who holds it. The OS drops the lock when its
holder dies (a crash or `kill -9` never leaves a session locked); a clean release unlinks
the file, and removes the session directory when nothing else is in it. flock locks belong
to an open file, so a second claim in the *same* process is refused too. POSIX only, on a
local filesystem (flock over NFS is not reliable).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import time
import weakref
from pathlib import Path

LOCK_NAME = ".events.lock"
_PID_WAIT_S = 0.2  # how long a refused writer waits for a just-started holder to write its pid


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
        """The lock file, `sessions/<id>/.events.lock`."""
        # A writer dropped without close() must not keep others out until the process exits:
        # collecting it closes the descriptor, which drops the lock (the file stays, harmless).
        self._finalizer = weakref.finalize(self, os.close, fd)

    @classmethod
    def acquire(cls, directory: Path, session_id: str) -> SessionLock:
        """Lock `directory` (made if missing) for `session_id`; SessionLocked when held."""
        directory = Path(directory)
        path = directory / LOCK_NAME
        while True:  # retried only when a releasing holder unlinked the file under us
            try:
                directory.mkdir(parents=True, exist_ok=True)
                fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
            except (FileNotFoundError, FileExistsError):  # a release removed the directory
                continue  # between our mkdir and open (or inside pathlib's mkdir): again
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as exc:
                if exc.errno not in (errno.EAGAIN, errno.EWOULDBLOCK, errno.EACCES):
                    os.close(fd)
                    raise
                pid = _holder(fd)
                os.close(fd)
                raise SessionLocked(session_id, pid, path) from None
            if _same_file(fd, path):
                break
            os.close(fd)  # we locked a file its holder had unlinked on release: try the new one
        if os.fstat(fd).st_size:  # left by a writer that was killed; a new file needs no
            os.ftruncate(fd, 0)  # truncation (on ext4 it would make close() flush the file)
        os.write(fd, f"{os.getpid()}\n".encode())
        return cls(fd, path)

    def release(self) -> None:
        """Unlink the lock file while still holding it (so no one locks a dead file), then
        drop the lock; an empty session directory is removed. Releasing twice is harmless."""
        if self._fd is None:
            return
        fd, self._fd = self._fd, None
        self._finalizer.detach()
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()
        os.close(fd)
        with contextlib.suppress(OSError):  # not empty (a log, or a new claimer's lock): keep
            self.path.parent.rmdir()


def _same_file(fd: int, path: Path) -> bool:
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return False
    own = os.fstat(fd)
    return (st.st_dev, st.st_ino) == (own.st_dev, own.st_ino)


def _holder(fd: int) -> int | None:
    """The pid the holder wrote, waiting briefly for a holder that has just locked."""
    deadline = time.monotonic() + _PID_WAIT_S
    while True:
        text = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
        if text.isdigit():
            return int(text)
        if time.monotonic() >= deadline:
            return None
        time.sleep(0.01)

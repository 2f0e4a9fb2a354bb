"""Linux inotify on a workspace's contract files, for runtime_cache: one non-blocking read
says whether anything changed since the watch began, instead of a stat of every file.

The kernel queues an inotify event inside the call that changes the file (write, rename,
unlink, chmod, utime), so a change made before `changed()` runs is seen by it: an edited
SKILL.md is still seen on the very next request. Where inotify cannot cover the files (not
Linux, no watches left, a symlink in a contract tree: its target is not watched) `start`
returns None and the cache compares stat signatures as before.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import os
import queue
import stat
import struct
import threading
from collections.abc import Iterable
from pathlib import Path

_IN_NONBLOCK, _IN_CLOEXEC = os.O_NONBLOCK, os.O_CLOEXEC
_MASK = (0x2 | 0x4 | 0x8 | 0x40 | 0x80 | 0x100 | 0x200 | 0x400 | 0x800)
"""MODIFY, ATTRIB, CLOSE_WRITE, MOVED_FROM, MOVED_TO, CREATE, DELETE, DELETE_SELF, MOVE_SELF:
every way a file's bytes, name or presence changes (never OPEN or ACCESS: loading a
workspace reads its files and must not count as a change)."""
_LOST = 0x4000 | 0x8000
"""Q_OVERFLOW (events were dropped) and IGNORED (a watch is gone): assume a change."""
_HEADER = struct.Struct("iIII")
_libc: ctypes.CDLL | None = None


def _inotify() -> ctypes.CDLL | None:
    global _libc
    if _libc is None:
        try:
            # The interpreter's own symbols hold libc's: no find_library, which runs
            # `ldconfig -p` in a subprocess (a new kernel's first %agent paid for it).
            libc = ctypes.CDLL(None, use_errno=True)
            if not hasattr(libc, "inotify_init1"):
                libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
            libc.inotify_init1.argtypes = [ctypes.c_int]
            libc.inotify_add_watch.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32]
        except (OSError, AttributeError):  # not Linux, or a libc without inotify
            return None
        _libc = libc
    return _libc


class ContractWatch:
    """Watches on the directories holding a workspace's contract files; `changed()` turns
    True (and stays so) once any of them is edited, added, removed or renamed."""

    def __init__(self, fd: int, filters: dict[int, frozenset[str] | None]) -> None:
        self._fd = fd
        self._filters = filters
        """Watch descriptor -> the names in that directory that matter (None: every name)."""
        self._changed = False

    @classmethod
    def start(cls, paths: Iterable[Path]) -> ContractWatch | None:
        """Watch `paths` (files or directories; a directory stands for everything under it;
        a missing one is watched for being created), or None where that is not possible."""
        libc = _inotify()
        if libc is None:
            return None
        fd = libc.inotify_init1(_IN_NONBLOCK | _IN_CLOEXEC)
        if fd < 0:
            return None
        names: dict[str, set[str]] = {}
        trees: list[str] = []
        for path in paths:
            names.setdefault(str(path.parent), set()).add(path.name)
            try:  # one lstat for `path.is_symlink()` and, when it is not a link, `path.is_dir()`
                mode = os.lstat(path).st_mode
            except (OSError, ValueError):
                mode = 0  # missing (or a name no file system holds): watched for being created
            if stat.S_ISLNK(mode):
                _give_up(fd)
                return None
            if stat.S_ISDIR(mode) and not _tree(str(path), trees):
                _give_up(fd)
                return None
        filters: dict[int, frozenset[str] | None] = {}
        for directory, wanted in names.items():
            wd = libc.inotify_add_watch(fd, os.fsencode(directory), _MASK)
            if wd < 0:
                _give_up(fd)
                return None
            filters[wd] = frozenset(wanted)
        for directory in trees:  # after the parents: a directory in both takes every name
            wd = libc.inotify_add_watch(fd, os.fsencode(directory), _MASK)
            if wd < 0:
                _give_up(fd)
                return None
            filters[wd] = None
        return cls(fd, filters)

    def changed(self) -> bool:
        """True once a watched file changed since `start` (drains the queued events)."""
        while not self._changed:
            try:
                buf = os.read(self._fd, 65536)
            except BlockingIOError:
                return False
            except OSError:
                self._changed = True
                break
            self._changed = self._relevant(buf)
        return True

    def _relevant(self, buf: bytes) -> bool:
        at = 0
        while at < len(buf):
            wd, mask, _cookie, size = _HEADER.unpack_from(buf, at)
            name = buf[at + _HEADER.size: at + _HEADER.size + size].rstrip(b"\0")
            at += _HEADER.size + size
            if mask & _LOST:
                return True
            wanted = self._filters.get(wd, None)
            if wanted is None or os.fsdecode(name) in wanted:
                return True
        return False

    def close(self) -> None:
        """Remove every watch (closing the descriptor does). Linux takes milliseconds to tear
        an inotify instance down (it waits out a grace period: 3 ms here, more than loading
        the workspace again), so the descriptor is closed on a thread of its own and the
        Runtime rebuilt after an edit does not wait for it; `changed()` is True at once."""
        if self._fd >= 0:
            fd, self._fd = self._fd, -1
            self._changed = True
            _closer().put(fd)


_CLOSING: queue.SimpleQueue[int] | None = None


def _closer() -> queue.SimpleQueue[int]:
    """The queue of descriptors to close, and the one daemon thread closing them in turn
    (started on first use; os.close lets go of the GIL while Linux tears an instance down)."""
    global _CLOSING
    if _CLOSING is None:
        _CLOSING = queue.SimpleQueue()
        threading.Thread(target=_close_each, args=(_CLOSING,), name="agentos-contract-watch-close",
                         daemon=True).start()
    return _CLOSING


def _forget_closer() -> None:
    global _CLOSING
    _CLOSING = None  # a forked child has no closer thread: it starts its own when it needs one


os.register_at_fork(after_in_child=_forget_closer)


def _close_each(fds: queue.SimpleQueue[int]) -> None:
    while True:
        fd = fds.get()
        with contextlib.suppress(OSError):  # only this module holds it; keep closing the rest
            os.close(fd)


def _tree(top: str, out: list[str]) -> bool:
    """Append `top` and every directory under it to `out`, parents first, as `os.walk` lists
    them (a directory that cannot be listed is left out, as it skips one); False when any
    entry is a symlink. A directory entry knows whether it is a link without a stat call
    (one `lstat` per contract file was most of starting a watch)."""
    try:
        with os.scandir(top) as it:
            entries = list(it)
    except OSError:
        return True
    out.append(top)
    below = []
    for entry in entries:  # one pass: every entry is asked whether it is a link before any recursion
        try:
            if entry.is_symlink():
                return False
        except OSError:  # gone since listed: not a link, as os.walk has it
            pass
        try:
            if entry.is_dir():
                below.append(entry.path)
        except OSError:
            pass
    return all(_tree(path, out) for path in below)


def _give_up(fd: int) -> None:
    os.close(fd)
    return None

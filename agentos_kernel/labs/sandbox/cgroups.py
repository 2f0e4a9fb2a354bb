"""A cgroup per sandboxed run, where this machine lets the grader make one: a cap on the
number of processes (`pids.max`: a fork bomb stops at it, even as root, whom RLIMIT_NPROC
does not bind) and on the run's memory, all its processes together (`memory.max`, or
`memory.limit_in_bytes` under cgroup v1).

The grader makes the cgroup and writes its limits; `_confine.py` joins it before its
Landlock rules apply, so every process of the run is inside. Afterwards the grader kills
whatever is left in it and removes it. Where no controller can be used (no write access,
cgroup v2 without the controller delegated), `make` says why and the run goes on without:
the missing layer is reported, never assumed.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path

PROC_SELF_CGROUP = Path("/proc/self/cgroup")
PROC_SELF_MOUNTINFO = Path("/proc/self/mountinfo")


@dataclass(frozen=True)
class RunCgroups:
    """The cgroups made for one run (possibly none)."""

    dirs: tuple[tuple[str, str], ...]
    """(cgroup directory, what it limits) for each one made; `_confine.py` joins them."""
    memory: Path | None
    """The one with the memory limit, to tell afterwards whether it killed a process."""
    missing: tuple[str, ...]
    """Why a limit could not be set here (one line each)."""

    def oom_kills(self) -> int:
        """Processes of the run the memory limit killed (0 when none, or no memory cgroup)."""
        if self.memory is None:
            return 0
        for name in ("memory.events", "memory.oom_control"):  # v2, v1
            with contextlib.suppress(OSError, ValueError):
                for line in (self.memory / name).read_text().splitlines():
                    key, _, value = line.partition(" ")
                    if key == "oom_kill":
                        return int(value)
        return 0

    def remove(self) -> list[str]:
        """Kill every process still in the run's cgroups, then remove them; returns a line
        for each that could not be removed."""
        return [f"could not remove cgroup {d}" for d, _ in self.dirs if not _empty_and_remove(Path(d))]


def make(name: str, *, max_processes: int, memory_bytes: int) -> RunCgroups:
    """Make `name` under this process's own cgroup in the pids and memory hierarchies."""
    dirs: list[tuple[str, str]] = []
    missing: list[str] = []
    memory: Path | None = None
    wanted = (("pids", (("pids.max", str(max_processes)),), f"<= {max_processes} processes in all"),
              ("memory", (("memory.max", str(memory_bytes)), ("memory.limit_in_bytes", str(memory_bytes))),
               f"<= {memory_bytes >> 20} MiB of memory in all"))
    for controller, files, what in wanted:
        parent = _own_cgroup(controller)
        if parent is None:
            instead = " (RLIMIT_NPROC bounds them instead)" if controller == "pids" and os.geteuid() else ""
            missing.append(f"{controller} cgroup: no {controller} controller this process may use{instead}")
            continue
        d = parent / name
        try:
            d.mkdir()
        except OSError as exc:
            missing.append(f"{controller} cgroup: cannot make {d} ({exc.strerror})")
            continue
        if not _write_first(d, files):
            _empty_and_remove(d)
            missing.append(f"{controller} cgroup: cannot set the limit in {d}")
            continue
        dirs.append((str(d), f"cgroup {controller}: {what}"))
        if controller == "memory":
            memory = d
    return RunCgroups(tuple(dirs), memory, tuple(missing))


def _write_first(d: Path, files: tuple[tuple[str, str], ...]) -> bool:
    """Write the first of `files` the cgroup has (v2 and v1 name the memory limit apart)."""
    for fname, value in files:
        if (d / fname).exists():
            try:
                (d / fname).write_text(value)
                return True
            except OSError:
                return False
    return False


def _own_cgroup(controller: str) -> Path | None:
    """The directory of this process's cgroup for `controller`, if it is writable."""
    try:
        memberships = PROC_SELF_CGROUP.read_text().splitlines()
        mounts = PROC_SELF_MOUNTINFO.read_text().splitlines()
    except OSError:
        return None
    for line in memberships:
        _, controllers, path = line.split(":", 2)
        v2 = controllers == ""
        if not v2 and controller not in controllers.split(","):
            continue
        for mount in mounts:
            fields = mount.split()
            sep = fields.index("-")
            fstype, options = fields[sep + 1], fields[sep + 3].split(",")
            if fstype != ("cgroup2" if v2 else "cgroup") or (not v2 and controller not in options):
                continue
            root, point = fields[3], fields[4]
            rel = os.path.relpath(path, root) if path.startswith(root) else None
            if rel is None or rel.startswith(".."):
                continue
            d = Path(point) / rel if rel != "." else Path(point)
            if v2 and controller not in _words(d / "cgroup.subtree_control"):
                continue  # not delegated to children here
            if os.access(d, os.W_OK):
                return d
    return None


def _words(path: Path) -> list[str]:
    try:
        return path.read_text().split()
    except OSError:
        return []


def _empty_and_remove(d: Path) -> bool:
    # The pid namespace usually took every process with it already; a straggler (a process
    # that left the namespace's teardown late) is killed here, by the pids the cgroup lists.
    deadline = time.monotonic() + 5
    while True:
        for pid in _words(d / "cgroup.procs"):
            with contextlib.suppress(OSError, ValueError):
                os.kill(int(pid), signal.SIGKILL)
        try:
            d.rmdir()
            return True
        except FileNotFoundError:
            return True
        except OSError:
            if time.monotonic() > deadline:
                return False
            time.sleep(0.02)

"""Confine, then exec: the first program of every sandboxed run (see run.py).

Run as `python -I -S _confine.py CONFIG_JSON -- CMD...`, inside `unshare` when the grader
has it. It imports nothing from agentos_kernel (the package may not be readable once the
rules apply) and applies, in this order: resource limits (file size, no core dumps; and,
when the config asks, address space and process count), the cgroups the grader made for the
run (joined while the cgroup files are still writable), dropped capabilities, no_new_privs,
a Landlock ruleset (read-only system and Python prefixes, read-write only the sandbox dir,
no TCP bind/connect, no signals or abstract sockets out of the domain), then forks CMD and
waits for it. Each layer it applied, or could not, is written as one JSON line to the report
fd, so the grade says which protections held instead of assuming them. A layer named in the
config's `require` that could not be applied stops the launch before CMD runs (exit 126):
fail-closed. Exit status: CMD's, or 128+N if a signal N killed it.
"""

from __future__ import annotations

import ctypes
import json
import os
import resource
import signal
import sys

# typing costs ~10 ms to import and only the checker needs it: mypy reads this name as
# typing.TYPE_CHECKING (true), Python as False, so nothing more is imported at run time.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from types import FrameType
    from typing import Any

# Landlock syscalls have the same numbers on every architecture that has them.
CREATE_RULESET, ADD_RULE, RESTRICT_SELF = 444, 445, 446
RULE_PATH_BENEATH, RULE_NET_PORT = 1, 2
FS_EXECUTE, FS_WRITE_FILE, FS_READ_FILE, FS_READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
FILE_RIGHTS_BY_ABI = {1: 0b111, 3: 0b111 | 1 << 14, 5: 0b111 | 1 << 14 | 1 << 15}
ALL_FS_BY_ABI = {1: (1 << 13) - 1, 2: (1 << 14) - 1, 3: (1 << 15) - 1, 5: (1 << 16) - 1}
NET_ALL = 0b11  # BIND_TCP | CONNECT_TCP
SCOPE_ALL = 0b11  # ABSTRACT_UNIX_SOCKET | SIGNAL
PR_SET_NO_NEW_PRIVS, PR_CAPBSET_DROP, PR_SET_SECUREBITS, PR_SET_SECCOMP = 38, 24, 28, 22
SECCOMP_MODE_FILTER, SECCOMP_RET_ALLOW, SECCOMP_RET_ERRNO, EACCES = 2, 0x7FFF0000, 0x00050000, 13
# (AUDIT_ARCH, connect): the syscall no sandbox rule covers for Unix sockets (a path outside
# the box, e.g. a database's or a container engine's socket); io_uring could connect too.
SECCOMP_ARCHES = {"x86_64": (0xC000003E, 42), "aarch64": (0xC00000B7, 203)}
IO_URING = (425, 426, 427)  # setup, enter, register: the same numbers on both
X32_BIT = 0x40000000
PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL = 47, 4
# NOROOT, NO_SETUID_FIXUP and their locks: root's uid no longer brings capabilities at exec.
SECURE_NOROOT_ALL = 0b1111

libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long


class PathBeneath(ctypes.Structure):
    _pack_ = 1
    _fields_ = (("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32))


class NetPort(ctypes.Structure):
    _fields_ = (("allowed_access", ctypes.c_uint64), ("port", ctypes.c_uint64))


def by_abi(table: dict[int, int], abi: int) -> int:
    return table[max(k for k in table if k <= abi)]


def landlock(ro: list[str], rw: list[str], deny_net: bool) -> dict[str, int | bool]:
    """Apply the ruleset; return what was enforced (or raise OSError naming the step)."""
    abi = libc.syscall(CREATE_RULESET, None, 0, 1)
    if abi < 1:
        raise OSError(ctypes.get_errno(), "Landlock is not available in this kernel")
    fs_all, file_rights = by_abi(ALL_FS_BY_ABI, abi), by_abi(FILE_RIGHTS_BY_ABI, abi)
    net = NET_ALL if deny_net and abi >= 4 else 0
    scoped = SCOPE_ALL if abi >= 6 else 0
    attr = (ctypes.c_uint64 * 3)(fs_all, net, scoped)
    size = 24 if abi >= 6 else 16 if abi >= 4 else 8
    fd = libc.syscall(CREATE_RULESET, ctypes.byref(attr), size, 0)
    if fd < 0:
        raise OSError(ctypes.get_errno(), "landlock_create_ruleset")
    read = FS_EXECUTE | FS_READ_FILE | FS_READ_DIR
    for paths, rights in ((ro, read), (rw, fs_all)):
        for path in paths:
            try:
                pfd = os.open(path, os.O_PATH | os.O_CLOEXEC)
            except OSError:
                continue  # a prefix this machine lacks (/lib32): nothing to allow
            allowed = rights if os.path.isdir(path) else rights & file_rights
            rule = PathBeneath(allowed, pfd)
            if libc.syscall(ADD_RULE, fd, RULE_PATH_BENEATH, ctypes.byref(rule), 0) != 0:
                raise OSError(ctypes.get_errno(), f"landlock_add_rule {path}")
            os.close(pfd)
    if libc.syscall(RESTRICT_SELF, fd, 0) != 0:
        raise OSError(ctypes.get_errno(), "landlock_restrict_self")
    os.close(fd)
    return {"abi": abi, "fs": True, "net": bool(net), "scoped": bool(scoped)}


class SockFilter(ctypes.Structure):
    _fields_ = (("code", ctypes.c_uint16), ("jt", ctypes.c_uint8), ("jf", ctypes.c_uint8),
                ("k", ctypes.c_uint32))


class SockFprog(ctypes.Structure):
    _fields_ = (("len", ctypes.c_ushort), ("filter", ctypes.POINTER(SockFilter)))


def deny_connect() -> None:
    """A seccomp filter: connect() and io_uring fail with EACCES, and so does every syscall
    of another ABI (x32, 32-bit) whose numbers the filter does not know."""
    machine = os.uname().machine
    if machine not in SECCOMP_ARCHES:
        raise OSError(0, f"no syscall numbers for {machine}")
    arch, connect = SECCOMP_ARCHES[machine]
    ld, jeq, jset, ret = 0x20, 0x15, 0x45, 0x06
    denied = (connect, *IO_URING)
    n = 5 + len(denied)  # index of the deny instruction
    prog = [(ld, 0, 0, 4), (jeq, 0, n - 2, arch), (ld, 0, 0, 0), (jset, n - 4, 0, X32_BIT)]
    prog += [(jeq, n - 5 - i, 0, nr) for i, nr in enumerate(denied)]
    prog += [(ret, 0, 0, SECCOMP_RET_ALLOW), (ret, 0, 0, SECCOMP_RET_ERRNO | EACCES)]
    filters = (SockFilter * len(prog))(*(SockFilter(*ins) for ins in prog))
    fprog = SockFprog(len(prog), filters)
    if libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(fprog), 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_SECCOMP)")


def drop_capabilities() -> None:
    for cap in range(64):
        if libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0:
            break  # past the last capability this kernel knows
    libc.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
    if libc.prctl(PR_SET_SECUREBITS, SECURE_NOROOT_ALL, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_SECUREBITS)")


def apply_landlock(config: dict[str, Any], layer: Callable[..., None]) -> None:
    try:
        got = landlock(config["ro"], config["rw"], config["deny_net"])
    except OSError as exc:
        layer("landlock", False, f"Landlock not applied: {exc}")
        return
    what = f"Landlock ABI {got['abi']}: read-write only in the box, read-only system and Python"
    what += ", no TCP connect/bind" if got["net"] else ", TCP not covered (ABI < 4)"
    what += ", no signals or abstract sockets out of the sandbox" if got["scoped"] else ""
    layer("landlock", True, what, **got)


def extra_limits(config: dict[str, Any]) -> str:
    """Address space and process count, when the config sets them (lab kernels do)."""
    what = ""
    if config.get("max_memory_bytes"):
        limit = config["max_memory_bytes"]
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
        what += f", address space <= {limit >> 20} MiB a process"
    if config.get("max_processes"):
        # Counted per user (in the user namespace when there is one); root is exempt, which is
        # why the grader also puts the run in a pids cgroup where it can.
        limit = config["max_processes"]
        resource.setrlimit(resource.RLIMIT_NPROC, (limit, limit))
        what += f", <= {limit} processes" + (" (not enforced for root)" if os.geteuid() == 0 else "")
    return what


def join_cgroup(path: str, what: str, layer: Callable[..., None]) -> None:
    """Move this process (and so CMD and all it forks) into a cgroup the grader made and
    limited (`what` says how)."""
    try:
        with open(os.path.join(path, "cgroup.procs"), "w") as f:
            f.write("0\n")
        layer("cgroup", True, what)
    except OSError as exc:
        layer("cgroup", False, f"could not join cgroup {path}: {exc.strerror}")


def confine(config: dict[str, Any]) -> None:
    """Apply every layer `config` asks for to this process, writing each to the report fd;
    exit 126 when a required one could not be applied; end with the `launched` line."""
    report = config["report_fd"]

    def note(**layer: Any) -> None:
        os.write(report, (json.dumps({"layer": layer}) + "\n").encode())

    failed = []

    def layer(name: str, ok: bool, what: str, **extra: Any) -> None:
        note(name=name, ok=ok, what=what, **extra)
        if not ok:
            failed.append(name)

    # A crash dumps no core into the sandbox; a runaway writer gets EFBIG, not a full disk.
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    resource.setrlimit(resource.RLIMIT_FSIZE, (config["max_file_bytes"], config["max_file_bytes"]))
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    layer("limits", True, f"files <= {config['max_file_bytes']} bytes, no core dumps" + extra_limits(config))
    for path, what in config.get("cgroups", ()):
        join_cgroup(path, what, layer)
    if os.geteuid() == 0:
        try:
            drop_capabilities()
            layer("capabilities", True, "all capabilities dropped (root without privilege)")
        except OSError as exc:
            layer("capabilities", False, f"could not drop capabilities: {exc}")
    if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        layer("no_new_privs", False, "prctl(PR_SET_NO_NEW_PRIVS) failed")
    if config.get("deny_connect"):
        try:
            deny_connect()
            layer("seccomp", True, "no connect() (Unix sockets outside the box included), no io_uring")
        except OSError as exc:
            layer("seccomp", False, f"connect() not filtered ({exc.strerror or exc}): a Unix socket "
                                    "outside the box (a database's, a container engine's) can be reached")
    if not config["landlock"]:
        layer("landlock", False, "Landlock is not available in this kernel: reads and writes "
                                 "outside the box are only reported, not denied")
    else:
        apply_landlock(config, layer)
    refused = [name for name in config.get("require", ()) if name in failed]
    if refused:
        os.write(report, (json.dumps({"refused": refused}) + "\n").encode())
        os._exit(126)
    # The report fd stays open for the audit hook; this line ends the launcher's part, so a
    # "layer" line written later (by student code) is not believed.
    os.write(report, b'{"launched": true}\n')


def supervise(pid: int, config: dict[str, Any]) -> None:
    """Wait for CMD (`pid`), past the config's wall limit kill it; exit with its status."""
    if config.get("wall_seconds"):
        # A backstop for the grader's own time limit (should the grader die): past it this
        # launcher kills CMD and exits, and with it, as pid 1, goes the whole namespace. (A
        # handler, since a namespace's init ignores a signal left to its default action.)
        def expire(signum: int, frame: FrameType | None) -> None:
            os.kill(pid, signal.SIGKILL)
            os._exit(128 + signal.SIGALRM)

        signal.signal(signal.SIGALRM, expire)
        signal.alarm(config["wall_seconds"])
    # Reap until CMD ends (as pid 1 of a namespace we also collect CMD's orphans).
    while True:
        got, status = os.waitpid(-1, 0)
        if got == pid:
            break
    code = os.waitstatus_to_exitcode(status)
    os._exit(128 - code if code < 0 else code)


def main() -> None:
    config = json.loads(sys.argv[1])
    cmd = sys.argv[sys.argv.index("--") + 1:]
    confine(config)
    # An interrupt for CMD (a Jupyter kernel's, sent to the process group) must not end the
    # launcher: as pid 1 of the namespace, its death would kill CMD.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    pid = os.fork()
    if pid == 0:
        try:
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            os.execve(cmd[0], cmd, os.environ)
        finally:
            os._exit(127)
    supervise(pid, config)


if __name__ == "__main__":
    main()

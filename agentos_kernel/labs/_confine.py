"""Confine, then exec: the first program of every sandboxed run (see sandbox.py).

Run as `python -I -S _confine.py CONFIG_JSON -- CMD...`, inside `unshare` when the grader
has it. It imports nothing from agentos_kernel (the package may not be readable once the
rules apply) and applies, in this order: resource limits (file size, no core dumps),
dropped capabilities, no_new_privs, a Landlock ruleset (read-only system and Python
prefixes, read-write only the sandbox dir, no TCP bind/connect, no signals or abstract
sockets out of the domain), then forks CMD and waits for it. Each layer it applied, or
could not, is written as one JSON line to the report fd, so the grade says which
protections held instead of assuming them. Exit status: CMD's, or 128+N if a signal N
killed it.
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
    from typing import Any

# Landlock syscalls have the same numbers on every architecture that has them.
CREATE_RULESET, ADD_RULE, RESTRICT_SELF = 444, 445, 446
RULE_PATH_BENEATH, RULE_NET_PORT = 1, 2
FS_EXECUTE, FS_WRITE_FILE, FS_READ_FILE, FS_READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
FILE_RIGHTS_BY_ABI = {1: 0b111, 3: 0b111 | 1 << 14, 5: 0b111 | 1 << 14 | 1 << 15}
ALL_FS_BY_ABI = {1: (1 << 13) - 1, 2: (1 << 14) - 1, 3: (1 << 15) - 1, 5: (1 << 16) - 1}
NET_ALL = 0b11  # BIND_TCP | CONNECT_TCP
SCOPE_ALL = 0b11  # ABSTRACT_UNIX_SOCKET | SIGNAL
PR_SET_NO_NEW_PRIVS, PR_CAPBSET_DROP, PR_SET_SECUREBITS = 38, 24, 28
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


def drop_capabilities() -> None:
    for cap in range(64):
        if libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0:
            break  # past the last capability this kernel knows
    libc.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
    if libc.prctl(PR_SET_SECUREBITS, SECURE_NOROOT_ALL, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_SECUREBITS)")


def apply_landlock(config: dict[str, Any], note: Callable[..., None]) -> None:
    try:
        got = landlock(config["ro"], config["rw"], config["deny_net"])
    except OSError as exc:
        note(name="landlock", ok=False, what=f"Landlock not applied: {exc}")
        return
    what = f"Landlock ABI {got['abi']}: read-write only in the box, read-only system and Python"
    what += ", no TCP connect/bind" if got["net"] else ", TCP not covered (ABI < 4)"
    what += ", no signals or abstract sockets out of the sandbox" if got["scoped"] else ""
    note(name="landlock", ok=True, what=what, **got)


def main() -> None:
    config = json.loads(sys.argv[1])
    cmd = sys.argv[sys.argv.index("--") + 1:]
    report = config["report_fd"]

    def note(**layer: Any) -> None:
        os.write(report, (json.dumps({"layer": layer}) + "\n").encode())

    # A crash dumps no core into the sandbox; a runaway writer gets EFBIG, not a full disk.
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    resource.setrlimit(resource.RLIMIT_FSIZE, (config["max_file_bytes"], config["max_file_bytes"]))
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    note(name="limits", ok=True, what=f"files <= {config['max_file_bytes']} bytes, no core dumps")
    if os.geteuid() == 0:
        try:
            drop_capabilities()
            note(name="capabilities", ok=True, what="all capabilities dropped (root without privilege)")
        except OSError as exc:
            note(name="capabilities", ok=False, what=f"could not drop capabilities: {exc}")
    if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        note(name="no_new_privs", ok=False, what="prctl(PR_SET_NO_NEW_PRIVS) failed")
    if not config["landlock"]:
        note(name="landlock", ok=False, what="Landlock is not available in this kernel: reads and writes "
                                             "outside the box are only reported, not denied")
    else:
        apply_landlock(config, note)
    # The report fd stays open for the audit hook; this line ends the launcher's part, so a
    # "layer" line written later (by student code) is not believed.
    os.write(report, b'{"launched": true}\n')
    pid = os.fork()
    if pid == 0:
        try:
            os.execve(cmd[0], cmd, os.environ)
        finally:
            os._exit(127)
    # Reap until CMD ends (as pid 1 of a namespace we also collect CMD's orphans).
    while True:
        got, status = os.waitpid(-1, 0)
        if got == pid:
            break
    code = os.waitstatus_to_exitcode(status)
    os._exit(128 - code if code < 0 else code)


if __name__ == "__main__":
    main()

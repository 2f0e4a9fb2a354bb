"""Run a student's code in a sandbox: a fresh copy, a timeout, no network, no reads outside.

Each run gets its own box (`<work>/<name>/`): `sub/` (a copy of the submission, the working
dir), `home/`, `tmp/` (TMPDIR, pytest's basetemp), `site/` (the audit hook), `grade/` (where
the test runner writes its report). Its stdout, stderr and the protection report are files
*outside* the box. The layers, outermost first:

- `unshare --net --pid --fork --kill-child`: a network namespace with no interface, and a pid
  namespace whose processes all die with the run (a test that forks and detaches is gone too);
- `_confine.py`: file-size and core limits, capabilities dropped, no_new_privs, and a Landlock
  ruleset: read-only system and Python prefixes, read-write only the box, no TCP;
- `_audit_site.py`: a Python audit hook that names what was attempted outside (reporting only);
- the timeout: the whole process group is killed.

A layer this machine lacks is reported (`Protections.missing`, `RunResult.layers`, read by
`sandbox_report`), never assumed. The real submission folder is only ever read (copied), never run in.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .report import Attempt, Layer, read_report

__all__ = ["Attempt", "Box", "Layer", "Protections", "RunResult", "empty_box", "launcher", "make_box",
           "probe", "read_report", "readonly_roots", "run"]

MAX_FILE_BYTES = 64 << 20
TAIL_BYTES = 8192
_HERE = Path(__file__).resolve().parent
# System files a well-behaved program may read (dynamic loader, time zone, MIME and CA tables,
# OpenSSL's config that node reads at start); everything else outside the box and the
# prefixes below is denied.
RO_SYSTEM = ("/usr", "/lib", "/lib64", "/lib32", "/bin", "/sbin", "/etc/ld.so.cache", "/etc/localtime",
             "/etc/mime.types", "/etc/ssl/certs", "/etc/ssl/openssl.cnf", "/dev/urandom", "/dev/random",
             "/dev/zero")
RW_SYSTEM = ("/dev/null",)
COPY_IGNORE = shutil.ignore_patterns("__pycache__", ".pytest_cache", ".git", "node_modules")


@dataclass(frozen=True)
class RunResult:
    """How one sandboxed command ended."""

    returncode: int | None
    """Exit status (None when it was killed for the timeout)."""
    timed_out: bool
    """It ran past the timeout and its process group was killed."""
    signal: str | None
    """The signal that killed it (e.g. SIGSEGV), if one did."""
    seconds: float
    """Wall time."""
    stdout: str
    """The last TAIL_BYTES of its stdout."""
    stderr: str
    """The last TAIL_BYTES of its stderr."""
    attempts: tuple[Attempt, ...]
    """What it tried outside the box."""
    layers: tuple[Layer, ...]
    """Each protection and whether it held."""

    def problem(self, timeout: float) -> str | None:
        """Why the run cannot be trusted (timeout, crash, escape attempts), else None."""
        if self.timed_out:
            return f"did not finish within {timeout:g} s; its processes were killed"
        if self.signal:
            return f"crashed: the test process was killed by {self.signal}"
        if self.attempts:
            shown = "; ".join(a.describe() for a in self.attempts[:3])
            more = f" (+{len(self.attempts) - 3} more)" if len(self.attempts) > 3 else ""
            return f"the tests {shown}{more}: denied by the sandbox"
        return None


@dataclass(frozen=True)
class Box:
    """One run's private directory tree."""

    root: Path
    """The box; the only place the run may write."""

    @property
    def sub(self) -> Path:
        """The copy of the submission (the run's working dir)."""
        return self.root / "sub"

    @property
    def tmp(self) -> Path:
        """TMPDIR and pytest's basetemp parent."""
        return self.root / "tmp"

    @property
    def grade(self) -> Path:
        """Where the test runner writes its report (junit XML)."""
        return self.root / "grade"


def make_box(submission: Path, root: Path) -> Box:
    """Copy `submission` into a new box at `root` (symlinks copied as links, never followed,
    so a link to /etc/passwd stays a link the sandbox then refuses)."""
    box = Box(root)
    shutil.copytree(submission, box.sub, symlinks=True, ignore=COPY_IGNORE)
    _furnish(box)
    return box


def empty_box(root: Path) -> Box:
    """A new box at `root` with an empty `sub/`, for the caller to fill."""
    box = Box(root)
    box.sub.mkdir(parents=True)
    _furnish(box)
    return box


def _furnish(box: Box) -> None:
    for d in ("home", "tmp", "site", "grade"):
        (box.root / d).mkdir()
    shutil.copyfile(_HERE / "_audit_site.py", box.root / "site" / "sitecustomize.py")


@dataclass(frozen=True)
class Protections:
    """What this machine can enforce (probed once)."""

    unshare: tuple[str, ...]
    """The unshare prefix that works here, () when none does."""
    landlock_abi: int
    """Landlock ABI version, 0 when the kernel has none."""

    @property
    def missing(self) -> tuple[str, ...]:
        """Protections unavailable here, each with its consequence."""
        out = []
        if not self.unshare:
            out.append("namespaces (unshare failed: network is denied only by Landlock TCP rules, "
                       "and detached processes may outlive the timeout)")
        if self.landlock_abi < 1:
            out.append("landlock (kernel without Landlock: reads and writes outside the box are "
                       "not denied, only reported by the audit hook)")
        elif self.landlock_abi < 4 and not self.unshare:
            out.append("network (neither a network namespace nor Landlock TCP rules)")
        return tuple(out)


@functools.cache
def probe() -> Protections:
    """Probe unshare (as root, else in a user namespace) and the Landlock ABI."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    abi = max(0, libc.syscall(444, None, 0, 1))
    found: tuple[str, ...] = ()
    tool = shutil.which("unshare")
    if tool:
        base = (tool, "--net", "--pid", "--fork", "--kill-child")
        for prefix in (base, (*base[:1], "--user", "--map-root-user", *base[1:])):
            try:
                ok = subprocess.run([*prefix, "true"], capture_output=True, timeout=10).returncode == 0
            except (OSError, subprocess.TimeoutExpired):
                ok = False
            if ok:
                found = prefix
                break
    return Protections(found, abi)


def readonly_roots(extra: tuple[str, ...] = ()) -> tuple[str, ...]:
    """System paths and the grading Python's prefixes (what student code may read)."""
    exe = Path(os.path.realpath(sys.executable)).parent.parent
    prefixes = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix, str(exe)}
    return tuple(dict.fromkeys([*RO_SYSTEM, *sorted(prefixes), *extra]))


def launcher(box: Box, report: int, *, env: dict[str, str] | None = None, readonly: tuple[str, ...] = (),
             config: dict[str, Any] | None = None,
             via: list[str] | None = None) -> tuple[list[str], dict[str, str]]:
    """The argv prefix (unshare, then `_confine.py` with its config) that runs a command in
    `box` under every available protection, and the command's environment (built from
    nothing: no grader variables). `report` is an fd open on a file outside the box for the
    protection report; `config` adds to the launcher's (limits, cgroups, `require`). `via`: a
    fork server's client (forkserver.py), which applies the same layers to a forked kernel."""
    prot = probe()
    ro, rw = readonly_roots(readonly), (str(box.root), *RW_SYSTEM)
    full = {"ro": list(ro), "rw": list(rw), "deny_net": True, "deny_connect": True,
            "max_file_bytes": MAX_FILE_BYTES, "report_fd": report, "landlock": prot.landlock_abi > 0,
            **(config or {})}
    child_env = {
        "PATH": os.pathsep.join([str(Path(sys.executable).parent), "/usr/local/bin", "/usr/bin", "/bin"]),
        "HOME": str(box.root / "home"), "TMPDIR": str(box.tmp), "USER": "student", "LOGNAME": "student",
        "LANG": "C.UTF-8", "PYTHONDONTWRITEBYTECODE": "1", "PYTHONPATH": str(box.root / "site"),
        "AGENTOS_SANDBOX_REPORT_FD": str(report), "AGENTOS_SANDBOX_BOX": str(box.root),
        "AGENTOS_SANDBOX_ALLOWED": os.pathsep.join((*ro, *rw)),
        **(env or {}),
    }
    if via:
        return [*via, json.dumps(full), "--"], child_env
    confine = [sys.executable, "-I", "-S", str(_HERE / "_confine.py"), json.dumps(full), "--"]
    return [*prot.unshare, *confine], child_env


def run(cmd: list[str], box: Box, out: Path, *, timeout: float, env: dict[str, str] | None = None,
        readonly: tuple[str, ...] = ()) -> RunResult:
    """Run `cmd` (cmd[0] an absolute path) in `box.sub` under every available protection.
    `out` is a directory outside the box for stdout, stderr and the protection report."""
    out.mkdir(parents=True, exist_ok=True)
    prot = probe()
    report = os.open(out / "report.jsonl", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    prefix, child_env = launcher(box, report, env=env, readonly=readonly)
    argv = [*prefix, *cmd]
    start = time.monotonic()
    with (out / "stdout").open("wb") as so, (out / "stderr").open("wb") as se:
        proc = subprocess.Popen(argv, cwd=box.sub, env=child_env, stdin=subprocess.DEVNULL, stdout=so,
                                stderr=se, pass_fds=(report,), start_new_session=True)
        os.close(report)
        timed_out = False
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
        _kill_group(proc.pid)
        code = proc.wait()
    seconds = time.monotonic() - start
    layers, attempts = read_report(out / "report.jsonl", prot)
    sig = None
    if not timed_out and (code < 0 or 128 < code <= 128 + 64):
        sig = _signal_name(-code if code < 0 else code - 128)
    return RunResult(None if timed_out else code, timed_out, sig, seconds, _tail(out / "stdout"),
                     _tail(out / "stderr"), attempts, layers)


def _kill_group(pgid: int) -> None:
    # already gone (ProcessLookupError): the run ended and took its group with it
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


def _signal_name(n: int) -> str:
    try:
        return signal.Signals(n).name
    except ValueError:
        return f"signal {n}"


def _tail(path: Path) -> str:
    with path.open("rb") as f:
        f.seek(max(0, path.stat().st_size - TAIL_BYTES))
        return f.read().decode("utf-8", "replace")

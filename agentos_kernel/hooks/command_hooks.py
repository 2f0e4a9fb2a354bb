"""Command hooks: a gate that is a separate process (any language), given
`{"hook": ..., "input": ...}` as JSON on stdin and printing a HookDecision as JSON.

L6 owns these processes the way L1 owns tool I/O: the runtime never spawns one anywhere
else. A hook process is untrusted, so it is contained:

- it runs in its own session and process group, and the whole group is killed (SIGKILL)
  when the hook ends, however it ends: a child it forked cannot outlive it;
- it is killed at its `timeout_s`, which raises `CommandTimeout` (the bus records a deny
  with cause `timeout`);
- what it prints is capped (`MAX_STDOUT`, `MAX_STDERR`): a hook flooding its output is
  killed as soon as it passes the cap, and the runtime never holds more than that;
- stdin is written without blocking, so a hook that never reads its input cannot stall
  the runtime either.

A child that calls setsid() itself leaves the group and is out of reach (that needs a
cgroup or a container, see README "Known limitations")."""

from __future__ import annotations

import json
import os
import selectors
import signal
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .bus import thaw

MAX_STDOUT = 1 << 20
"""Bytes of stdout a command hook may print (a decision is a few hundred)."""
MAX_STDERR = 64 << 10
"""Bytes of stderr kept; more is a flood like stdout's."""
_DRAIN_S = 0.1  # after the hook exits: how long its pipes may stay open before we look why


class CommandTimeout(TimeoutError):
    """The hook process ran past its timeout; its process group was killed."""


@dataclass(frozen=True)
class Finished:
    """A hook process that ended by itself."""

    returncode: int
    """Its exit status (negative: killed by that signal)."""
    stdout: bytes
    """What it printed, at most MAX_STDOUT bytes."""
    stderr: bytes
    """Its error output, at most MAX_STDERR bytes."""
    left_behind: bool = False
    """It exited leaving processes of its group running (they were killed)."""


def command_handler(argv: list[str], cwd: Path, hook: str, timeout_s: float) -> Callable[[Any], Any]:
    """A handler that runs `argv` with `{"hook": ..., "input": ...}` on stdin. A non-zero
    exit, a flood, processes left running, or output that is not a JSON decision raises;
    the bus turns it into a deny (cause `exception`), and a timeout into a deny with cause
    `timeout`."""

    def fn(input: Any) -> Any:
        data = json.dumps({"hook": hook, "input": thaw(input)}).encode("utf-8")
        done = run_contained(argv, cwd, data, timeout_s)
        if done.returncode != 0:
            err = done.stderr.decode("utf-8", "replace").strip().splitlines()[-1:] or ["no stderr"]
            raise RuntimeError(f"command exited {done.returncode}: {err[0][:200]}")
        if done.left_behind:
            # A gate's answer comes from a process that is done; one that leaves work
            # running behind it is not a gate the runtime can account for.
            raise RuntimeError("command left processes running after it exited; its process "
                               "group was killed")
        try:
            return json.loads(done.stdout)
        except (json.JSONDecodeError, UnicodeDecodeError):
            raise RuntimeError(f"command printed no JSON decision: {done.stdout[:80]!r}") from None

    return fn


def run_contained(argv: list[str], cwd: Path, data: bytes, timeout_s: float) -> Finished:
    """Run `argv` in a new process group with `data` on stdin; return what it printed.
    Raises CommandTimeout past `timeout_s` and RuntimeError on a flood; in every case the
    process group is killed and the leader reaped before this returns."""
    deadline = time.monotonic() + timeout_s
    proc = subprocess.Popen(  # L6 owns hook processes, like L1 owns tool I/O
        argv, cwd=cwd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        start_new_session=True)
    try:
        out, err, held = _exchange(proc, data, deadline, timeout_s)
        try:  # its output is closed: the leader itself must end within the same deadline
            proc.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            raise CommandTimeout(_late(timeout_s)) from None
        # The leader is reaped, so anything its group id still reaches was left behind.
        left = _kill_group(proc) or held
    finally:
        if proc.returncode is None:  # not reaped yet: its pid (the group id) is still ours
            _kill_group(proc)
        for pipe in (proc.stdin, proc.stdout, proc.stderr):
            if pipe is not None:
                pipe.close()
        proc.wait()
    return Finished(proc.returncode, out, err, left)


def _late(timeout_s: float) -> str:
    return f"command hook ran past its {timeout_s}s timeout_s; its process group was killed"


def _exchange(proc: subprocess.Popen[bytes], data: bytes, deadline: float,
              timeout_s: float) -> tuple[bytes, bytes, bool]:
    """Write stdin and read stdout/stderr until both close; the bool says the leader exited
    while something else still held its pipes (a child it left behind, now killed)."""
    assert proc.stdin and proc.stdout and proc.stderr
    stdin, stdout, stderr = proc.stdin.fileno(), proc.stdout.fileno(), proc.stderr.fileno()
    buf = {stdout: bytearray(), stderr: bytearray()}
    cap = {stdout: MAX_STDOUT, stderr: MAX_STDERR}
    sel = selectors.DefaultSelector()
    os.set_blocking(stdin, False)
    sel.register(stdin, selectors.EVENT_WRITE)
    sel.register(stdout, selectors.EVENT_READ)
    sel.register(stderr, selectors.EVENT_READ)
    reading, sent, exited_at, held = {stdout, stderr}, 0, None, False
    try:
        while reading:
            now = time.monotonic()
            if exited_at is None and _exited(proc):
                exited_at = now
            if exited_at is not None and now - exited_at >= _DRAIN_S:
                # It exited, yet its pipes stay open: a process it left behind holds them.
                if held:
                    break  # that process left the group (setsid): nothing more from the hook
                held = True
                _kill_group(proc)  # the leader is not reaped yet, so this is its group
                exited_at = now
                continue
            if now >= deadline:
                if exited_at is not None:
                    break  # the hook itself ended in time
                _kill_group(proc)
                raise CommandTimeout(_late(timeout_s))
            limit = deadline if exited_at is None else min(deadline, exited_at + _DRAIN_S)
            for key, _ in sel.select(min(limit - now, 0.05)):
                fd = key.fd
                if fd == stdin:
                    try:
                        sent += os.write(stdin, data[sent:sent + 65536])
                    except OSError:  # BrokenPipeError: it stopped reading; its answer decides
                        sent = len(data)
                    if sent >= len(data):
                        sel.unregister(stdin)
                        proc.stdin.close()
                    continue
                chunk = os.read(fd, 65536)
                if not chunk:
                    sel.unregister(fd)
                    reading.discard(fd)
                    continue
                buf[fd] += chunk
                if len(buf[fd]) > cap[fd]:
                    _kill_group(proc)
                    which = "stdout" if fd == stdout else "stderr"
                    raise RuntimeError(f"command printed more than {cap[fd]} bytes on {which}; "
                                       "its process group was killed")
    finally:
        sel.close()
    return bytes(buf[stdout]), bytes(buf[stderr]), held


def _exited(proc: subprocess.Popen[bytes]) -> bool:
    """The leader has exited. Not reaped (WNOWAIT): until it is, its pid cannot be reused,
    so killing its process group can never reach anyone else's processes."""
    try:
        return os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
    except ChildProcessError:
        return True


def _kill_group(proc: subprocess.Popen[bytes]) -> bool:
    """SIGKILL the hook's process group; True when it still had a process to kill."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)  # start_new_session: the group id is its pid
    except (ProcessLookupError, PermissionError):
        return False  # the group is already gone
    return True

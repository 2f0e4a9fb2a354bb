"""Hook handlers named in `agentos.yaml`: a Python dotted path, or a command that reads the
hook input as JSON on stdin and prints a decision as JSON on stdout."""

from __future__ import annotations

import importlib
import json
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .bus import HookDecision, HookHandler, thaw


def resolve_callable(dotted: str) -> Callable[[Any], Any]:
    """`package.module:function` -> the function; ValueError says what is wrong."""
    module_name, sep, attr = dotted.partition(":")
    if not sep or not module_name or not attr:
        raise ValueError(f"handler {dotted!r} must look like 'package.module:function'")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ValueError(f"cannot import module {module_name!r} ({exc})") from None
    fn = getattr(module, attr, None)
    if fn is None or not callable(fn):
        raise ValueError(f"module {module_name!r} has no function {attr!r}")
    return fn


def command_handler(argv: list[str], cwd: Path, hook: str, timeout_s: float) -> Callable[[Any], Any]:
    """A handler that runs `argv` with `{"hook": ..., "input": ...}` on stdin.

    The process is killed at the timeout (a command hook cannot outlive its budget); a
    non-zero exit or output that is not a JSON decision raises, which the bus turns into
    a deny."""

    def fn(input: Any) -> dict[str, Any]:
        proc = subprocess.run(  # L6 owns hook processes, like L1 owns tool I/O
            argv,
            input=json.dumps({"hook": hook, "input": thaw(input)}),
            capture_output=True,
            text=True,
            cwd=cwd,
            timeout=timeout_s,
            check=False,
        )
        if proc.returncode != 0:
            err = proc.stderr.strip().splitlines()[-1:] or ["no stderr"]
            raise RuntimeError(f"command exited {proc.returncode}: {err[0]}")
        try:
            out = json.loads(proc.stdout)
        except json.JSONDecodeError:
            raise RuntimeError(f"command printed no JSON decision: {proc.stdout[:80]!r}") from None
        return out

    return fn


def handler_from_entry(entry: dict[str, Any], workspace: Path) -> HookHandler:
    """Build a `HookHandler` from one validated `hooks:` entry of agentos.yaml."""
    timeout = float(entry.get("timeout_s", 2.0))
    if "handler" in entry:
        fn = resolve_callable(entry["handler"])
        default_id = entry["handler"].rpartition(":")[2]
    else:
        argv = [str(a) for a in entry["command"]]
        # The hook is killed a little after the bus gives up on it, never before.
        fn = command_handler(argv, workspace, entry["event"], timeout + 1.0)
        default_id = " ".join(argv)
    return HookHandler(
        id=entry.get("id", default_id), fn=fn, priority=int(entry.get("priority", 0)),
        timeout_s=timeout,
    )


__all__ = ["HookDecision", "command_handler", "handler_from_entry", "resolve_callable"]

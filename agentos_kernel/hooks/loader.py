"""Hook handlers named in `agentos.yaml`: a Python dotted path, or a command
(command_hooks.py) that reads the hook input as JSON on stdin and prints a decision."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .bus import HookDecision, HookHandler
from .command_hooks import command_handler

COMMAND_GRACE_S = 0.25
"""How long past a command hook's timeout_s the bus waits for the hook to kill itself (its
group killed and reaped: tens of ms on a busy machine; at 0.05 s the backstop sometimes won
the race and the deny named the bus's timeout instead of the command's)."""


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


def handler_from_entry(entry: dict[str, Any], workspace: Path) -> HookHandler:
    """Build a `HookHandler` from one validated `hooks:` entry of agentos.yaml."""
    timeout = float(entry.get("timeout_s", 2.0))
    if "handler" in entry:
        fn = resolve_callable(entry["handler"])
        default_id = entry["handler"].rpartition(":")[2]
    else:
        argv = [str(a) for a in entry["command"]]
        default_id = " ".join(argv)
        if argv[0] == "python":
            # `python` is the interpreter running the runtime, so `[python, hooks/check.py]`
            # works wherever the workspace goes (many systems have only python3 on PATH).
            argv[0] = sys.executable
        # The process is killed (its whole group) at the timeout and the hook denied with
        # cause `timeout`; the bus waits a little longer only as a backstop, so the kill
        # and the decision come together.
        fn = command_handler(argv, workspace, entry["event"], timeout)
        timeout += COMMAND_GRACE_S
    return HookHandler(
        id=entry.get("id", default_id), fn=fn, priority=int(entry.get("priority", 0)),
        timeout_s=timeout,
    )


__all__ = ["HookDecision", "command_handler", "handler_from_entry", "resolve_callable"]

"""Command hooks: a gate that is a separate process (any language), given
`{"hook": ..., "input": ...}` as JSON on stdin and printing a HookDecision as JSON.

L6 owns these processes the way L1 owns tool I/O: the runtime never spawns one anywhere
else."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .bus import thaw


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

"""What the `agentos` command modules share: exit codes, the one-line UsageError, building the
runtime from the common arguments, and printing a finished run."""

from __future__ import annotations

import argparse
import contextlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..errors import Err, Result
from ..kernel import Runtime
from ..providers.faults import FaultPlanError, load_fault_plan
from ..store.events import check_session_id
from ..telemetry.livetrace import LiveTrace
from ..telemetry.trace import trace_lines

EXIT_OK, EXIT_NOT_OK, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130


class UsageError(Exception):
    """A one-line problem with the command's input."""


def runtime_from_args(args: argparse.Namespace) -> Runtime:
    faults = None
    if getattr(args, "faults", None):
        try:
            faults = load_fault_plan(args.faults)
        except FaultPlanError as exc:
            raise UsageError(str(exc)) from None
    rt = Runtime.from_workspace(args.workspace, profile=getattr(args, "profile", None),
                                faults=faults)
    if getattr(args, "cassette", None) and not args.record:
        raise UsageError("--cassette names the file --record writes: add --record")
    if getattr(args, "record", False):
        rt.record_to = (Path(args.cassette) if args.cassette else
                        rt.workspace.root / "cassettes" / f"{rt.profile.name}.json")
    return rt


def print_run(rt: Runtime, session_id: str, trace: bool = True) -> str | None:
    """Print the trace (unless `trace` is False); the log's close reason (None when the
    session has no close)."""
    events = rt.events(session_id)
    for line in trace_lines(events) if trace else ():
        print(line)
    close = next((e.payload for e in reversed(events) if e.type == "session.close"), None)
    return close.get("reason") if isinstance(close, dict) else None


@contextlib.contextmanager
def live_trace(rt: Runtime, as_json: bool) -> Iterator[None]:
    """Print the trace while the run goes on, each event as it is logged (not for --json)."""
    if as_json:
        yield
        return
    live = LiveTrace()
    try:
        with rt.watching(live):
            yield
    finally:
        live.close()


def report_run(rt: Runtime, result: Result[Any], as_json: bool,
               streamed: bool = False) -> tuple[int, str]:
    """Print a finished request (the trace unless `streamed` already printed it, log,
    verdict; or the snapshot as JSON): exit code, id."""
    sid = result.error.session_id if isinstance(result, Err) else result.value.session_id
    if sid is None:  # refused before a session existed (e.g. the id is taken)
        assert isinstance(result, Err)  # an Ok always names its session
        raise UsageError(result.error.message)
    if as_json:
        print(json.dumps(rt.replay(sid).to_dict(), indent=2, ensure_ascii=False))
    else:
        reason = print_run(rt, sid, trace=not streamed)
        print()
        print(f"session {sid}: log {rt.store.path(sid)}")
        if isinstance(result, Err):  # the log's reason: the final code and the root cause
            print(f"NOT ok: {reason or result.error}")
        else:
            print(f"ok: {result.value.output}")
    return (EXIT_NOT_OK if isinstance(result, Err) else EXIT_OK), sid


def session_arg(sid: str) -> str:
    problem = check_session_id(sid)
    if problem:
        raise UsageError(problem)
    return sid

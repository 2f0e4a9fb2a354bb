"""`agentos`: the command line. Thin: parse, call the library, print.

Exit codes: 0 ok; 1 the session closed not ok, validate found problems, `rerun --verify`
diverged, or `verify` (or `replay`/`events --strict`) found a problem; 2 bad arguments,
config, workspace or unknown session; 130 interrupted.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .. import __version__
from ..errors import ContractError, Err, Result
from ..store.events import LogError, check_session_id
from ..schemas.jsonshape import printable
from ..kernel import Runtime
from ..telemetry.livetrace import LiveTrace
from ..providers.faults import PRESETS, FaultPlanError, load_fault_plan
from ..schemas.textcheck import argv_error
from ..telemetry.trace import trace_lines

CANONICAL = "hello, greet Ada"
EXIT_OK, EXIT_NOT_OK, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130


class UsageError(Exception):
    """A one-line problem with the command's input."""


def _runtime(args: argparse.Namespace) -> Runtime:
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


def _print_run(rt: Runtime, session_id: str, trace: bool = True) -> str | None:
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


def cmd_run(args: argparse.Namespace) -> int:
    if args.cycle is not None:
        return _run_cycle(_runtime(args), args)
    if args.mode is not None:
        raise UsageError("--mode applies to a cycle: add --cycle ID (e.g. --cycle code-review)")
    rt = _runtime(args)
    code = _run(rt, args.prompt, args.session, args.json)[0]
    if rt.record_to is not None and not args.json:
        print(f"cassette: {rt.record_to} (replay offline with a profile "
              f"{{provider: cassette, model: {rt.profile.model}, cassette: <that file>}})")
    return code


def _run_cycle(rt: Runtime, args: argparse.Namespace) -> int:
    with live_trace(rt, args.json):
        result = rt.run_cycle(args.cycle, args.prompt, session_id=args.session, mode=args.mode)
    if isinstance(result, Err):  # refused before a session existed: unknown cycle or mode, id taken
        raise UsageError(result.error.message)
    c = result.value
    if args.json:
        print(json.dumps(rt.replay(c.session_id).to_dict(), indent=2, ensure_ascii=False))
    else:
        print()
        print(f"session {c.session_id}: log {c.log_path}")
        print(f"cycle {c.cycle_id}: {' -> '.join(c.visited) or '(not started)'}")
        print(f"verdict {c.verdict}: {c.reason}")
    return EXIT_OK if c.ok else EXIT_NOT_OK


def _run(rt: Runtime, prompt: str, session: str | None, as_json: bool) -> tuple[int, str]:
    with live_trace(rt, as_json):
        result = rt.handle_user_request(prompt, session_id=session)
    return report_run(rt, result, as_json, streamed=True)


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
        reason = _print_run(rt, sid, trace=not streamed)
        print()
        print(f"session {sid}: log {rt.store.path(sid)}")
        if isinstance(result, Err):  # the log's reason: the final code and the root cause
            print(f"NOT ok: {reason or result.error}")
        else:
            print(f"ok: {result.value.output}")
    return (EXIT_NOT_OK if isinstance(result, Err) else EXIT_OK), sid


def cmd_demo(args: argparse.Namespace) -> int:
    rt = _runtime(args)
    print(f"agentos demo: {CANONICAL!r} with profile {rt.profile.name!r} "
          f"(provider {rt.profile.provider}, model {rt.profile.model})\n")
    code, sid = _run(rt, CANONICAL, None, False)
    snap = rt.replay(sid)
    print("\nreplay snapshot (recomputed from the log alone):")
    print(json.dumps({k: v for k, v in snap.to_dict().items()
                      if k in ("session_id", "closed", "ok", "output", "state", "skill", "cost",
                               "llm_calls", "rework_count")}, indent=2))
    print("\nnext:")
    print(f"  agentos replay {sid} --at 10      # the state after event 10")
    print(f"  agentos events {sid} --type hook.fired")
    print("  agentos run 'hello, greet Ada' --faults malformed_worker   # a fail-closed path")
    print("  agentos run 'review the change in auth.py' --cycle code-review   # an L8 cycle")
    print(f"  ({len(PRESETS)} fault presets: see `agentos run --help`)")
    return code


def _session_arg(sid: str) -> str:
    problem = check_session_id(sid)
    if problem:
        raise UsageError(problem)
    return sid


def cmd_rerun(args: argparse.Namespace) -> int:
    from ..runs.rerun import rerun  # only this command needs it

    rt = _runtime(args)
    result = rerun(rt, _session_arg(args.session_id))
    if isinstance(result, Err):  # it could not be re-run: no new session was made
        raise UsageError(result.error.message)
    report = result.value
    if args.json:
        print(json.dumps(report.to_dict(), indent=2, ensure_ascii=False, default=str))
    else:
        _print_run(rt, report.rerun_session)
        print()
        print(report.verdict())
    return EXIT_NOT_OK if args.verify and not report.verified else EXIT_OK


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="agentos",
        description="agentos-kernel: run, replay and inspect agent requests on a reference "
                    "Agent OS Runtime (offline on the scripted provider by default).")
    parser.add_argument("--workspace", type=Path, default=None,
                        help="workspace directory holding agentos.yaml (default: the nearest parent "
                             "of the current directory that has one, else the bundled reference)")
    parser.add_argument("--version", action="version", version=f"agentos-kernel {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser("demo", help="run the canonical request 'hello, greet Ada' and show its trace")
    p.add_argument("--profile", help="profile from agentos.yaml (default: its default_profile)")
    p.add_argument("--faults", metavar="PLAN", help="fault preset name(s), comma-separated, or a plan file")
    p.set_defaults(fn=cmd_demo)

    p = sub.add_parser("run", help="run one request end to end and print its event trace")
    p.add_argument("prompt", help="the user request, e.g. 'hello, greet Ada'")
    p.add_argument("--profile", help="profile from agentos.yaml (default: its default_profile)")
    p.add_argument("--session", metavar="ID", help="session id to use (must be new)")
    p.add_argument("--faults", metavar="PLAN",
                   help=f"fault preset name(s), comma-separated ({', '.join(sorted(PRESETS))}), "
                        "or a YAML/JSON plan file (schemas/fault_plan_v1.json)")
    p.add_argument("--cycle", metavar="ID",
                   help="run an L8 cycle from workflows/cycles/ID.md instead (e.g. code-review, "
                        "bugfix, ralph-loop); exit 0 only for verdict done")
    p.add_argument("--mode", metavar="MODE",
                   help="cycle mode: interactive, autofix, report-only or headless (default: the "
                        "cycle's default_mode); it changes what is written, not what is decided")
    p.add_argument("--json", action="store_true", help="print the replay snapshot as JSON instead")
    p.add_argument("--record", action="store_true",
                   help="add every answered model call to a cassette file, keyed by the sha256 "
                        "of the request; a profile with provider: cassette replays it offline")
    p.add_argument("--cassette", metavar="FILE",
                   help="with --record: the cassette file (default: cassettes/<profile>.json "
                        "in the workspace)")
    p.set_defaults(fn=cmd_run)

    from . import log as cli_log  # replay, events, verify: the commands that read a log
    cli_log.add_commands(sub)
    from . import fork as cli_fork  # fork and diff
    cli_fork.add_commands(sub)

    p = sub.add_parser("rerun", help="run a recorded session again on its recorded model answers and "
                                     "tool results (no side effects) and compare the two logs")
    p.add_argument("session_id")
    p.add_argument("--verify", action="store_true",
                   help="exit 1 when the re-run diverges from the log (else only report it)")
    p.add_argument("--json", action="store_true", help="print the rerun report as JSON instead")
    p.set_defaults(fn=cmd_rerun)

    from . import workspace as cli_workspace  # run-scenarios, validate, init
    cli_workspace.add_commands(sub)

    from . import mcp as cli_mcp  # mcp serve
    cli_mcp.add_commands(sub)

    from . import export as cli_export  # export otel
    cli_export.add_commands(sub)

    from . import store as cli_store  # store migrate, add-student, copy, sessions (PostgreSQL)
    cli_store.add_commands(sub)

    from .grading import add_commands  # audit, conform, lab, grade
    add_commands(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    bad = argv_error(sys.argv[1:] if argv is None else argv)
    if bad:  # before argparse, so no command sees text it cannot log or print
        print(f"agentos: error: {bad}", file=sys.stderr)
        return EXIT_USAGE
    if any(a.startswith("-") and a.endswith("=--") for a in argv or sys.argv[1:]):
        # argparse (3.11) turns `--opt=--` into an empty list instead of the string "--"
        parser.error("an option's value cannot be '--'; quote what you meant")
    args = parser.parse_args(argv)
    if getattr(args, "at", None) is not None and args.at < 0:
        parser.error("--at must be 0 or more")
    try:
        return args.fn(args)
    except (UsageError, ContractError, FaultPlanError, LogError) as exc:
        print(f"agentos: error: {printable(str(exc))}", file=sys.stderr)
        return EXIT_USAGE
    except KeyError as exc:  # unknown session, profile, skill ... (the message names it)
        print(f"agentos: error: {printable(str(exc.args[0] if exc.args else exc))}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("agentos: interrupted; the session log was closed with reason 'interrupted'",
              file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        return EXIT_OK
    except Exception as exc:
        from ..store.factory import db_error  # a PostgreSQL store's refusal: one line, not a traceback

        message = db_error(exc)
        if message is None:
            raise
        print(f"agentos: error: {printable(message)}", file=sys.stderr)
        return EXIT_USAGE


if __name__ == "__main__":
    sys.exit(main())

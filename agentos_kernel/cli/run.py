"""`agentos demo | run | rerun`: running a request (or an L8 cycle) and running a recorded one
again. Thin: parse, call the runtime, print."""

from __future__ import annotations

import argparse
import json
from typing import Any

from ..errors import Err
from ..kernel import Runtime
from ..providers.faults import PRESETS
from .common import (
    EXIT_NOT_OK,
    EXIT_OK,
    UsageError,
    live_trace,
    print_run,
    report_run,
    runtime_from_args,
    session_arg,
)

CANONICAL = "hello, greet Ada"


def add_commands(sub: Any) -> None:
    """Register demo, run and rerun on the `agentos` subparsers."""
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

    p = sub.add_parser("rerun", help="run a recorded session again on its recorded model answers and "
                                     "tool results (no side effects) and compare the two logs")
    p.add_argument("session_id")
    p.add_argument("--verify", action="store_true",
                   help="exit 1 when the re-run diverges from the log (else only report it)")
    p.add_argument("--json", action="store_true", help="print the rerun report as JSON instead")
    p.set_defaults(fn=cmd_rerun)


def cmd_run(args: argparse.Namespace) -> int:
    if args.cycle is not None:
        return _run_cycle(runtime_from_args(args), args)
    if args.mode is not None:
        raise UsageError("--mode applies to a cycle: add --cycle ID (e.g. --cycle code-review)")
    rt = runtime_from_args(args)
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


def cmd_demo(args: argparse.Namespace) -> int:
    rt = runtime_from_args(args)
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


def cmd_rerun(args: argparse.Namespace) -> int:
    from ..runs.rerun import rerun  # only this command needs it

    rt = runtime_from_args(args)
    result = rerun(rt, session_arg(args.session_id))
    if isinstance(result, Err):  # it could not be re-run: no new session was made
        raise UsageError(result.error.message)
    report = result.value
    if args.json:
        print(json.dumps(report.to_dict(), indent=2, ensure_ascii=False, default=str))
    else:
        print_run(rt, report.rerun_session)
        print()
        print(report.verdict())
    return EXIT_NOT_OK if args.verify and not report.verified else EXIT_OK

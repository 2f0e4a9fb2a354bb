"""`agentos fork` and `agentos diff`: change history and compare. Thin: parse, call the
library (fork.py, runs/diff.py), print.

fork exits like run (0 the fork closed ok, 1 not ok, 2 refused before a session existed:
an unknown parent, a log that does not verify, a K that is not a resume point). diff exits
0 when the two logs do the same thing, 1 when they diverge, 2 on bad input.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import asdict
from typing import Any

from ..errors import Err
from ..providers.faults import PRESETS
from .common import EXIT_NOT_OK, EXIT_OK, UsageError, live_trace, report_run, runtime_from_args


def cmd_fork(args: argparse.Namespace) -> int:
    from ..runs.fork import fork, parse_target  # only this command needs them

    try:
        parent, at = parse_target(args.target)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    rt = runtime_from_args(args)
    with live_trace(rt, args.json):
        result = fork(rt, parent, at, session_id=args.session, faults=args.faults)
    if isinstance(result, Err) and result.error.session_id is None:
        raise UsageError(result.error.message)  # refused: no session was made
    return report_run(rt, result, args.json, streamed=True)[0]


def cmd_diff(args: argparse.Namespace) -> int:
    from ..runs.difftext import diff_lines, diff_logs, usage_lines, verdict
    from .log import _checked, find_logs

    paths = []
    for target in (args.a, args.b):
        logs = find_logs(target, args.workspace)
        if len(logs) != 1:
            raise UsageError(f"{target} holds {len(logs)} logs; diff compares two sessions")
        if (code := _checked(logs[0], target, args.strict)) is not None:
            return code
        paths.append(logs[0])
    d = diff_logs(*paths)
    if args.json:
        print(json.dumps(_json(d), indent=2, ensure_ascii=False))
    else:
        print(verdict(d))
        print()
        for line in diff_lines(d, args.changes):
            print(line)
        print()
        for line in usage_lines(d):
            print(line)
    return EXIT_OK if d.identical else EXIT_NOT_OK


def _json(d: Any) -> dict[str, Any]:
    return {"a": d.a, "b": d.b, "identical": d.identical,
            "first_divergence": asdict(d.first) if d.first else None,
            "rows": [{"kind": r.kind, "a_seq": r.a.seq if r.a else None,
                      "b_seq": r.b.seq if r.b else None, "role": r.step[0], "type": r.step[1],
                      "path": r.path} for r in d.rows],
            "roles": [{**asdict(u), "token_delta": u.token_delta, "cost_delta": u.cost_delta}
                      for u in d.roles]}


def add_commands(sub: argparse._SubParsersAction) -> None:
    """Add fork and diff to the `agentos` parser."""
    p = sub.add_parser(
        "fork", help="start a new session from a recorded one's first K events and run the rest "
                     "live (e.g. with a fault: what if the hook had denied here?)",
        description="The new log begins with the parent's events 1..K (checked against the "
                    "parent's hash chain first), then session.forked, then the live run. K must "
                    "be the start of a role's turn (an agent.transition into LEAD, PLAN, WORK or "
                    "REVIEW before a Stop hook denied; LEAD only in the first pass); any other K "
                    "is refused with the valid ones.")
    p.add_argument("target", metavar="ID@K", help="the parent session and the event to fork after, "
                                                  "e.g. s0001@14")
    p.add_argument("--profile", help="profile for the live part (default: the workspace's default)")
    p.add_argument("--faults", metavar="PLAN",
                   help=f"fault preset(s) for the live part, comma-separated ({', '.join(sorted(PRESETS))}), "
                        "or a YAML/JSON plan file")
    p.add_argument("--session", metavar="ID", help="session id for the fork (must be new)")
    p.add_argument("--json", action="store_true", help="print the fork's replay snapshot as JSON instead")
    p.set_defaults(fn=cmd_fork)

    p = sub.add_parser(
        "diff", help="two logs side by side, aligned by step (role + event type; a hook.fired's "
                     "hook point too): the first divergence marked, per-role token and cost deltas",
        description="Compares what the two sessions did (type, actor, payload; wall time and "
                    "retry counts left out; A's session id read as B's), with the engine "
                    "`rerun --verify` uses. Exit 0 when they do the same thing, 1 when they differ.")
    p.add_argument("a", metavar="A", help="a session id, a session directory or a .events.jsonl file")
    p.add_argument("b", metavar="B", help="the other one")
    p.add_argument("--changes", action="store_true", help="show only the steps that differ")
    p.add_argument("--json", action="store_true", help="print the diff as JSON")
    p.add_argument("--strict", action="store_true",
                   help="exit 1 without diffing when a log does not verify (else only warn)")
    p.set_defaults(fn=cmd_diff)

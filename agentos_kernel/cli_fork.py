"""`agentos fork` and `agentos diff`: change history and compare. Thin: parse, call the
library (fork.py, logdiff.py), print.

fork exits like run (0 the fork closed ok, 1 not ok, 2 refused before a session existed:
an unknown parent, a log that does not verify, a K that is not a resume point). diff exits
0 when the two logs do the same thing, 1 when they diverge, 2 on bad input.
"""

from __future__ import annotations

import argparse

from .cli import UsageError, _runtime, report_run
from .errors import Err
from .providers.faults import PRESETS


def cmd_fork(args: argparse.Namespace) -> int:
    from .fork import fork, parse_target  # only this command needs them

    try:
        parent, at = parse_target(args.target)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    rt = _runtime(args)
    result = fork(rt, parent, at, session_id=args.session, faults=args.faults)
    if isinstance(result, Err) and result.error.session_id is None:
        raise UsageError(result.error.message)  # refused: no session was made
    return report_run(rt, result, args.json)[0]


def add_commands(sub: argparse._SubParsersAction) -> None:
    """Add fork and diff to the `agentos` parser."""
    p = sub.add_parser(
        "fork", help="start a new session from a recorded one's first K events and run the rest "
                     "live (e.g. with a fault: what if the hook had denied here?)",
        description="The new log begins with the parent's events 1..K (checked against the "
                    "parent's hash chain first), then session.forked, then the live run. K must "
                    "be the start of a role's turn (an agent.transition into LEAD, PLAN, WORK or "
                    "REVIEW in the first pass); any other K is refused with the valid ones.")
    p.add_argument("target", metavar="ID@K", help="the parent session and the event to fork after, "
                                                  "e.g. s0001@14")
    p.add_argument("--profile", help="profile for the live part (default: the workspace's default)")
    p.add_argument("--faults", metavar="PLAN",
                   help=f"fault preset(s) for the live part, comma-separated ({', '.join(sorted(PRESETS))}), "
                        "or a YAML/JSON plan file")
    p.add_argument("--session", metavar="ID", help="session id for the fork (must be new)")
    p.add_argument("--json", action="store_true", help="print the fork's replay snapshot as JSON instead")
    p.set_defaults(fn=cmd_fork)

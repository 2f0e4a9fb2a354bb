"""`agentos run-scenarios`, `validate` and `init`: the commands about a workspace rather than
one session. Thin: parse, call the library, print."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from ..errors import ContractError
from ..validate import validate
from ..workspace import InitError, create_workspace
from .common import EXIT_NOT_OK, EXIT_OK, UsageError


def cmd_run_scenarios(args: argparse.Namespace) -> int:
    from ..labs.audit.scenarios import load_scenarios, run_scenarios  # only this command needs them

    scenarios = load_scenarios(args.scenarios)
    if args.only:
        wanted = [i for i in args.only.split(",") if i]
        unknown = sorted(set(wanted) - {s.id for s in scenarios})
        if unknown:
            raise UsageError(f"unknown scenario {unknown[0]!r}; scenarios: "
                             f"{', '.join(s.id for s in scenarios)}")
        scenarios = [s for s in scenarios if s.id in wanted]
    try:
        runs = run_scenarios(args.log_dir, scenarios)
    except FileExistsError as exc:
        raise UsageError(str(exc)) from None
    except (OSError, ValueError) as exc:  # LOG_DIR is a file, holds a NUL, is too long ...
        if isinstance(exc, ContractError):
            raise
        raise UsageError(f"{str(args.log_dir)!r}: cannot write the logs there "
                         f"({getattr(exc, 'strerror', None) or exc})") from None
    for r in runs:
        print(f"{r.id}: closed {'ok' if r.ok else 'not ok'} -> {r.log}")
    print(f"\nnext: agentos conform {args.log_dir}")
    return EXIT_OK


def cmd_validate(args: argparse.Namespace) -> int:
    found = validate(Path(args.path) if args.path else args.workspace, args.profile)
    ws, problems = found.workspace, found.problems
    where = "bundled reference workspace" if ws.bundled else str(ws.root)
    for w in found.warnings:
        print(f"warning: {w}")
    for p in problems:
        print(str(p))
    if problems:
        print(f"{len(problems)} problem(s) in {where}", file=sys.stderr)
        return EXIT_NOT_OK
    print(f"ok: every contract in {where} is valid")
    return EXIT_OK


def cmd_init(args: argparse.Namespace) -> int:
    dest = Path(args.dir)
    try:
        copied = create_workspace(dest)
    except InitError as exc:
        raise UsageError(str(exc)) from None
    print(f"created workspace {dest}: agentos.yaml, {', '.join(copied)}")
    print(f"next: cd {dest} && agentos validate && agentos demo")
    return EXIT_OK


def add_commands(sub: Any) -> None:
    """Register run-scenarios, validate and init on the `agentos` subparsers."""
    p = sub.add_parser("run-scenarios",
                       help="run every conformance scenario on this runtime, one log each in LOG_DIR")
    p.add_argument("log_dir", metavar="LOG_DIR", type=Path,
                   help="where to write <scenario-id>/.events.jsonl (must not hold them yet)")
    p.add_argument("--scenarios", type=Path, default=None, metavar="DIR",
                   help="scenario directory (default: the bundled conformance/scenarios)")
    p.add_argument("--only", metavar="IDS", help="run only these scenario ids, comma-separated")
    p.set_defaults(fn=cmd_run_scenarios)

    p = sub.add_parser("validate", help="check every contract file of a workspace (file: field: problem)")
    p.add_argument("path", nargs="?", help="workspace directory (default: as --workspace)")
    p.add_argument("--profile", help="the profile you will run (default: default_profile): its API "
                                     "key variable must be set (and its cassette readable); for "
                                     "the other profiles either is a warning line")
    p.set_defaults(fn=cmd_validate)

    p = sub.add_parser("init", help="create a fresh workspace with the reference contracts")
    p.add_argument("dir", help="directory to create: new or without agentos.yaml and contract dirs; "
                                "not a symlink, not inside a workspace's sessions/")
    p.set_defaults(fn=cmd_init)

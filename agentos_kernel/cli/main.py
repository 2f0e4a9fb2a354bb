"""`agentos`: the command line. Thin: parse, call the library, print.

Exit codes: 0 ok; 1 the session closed not ok, validate found problems, `rerun --verify`
diverged, or `verify` (or `replay`/`events --strict`) found a problem; 2 bad arguments,
config, workspace or unknown session; 130 interrupted.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .. import __version__
from ..errors import ContractError
from ..providers.faults import FaultPlanError
from ..schemas.jsonshape import printable
from ..schemas.textcheck import argv_error
from ..store.events import LogError
from . import audit, conform, export, fork, grade, lab, log, mcp, notebooks, run, store, workspace
from .common import EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE, UsageError

COMMAND_MODULES = (run, log, fork, workspace, mcp, export, store, audit, conform, lab, grade,
                   notebooks)
"""The command modules, in the order `agentos --help` lists their commands: demo, run, rerun;
replay, events, verify; fork, diff; run-scenarios, validate, init; mcp serve; export otel;
store ...; audit; conform; lab ...; grade; notebooks. Each has `add_commands(sub)`."""


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

    for module in COMMAND_MODULES:
        module.add_commands(sub)
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

"""`agentos notebooks DEST`: copy the workbench notebooks out, labs in their student version.

Thin: parse, call `handout.copy_notebooks`, print. Exit 0 written, 2 bad input (nothing written).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

EXIT_OK, EXIT_USAGE = 0, 2


def add_commands(sub: argparse._SubParsersAction) -> None:
    """Add `agentos notebooks` to the `agentos` parser."""
    p = sub.add_parser(
        "notebooks", help="copy the workbench notebooks out; labs as students get them",
        description="Copy the workbench notebooks shipped with this installation to DEST: the "
                    "teaching notebooks as they are, and every lab in its released version "
                    "(solutions replaced by stubs, hidden tests removed, outputs cleared), with its "
                    "starter files; a project lab (no notebook: the Lab 07 capstone) as its "
                    "handout and starter, without its solution/. This is what to hand to "
                    "students. With --instructor, the lab sources instead (model solutions, hidden "
                    "tests, reference solutions, the instructors' guide): keep those where "
                    "students cannot read them.")
    p.add_argument("dest", type=Path, help="the folder to write (created if missing)")
    p.add_argument("--instructor", action="store_true",
                   help="copy the lab sources with solutions and hidden tests (for the instructor)")
    p.add_argument("--force", action="store_true", help="overwrite files that already exist in DEST")
    p.set_defaults(fn=cmd_notebooks)


def cmd_notebooks(args: argparse.Namespace) -> int:
    from ..labs.notebook.handout import copy_notebooks
    from ..labs.notebook.nbgrader_format import LabInputError

    try:
        done = copy_notebooks(args.dest, instructor=args.instructor, force=args.force)
    except LabInputError as exc:
        print(f"agentos: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except OSError as exc:
        print(f"agentos: {args.dest}: {exc.strerror or exc}", file=sys.stderr)
        return EXIT_USAGE
    if done.instructor:
        print(f"wrote {len(done.copied)} files to {done.dest}: the INSTRUCTOR copy (solutions and "
              "hidden tests included); do not hand it to students")
        return EXIT_OK
    hidden = sum(nb.hidden_tests for nb in done.released)
    solutions = sum(nb.solutions for nb in done.released)
    print(f"wrote {len(done.copied)} files and {len(done.released)} released lab notebook(s) to "
          f"{done.dest}: {solutions} solution(s) stubbed, {hidden} hidden test region(s) removed")
    print(f"open them with: jupyter lab {done.dest}")
    return EXIT_OK

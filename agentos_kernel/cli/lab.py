"""`agentos lab check | release | validate`: lab notebooks in nbgrader's format, without nbgrader
(`fetch | submit | collect`: lab_exchange.py).

Thin: parse, call `labcheck` / `release` / `nbgrader_format`, print. Exit codes: check 0 full
marks (written answers aside), 1 points lost, 2 bad input or the notebook could not be run;
release and validate 0 ok, 1 problems found (validate), 2 bad input.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from ..schemas.jsonshape import printable
from .lab_exchange import add_exchange_commands

EXIT_OK, EXIT_FINDING, EXIT_USAGE = 0, 1, 2


def add_commands(sub: argparse._SubParsersAction) -> None:
    """Add `agentos lab ...` to the `agentos` parser."""
    lab = sub.add_parser(
        "lab", help="check, release and validate lab notebooks (nbgrader cell metadata); hand them "
                    "out and collect them",
        description="Lab notebooks use nbgrader's own cell metadata, so the same folder works under "
                    "nbgrader (generate_assignment, autograde) and with these commands without it.")
    cmds = lab.add_subparsers(dest="lab_command", required=True, metavar="LAB_COMMAND")

    p = cmds.add_parser(
        "check", help="run a notebook in a fresh, sandboxed kernel and print its per-test score table",
        description="Run a copy of NOTEBOOK in a fresh kernel of this Python, in the grader's sandbox "
                    "(a temp dir with the files of its folder; no reading the source notebook or anything "
                    "outside it but the system and Python; no network; memory, process and time limits; "
                    "see docs/labs.md), continue past errors, and score each grade cell as nbgrader "
                    "does: full points if it ran without an error and wrote nothing to stderr, else 0. "
                    "Exit 0 full marks (written answers are left to a person), 1 points lost, "
                    "2 bad input, the notebook could not be run, or this machine cannot sandbox it.")
    p.add_argument("notebook", type=Path, help="the notebook to check (a student's, or the instructor's)")
    p.add_argument("--source", type=Path, metavar="SRC",
                   help="the instructor notebook: restore its test and read-only cells by grade_id "
                        "before running (hidden tests run; edited tests do not count), as nbgrader "
                        "autograde does")
    p.add_argument("--timeout", type=int, default=30, metavar="S",
                   help="seconds each cell may run before it is interrupted and scores 0 (default 30, "
                        "nbgrader's default)")
    p.add_argument("--total-timeout", type=int, metavar="S",
                   help="seconds the whole run may take; the cell running then is interrupted and the "
                        "rest score 0 as not run (default 600)")
    p.add_argument("--memory-mb", type=int, metavar="MB",
                   help="memory the kernel may use (address space of each process, and of all together "
                        "where a memory cgroup can be made; default 2048)")
    p.add_argument("--unconfined", action="store_true",
                   help="run even where this machine lacks a layer of the sandbox (no unshare, no "
                        "Landlock): the notebook's code then runs with your rights; the missing layers "
                        "are printed")
    p.add_argument("--json", action="store_true", help="print the scores as JSON instead")
    p.set_defaults(fn=cmd_check)

    p = cmds.add_parser(
        "release", help="write the student version of a lab notebook or folder",
        description="Write the student version of SRC to DEST as nbgrader generate_assignment does: "
                    "solution regions replaced by '# YOUR CODE HERE / raise NotImplementedError()' "
                    "(markdown: 'YOUR ANSWER HERE'), hidden test regions removed, outputs and execution "
                    "counts cleared, nbgrader metadata kept. SRC is a notebook (DEST a .ipynb path or "
                    "a folder) or a lab folder (its top-level notebooks released, other files copied).")
    p.add_argument("src", type=Path, help="instructor notebook or lab folder")
    p.add_argument("dest", type=Path, help="where to write the student version")
    p.add_argument("--force", action="store_true", help="overwrite files that already exist in DEST")
    p.set_defaults(fn=cmd_release)

    p = cmds.add_parser(
        "validate", help="check the nbgrader metadata and markers of lab notebooks",
        description="Report every problem in the nbgrader cell metadata and BEGIN/END markers "
                    "(duplicate grade_id, grade cell without points, unbalanced markers, hidden tests "
                    "outside a grade cell, schema_version not 3, ...), one line each with the fix. "
                    "Exit 0 none, 1 problems found, 2 a file is not a notebook.")
    p.add_argument("notebooks", type=Path, nargs="+", metavar="NOTEBOOK")
    p.set_defaults(fn=cmd_validate)

    add_exchange_commands(cmds)


def _path_error(path: Path, exc: OSError | ValueError) -> str:
    """One line for a path the OS refused (the message names the file the OS named)."""
    where = getattr(exc, "filename", None) or path
    return f"{str(where)!r}: {getattr(exc, 'strerror', None) or exc}"


def _fail(message: str) -> int:
    print(f"agentos: error: {printable(message)}", file=sys.stderr)
    return EXIT_USAGE


def cmd_check(args: argparse.Namespace) -> int:
    from ..labs.notebook.check import check_notebook
    from ..labs.notebook.nbgrader_format import LabInputError

    try:
        limits = {k: v for k, v in (("memory_mb", args.memory_mb), ("wall", args.total_timeout))
                  if v is not None}
        score = check_notebook(args.notebook, source=args.source, timeout=args.timeout,
                               unconfined=args.unconfined, **limits)
    except LabInputError as exc:
        return _fail(str(exc))
    except (OSError, ValueError) as exc:  # a path no file system can hold (too long, a NUL)
        return _fail(_path_error(args.notebook, exc))
    except RuntimeError as exc:  # the kernel would not start (nbclient/jupyter_client)
        return _fail(f"{args.notebook}: could not run it in a kernel: {exc}")
    if score.unprotected:
        print(f"agentos: warning: the notebook ran without: {printable('; '.join(score.unprotected))}",
              file=sys.stderr)
    if args.json:
        print(json.dumps(score.to_dict(), indent=2, ensure_ascii=False))
    else:
        for note in score.notes:
            print(f"note: {note}")
        print(printable(score.sandbox_line()))
        for attempt in score.attempts:
            print(f"sandbox: {printable(attempt)}")
        for line in score.table_lines():
            print(line)
        print(score.total_line())
    return EXIT_FINDING if score.points_lost else EXIT_OK


def cmd_release(args: argparse.Namespace) -> int:
    from ..labs.notebook.nbgrader_format import LabInputError
    from ..labs.notebook.release import release

    try:
        report = release(args.src, args.dest, force=args.force)
    except LabInputError as exc:
        return _fail(str(exc))
    except (OSError, ValueError) as exc:
        return _fail(_path_error(args.src, exc))
    for nb in report.notebooks:
        print(f"wrote {nb.dest}: {nb.solutions} solution(s) stripped, "
              f"{nb.hidden_tests} hidden test region(s) removed, outputs cleared")
    for path in report.copied:
        print(f"copied {path}")
    if report.left_behind:  # starter files a notebook reads would be missing in the handout
        names = ", ".join(p.name for p in report.left_behind)
        print(f"note: not copied from {Path(args.src).parent}: {names}; to hand them out too, "
              f"release the folder: agentos lab release {Path(args.src).parent} DEST")
    return EXIT_OK


def cmd_validate(args: argparse.Namespace) -> int:
    from ..labs.notebook.nbgrader_format import LabInputError, has_grade_id, read_notebook, validate_notebook

    found = 0
    for path in args.notebooks:
        try:
            nb = read_notebook(path)
        except LabInputError as exc:
            return _fail(str(exc))
        except (OSError, ValueError) as exc:
            return _fail(_path_error(path, exc))
        problems = validate_notebook(nb, path)
        if not any(has_grade_id(c) for c in nb.cells):
            print(f"{path}: no nbgrader cells; fix: mark the answer and test cells (see docs/labs.md)")
            found += 1
        for p in problems:
            print(p)
        found += len(problems)
        if not problems and any(has_grade_id(c) for c in nb.cells):
            print(f"ok: {path}")
    return EXIT_FINDING if found else EXIT_OK

"""`agentos lab check | grade | release | validate`: lab notebooks in nbgrader's format, without
nbgrader (`fetch | submit | collect`, the exchange: lab_exchange.py).

Thin: parse, call `check` / `batch` + `gradebook` / `release` / `nbgrader_format`, print. Exit
codes: check 0 full marks (written answers aside), 1 points lost, 2 bad input or the notebook
could not be run; grade 0 every student has a row, 2 bad input, 130 interrupted; release and
validate 0 ok, 1 problems found (validate), 2 bad input.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from ..schemas.jsonshape import printable
from .lab_exchange import add_exchange_commands

EXIT_OK, EXIT_FINDING, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130


def add_commands(sub: argparse._SubParsersAction) -> None:
    """Add `agentos lab ...` to the `agentos` parser."""
    lab = sub.add_parser(
        "lab", help="check, grade, release and validate lab notebooks (nbgrader cell metadata); "
                    "hand them out and collect them",
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
                    "Without --source (a self-check) the last line counts the visible points and says "
                    "how many more points hidden tests decide when graded. "
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
        "grade", help="grade a whole class's submissions of a lab: gradebook, LMS exports, feedback",
        description="Grade every submission of the lab SRC in nbgrader's layout, "
                    "SUBMITTED/<student>/<lab>/<lab>.ipynb (<lab>: SRC's name without .ipynb), each in "
                    "a fresh kernel in the grader's sandbox as `lab check --source` runs it (hidden tests "
                    "restored, edited tests undone). Writes to OUT: gradebook.csv (a row per student, a "
                    "column per grade_id, total, max), canvas.csv and gradescope.csv (LMS imports), "
                    "summary.csv (per criterion, how many students lost it), feedback/<student>.html. A "
                    "missing, unreadable, crashing, hanging or tampered submission is a row with its "
                    "reason. Ctrl-C keeps the rows already graded. Exit 0 when every student has a row "
                    "(whatever the marks), 2 bad input or no sandbox, 130 interrupted. See docs/labs.md.")
    p.add_argument("submitted", type=Path, metavar="SUBMITTED",
                   help="nbgrader's submitted/ folder: one folder per student")
    p.add_argument("--source", type=Path, metavar="SRC", required=True,
                   help="the instructor notebook of the lab (solutions and hidden tests)")
    p.add_argument("--out", type=Path, metavar="OUT",
                   help="folder for the gradebook and the exports (default: grades/<lab>)")
    p.add_argument("--jobs", type=int, metavar="N", help="submissions graded at once (default: one per core)")
    p.add_argument("--timeout", type=int, default=30, metavar="S",
                   help="seconds each cell may run before it is interrupted and scores 0 (default 30)")
    p.add_argument("--total-timeout", type=int, metavar="S",
                   help="seconds each notebook may take in all (default 600)")
    p.add_argument("--memory-mb", type=int, metavar="MB", help="memory each kernel may use (default 2048)")
    p.add_argument("--unconfined", action="store_true",
                   help="run even where this machine lacks a layer of the sandbox: students' code then "
                        "runs with your rights")
    p.add_argument("--force", action="store_true", help="overwrite the gradebook of an earlier run in OUT")
    p.add_argument("--fork-server", action=argparse.BooleanOptionalAction, default=True,
                   help="fork each student's kernel, in its own sandbox, from one process that imported "
                        "ipykernel and agentos_kernel once (default); --no-fork-server starts each "
                        "from scratch")
    p.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                   help="a progress bar on stderr (default: a bar on a terminal, else a line per student)")
    p.set_defaults(fn=cmd_grade)

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


def cmd_grade(args: argparse.Namespace) -> int:
    from ..labs.notebook.batch import (
        GRADED,
        Limits,
        StudentGrade,
        find_students,
        grade_submissions,
        load_criteria,
        require_sandbox,
    )
    from ..labs.notebook.gradebook import GRADEBOOK, GradebookWriter, Progress, summary_rows, write_reports
    from ..labs.notebook.nbgrader_format import LabInputError
    from ..labs.sandbox.forkserver import ForkServerError

    if args.jobs is not None and args.jobs < 1:
        return _fail("--jobs must be 1 or more")
    limits = Limits(**{k: v for k, v in (("timeout", args.timeout), ("wall", args.total_timeout),
                                         ("memory_mb", args.memory_mb)) if v is not None},
                    unconfined=args.unconfined, fork_server=args.fork_server)
    try:
        lab = load_criteria(args.source)
        students = find_students(args.submitted)
        require_sandbox(args.submitted, limits)
        out = args.out if args.out is not None else Path("grades") / lab.name
        if (out / GRADEBOOK).exists() and not args.force:
            return _fail(f"{out / GRADEBOOK}: already exists; pass --force to grade again over it, "
                         "or --out another folder")
        out.mkdir(parents=True, exist_ok=True)
        writer = GradebookWriter(out / GRADEBOOK, lab)
    except LabInputError as exc:
        return _fail(str(exc))
    except (OSError, ValueError) as exc:
        return _fail(_path_error(args.submitted, exc))
    show = args.progress if args.progress is not None else True
    progress = Progress(sys.stderr, len(students)) if show else None
    done: list[StudentGrade] = []

    def landed(grade: StudentGrade) -> None:
        done.append(grade)
        writer.add(grade)
        if progress:
            progress(grade, lab.max_total)

    code = EXIT_OK
    try:
        grade_submissions(lab, args.submitted, students, jobs=args.jobs, limits=limits, on_graded=landed)
    except KeyboardInterrupt:
        code = EXIT_INTERRUPTED
    except ForkServerError as exc:  # before any student ran: this machine, not the class
        code = _fail(str(exc))
    finally:
        writer.close()
        if progress:
            progress.stop()
        written = write_reports(out, lab, done)
    if code == EXIT_USAGE:
        return code
    if code == EXIT_INTERRUPTED:
        print(f"interrupted: {len(done)} of {len(students)} students graded; their rows are in {out}",
              file=sys.stderr)
    for g in sorted(done, key=lambda g: g.student):
        if g.status != GRADED or g.reason:
            print(printable(f"{g.student}: {g.status}" + (f": {g.reason}" if g.reason else "")))
    for row in summary_rows(lab, done)[1:]:
        print(f"{row[0]}: {row[3]} of {row[2]} students lost it ({row[1]} points)"
              + (f"; {row[5]} to grade by hand" if row[5] != "0" else ""))
    print(f"wrote {out / GRADEBOOK} and {len(written) - 1} more files in {out}")
    return code

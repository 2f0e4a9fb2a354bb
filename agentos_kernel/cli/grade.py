"""`agentos grade DIR`: grade every submission folder in DIR on the spec's Lab Rubric.

Exit codes: 0 when every submission was graded, whatever the marks (a failed criterion is the
grade, not an error: a class with one failing student must not look like a grading run that
broke, and scripts that collect the CSV must not stop on it); 2 for bad input (DIR missing or
holding no submission folders, a bad option) or when grading cannot run here (pytest missing).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

from ..schemas.jsonshape import printable

EXIT_OK, EXIT_USAGE = 0, 2


def _positive(text: str) -> float:
    value = float(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be more than 0, got {text}")
    return value


def add_commands(sub: argparse._SubParsersAction) -> None:
    """Add `agentos grade` (heavy modules load only when it runs)."""
    p = sub.add_parser(
        "grade", help="grade every submission folder in DIR on the spec's Lab Rubric (runs each "
                      "submission's tests in a sandbox)",
        description="Grade every submission folder in DIR (one folder per student, e.g. "
                    "assignments/lab-07/20230001/) on the Lab Rubric: runtime boundary, contract "
                    "discipline, observability, safety, determinism, documentation. Prints a table and "
                    "the reason for each failure; exit 0 when grading completed, 2 for bad input. "
                    "Criteria: docs/grading.md.")
    p.add_argument("dir", type=Path, help="folder holding one folder per student")
    p.add_argument("--csv", type=Path, metavar="FILE", help="also write the grades as CSV")
    p.add_argument("--html", type=Path, metavar="FILE",
                   help="also write an HTML report with per-criterion feedback")
    p.add_argument("--json", action="store_true", help="print every grade with its details as JSON instead")
    p.add_argument("--jobs", type=int, metavar="N", help="submissions graded at once (default: one per core)")
    p.add_argument("--timeout", type=_positive, metavar="S",
                   help="seconds each test run may take before it is killed (default: 60)")
    p.add_argument("--logs", metavar="postgres:ENV",
                   help="read each student's sessions/example log from this PostgreSQL store (the "
                        "role named like the student's folder; connect as an instructor role) "
                        "instead of the folder: docs/class-server.md")
    p.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                   help="progress bar on stderr (default: only when stderr is a terminal)")
    p.set_defaults(fn=cmd_grade)


def _target_problem(target: Path) -> str | None:
    """Why grades cannot be written to `target`, else None. An event log is never a target:
    logs are append-only evidence."""
    from ..store.events import LOG_NAME

    try:
        if target.name == LOG_NAME:
            return f"is an event log ({LOG_NAME}); write the grades to another file"
        if target.is_dir():
            return "is a directory; give a file name"
        if not target.parent.is_dir():
            return f"its folder {target.parent} does not exist"
    except (OSError, ValueError) as exc:
        return f"cannot be written ({getattr(exc, 'strerror', None) or exc})"
    return None


def _store_logs(target: str) -> Callable[[str], bytes]:
    """Student -> the bytes of their `example` session in the PostgreSQL store `target`."""
    from ..store.factory import pg_store_of

    if "/" in target:
        raise ValueError(f"{target}: name the store only (postgres:ENV): each student's role is "
                         "the name of their folder")
    store = pg_store_of(target)

    def example_of(student: str) -> bytes:
        own = type(store)(store.dsn, owner=student, name=store.name)
        try:
            return b"".join(own.lines("example"))
        except ValueError as exc:  # a folder name that is no role name
            raise LookupError(f"{target}: {exc}") from None

    return example_of


def cmd_grade(args: argparse.Namespace) -> int:
    """Run the grading; print; write the requested files."""
    from ..labs.rubric.grade import DEFAULT_TIMEOUT, GradingUnavailable, grade_all
    from ..labs.rubric.report import Progress, failures, table, to_html, to_json, write_csv
    from ..labs.rubric.submission import NoSubmissions

    if args.jobs is not None and args.jobs < 1:
        print("agentos: error: --jobs must be 1 or more", file=sys.stderr)
        return EXIT_USAGE
    for target in (args.csv, args.html):  # before grading: a bad target must not waste a run
        problem = target and _target_problem(target)
        if problem:
            print(f"agentos: error: {printable(str(target))}: {problem}", file=sys.stderr)
            return EXIT_USAGE
    try:
        logs = _store_logs(args.logs) if args.logs is not None else None
    except ValueError as exc:
        print(f"agentos: error: --logs {printable(str(exc))}", file=sys.stderr)
        return EXIT_USAGE
    show = args.progress if args.progress is not None else sys.stderr.isatty()
    progress = Progress(sys.stderr) if show else None
    try:
        grades = grade_all(args.dir, jobs=args.jobs, timeout=args.timeout or DEFAULT_TIMEOUT,
                           progress=progress, logs=logs)
    except (NoSubmissions, GradingUnavailable) as exc:
        print(f"agentos: error: {printable(str(exc))}", file=sys.stderr)
        return EXIT_USAGE
    except (OSError, ValueError) as exc:  # a path no file system can hold (too long, a NUL)
        print(f"agentos: error: {str(args.dir)!r}: {getattr(exc, 'strerror', None) or exc}",
              file=sys.stderr)
        return EXIT_USAGE
    for target, write in ((args.csv, lambda f: write_csv(grades, f)),
                          (args.html, lambda f: f.write(to_html(grades, f"Grades: {args.dir}")))):
        if target is not None:
            with target.open("w", encoding="utf-8", newline="") as f:
                write(f)
    if args.json:
        print(to_json(grades))
        return EXIT_OK
    for line in table(grades):
        print(line)
    reasons = failures(grades)
    if reasons:
        print()
        print("failures:")
        for line in reasons:
            print(f"  {line}")
    missing = sorted({p for g in grades for p in g.unprotected})
    if missing:
        print()
        print("sandbox protections missing on this machine: " + "; ".join(missing))
    for label, target in (("csv", args.csv), ("html", args.html)):
        if target is not None:
            print(f"{label}: {target}")
    return EXIT_OK

"""`grade_submissions`: one lab for a whole class, in nbgrader's layout.

Every student's notebook is `SUBMITTED/<student>/<lab>/<lab>.ipynb` (nbgrader's
`submitted/{student_id}/{assignment_id}/{notebook_id}.ipynb`, the lab named after the
instructor notebook) and goes through `check_notebook` with the source: hidden tests
restored, the kernel in the grader's sandbox (box.py), a fresh kernel each. A submission that
is missing, not a notebook, cannot be run, crashes, times out or was tampered with is a
`StudentGrade` with the reason, never an exception out of the batch. Submissions are graded
`jobs` at a time in threads (each waits on its own kernel process); `on_graded` sees each
grade as it lands, so rows are written as they come and an interruption loses none of them.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path

from ...store.redaction import redact
from ..sandbox import run as sandbox
from ..sandbox.forkserver import ForkServer
from . import nbgrader_format as fmt
from .check import DEFAULT_MEMORY_MB, DEFAULT_TIMEOUT, DEFAULT_WALL, SandboxUnavailable, check_notebook
from .nbgrader_format import LabInputError, has_grade_id, meta
from .release import instructor_cells, load_lab, student_version
from .run import KernelStartError
from .score import MANUAL, NOT_RUN, TIMEOUT, LabScore, ScoreRow
from .score import MISSING as CELL_MISSING

# StudentGrade.status: only "graded" carries scores; the others are 0 with the reason.
GRADED, MISSING, INVALID, ERROR = "graded", "missing", "invalid", "error"


@dataclass(frozen=True)
class Criterion:
    """One grade cell of the instructor notebook: a column of the gradebook."""

    grade_id: str
    """The cell's grade_id."""
    points: float
    """Its points."""


@dataclass(frozen=True)
class StudentGrade:
    """One student's grade for the lab (every text redacted like grader feedback)."""

    student: str
    """The student's folder name (nbgrader's student id)."""
    status: str
    """graded; missing (no notebook); invalid (not a readable notebook, or nbgrader metadata
    broken); error (its kernel would not start, or the grader failed on it)."""
    reason: str
    """Why points were not scored as usual ('' when nothing went wrong): the file missing, the
    kernel dead, a cell timed out, cells restored from the source (tampering)."""
    rows: tuple[ScoreRow, ...] = ()
    """The score of each grade cell (empty unless graded)."""
    seconds: float = 0.0
    """How long this submission took."""
    notes: tuple[str, ...] = field(default=())
    """What was changed before running (cells restored from the source, ids dropped)."""

    def points(self, grade_id: str) -> float | None:
        """Points earned on one criterion: 0 when not graded, None when left to a person."""
        row = next((r for r in self.rows if r.grade_id == grade_id), None)
        return 0.0 if row is None else row.points

    @property
    def total(self) -> float:
        """Points earned by the autograded cells."""
        return sum(r.points for r in self.rows if r.points is not None)


@dataclass(frozen=True)
class Lab:
    """What is graded: the instructor notebook and its criteria."""

    source: Path
    """The instructor notebook."""
    criteria: tuple[Criterion, ...]
    """Every grade cell (tests and hand-graded answers), in notebook order."""
    locked: dict[str, str] = field(default_factory=dict)
    """grade_id -> nbgrader checksum of each locked cell as released (hidden tests removed):
    a submitted cell that differs was edited (the grader restores it anyway)."""

    @property
    def name(self) -> str:
        """The lab's id: the source notebook's name without .ipynb (nbgrader's assignment id)."""
        return self.source.stem

    @property
    def max_total(self) -> float:
        """The lab's points."""
        return sum(c.points for c in self.criteria)

    def submission(self, submitted: Path, student: str) -> Path:
        """Where nbgrader puts a student's notebook of this lab."""
        return submitted / student / self.name / f"{self.name}.ipynb"


def load_criteria(source: Path | str) -> Lab:
    """The lab of an instructor notebook; LabInputError when it has no grade cells."""
    source = Path(source)
    nb = instructor_cells(load_lab(source))[0]
    criteria = tuple(Criterion(meta(c)["grade_id"], float(meta(c)["points"]))
                     for c in nb.cells if has_grade_id(c) and (fmt.is_grade(c) or fmt.is_task(c)))
    if not criteria:
        raise LabInputError(f"{source}: no grade cells (nbgrader 'grade': true with points); "
                            "give the instructor notebook of the lab")
    released = student_version(load_lab(source))[0]
    locked = {meta(c)["grade_id"]: meta(c)["checksum"] for c in released.cells
              if has_grade_id(c) and fmt.is_locked(c) and "checksum" in meta(c)}
    return Lab(source, criteria, locked)


def find_students(submitted: Path | str) -> list[str]:
    """The student folders of SUBMITTED, sorted; LabInputError when there is none."""
    submitted = Path(submitted)
    if not submitted.is_dir():
        raise LabInputError(f"{submitted}: no such folder; give nbgrader's submitted/ folder "
                            "(submitted/<student>/<lab>/<lab>.ipynb)")
    students = sorted(p.name for p in submitted.iterdir() if p.is_dir() and not p.name.startswith("."))
    if not students:
        raise LabInputError(f"{submitted}: no student folders; expected "
                            "submitted/<student>/<lab>/<lab>.ipynb")
    return students


@dataclass(frozen=True)
class Limits:
    """What each submission's run may take (check_notebook's limits)."""

    timeout: int = DEFAULT_TIMEOUT
    """Seconds per cell."""
    wall: float = DEFAULT_WALL
    """Seconds per notebook."""
    memory_mb: int = DEFAULT_MEMORY_MB
    """The kernel's memory."""
    unconfined: bool = False
    """Run where the sandbox lacks layers (they are reported)."""
    fork_server: bool = True
    """Fork each kernel from one template process a batch (forkserver.py) instead of
    starting each from nothing: the same sandbox, a fraction of the CPU."""


def grade_student(lab: Lab, submitted: Path, student: str, limits: Limits = Limits(),
                  cancel: threading.Event | None = None,
                  forkserver: ForkServer | None = None) -> StudentGrade:
    """Grade one student's submission; every failure is a StudentGrade with its reason."""
    start = time.monotonic()
    path = lab.submission(Path(submitted), student)
    if not path.is_file():
        return _redacted(StudentGrade(student, MISSING, f"no {path.relative_to(submitted)}", (),
                                      time.monotonic() - start))
    try:
        for _ in range(2):  # once more if the fork server's template died under this kernel
            restarts = forkserver.restarts if forkserver else 0
            score = check_notebook(path, source=lab.source, timeout=limits.timeout, wall=limits.wall,
                                   memory_mb=limits.memory_mb, unconfined=limits.unconfined, cancel=cancel,
                                   forkserver=forkserver)
            if forkserver is None or not forkserver.lost_since(restarts):
                break
    except SandboxUnavailable:
        raise  # the machine, not the student: the whole batch stops before it starts
    except LabInputError as exc:
        status = ERROR if isinstance(exc, KernelStartError) else INVALID
        return _redacted(StudentGrade(student, status, _short(str(exc), path), (), time.monotonic() - start))
    except Exception as exc:  # a grader bug or an input nobody foresaw: this row, not the batch
        return _redacted(StudentGrade(student, ERROR, f"the grader could not run it ({type(exc).__name__}: "
                                      f"{exc}); please report it with the submission", (),
                                      time.monotonic() - start))
    return _redacted(StudentGrade(student, GRADED, _reason(score, _edited(path, lab)), score.rows,
                                  time.monotonic() - start, score.notes))


def _edited(path: Path, lab: Lab) -> list[str]:
    """grade_ids of the locked cells (tests, read-only text) the student changed."""
    try:
        nb = fmt.read_notebook(path)
    except LabInputError:
        return []
    edited = []
    for c in nb.cells:
        gid = meta(c).get("grade_id") if has_grade_id(c) else None
        if gid not in lab.locked:
            continue
        try:
            same = fmt.compute_checksum(c) == lab.locked[gid]
        except (KeyError, TypeError, ValueError, AttributeError):  # metadata mangled too
            same = False
        if not same:
            edited.append(gid)
    return edited


def _short(message: str, path: Path) -> str:
    """The error's first line, without the path the row already names."""
    first = message.splitlines()[0] if message else message
    return first.replace(f"{path}: ", "", 1)


def _reason(score: LabScore, edited: list[str]) -> str:
    """What went wrong besides wrong answers: a dead kernel, timeouts, tampering."""
    parts = []
    timed_out = [r.grade_id for r in score.rows if r.status == TIMEOUT]
    if timed_out:
        parts.append(f"timed out: {', '.join(timed_out)}")
    not_run = sorted({r.message for r in score.rows if r.status == NOT_RUN})
    parts += [f"not run: {m}" for m in not_run]
    # Cells with hidden tests are always restored; only a change to what was released counts.
    tampered = [f"{gid} edited" for gid in edited]
    tampered += [n for n in score.notes if any(k in n for k in ("points restored", "type restored",
                                                                 "not in the source", "second cell"))]
    tampered += [f"{r.grade_id} deleted" for r in score.rows if r.status == CELL_MISSING]
    if tampered:
        parts.append("tampered (the grader used the source's cells): " + "; ".join(tampered))
    manual = [r.grade_id for r in score.rows if r.status == MANUAL]
    if manual:
        parts.append(f"to grade by hand: {', '.join(manual)}")
    return "; ".join(parts)


def _redacted(grade: StudentGrade) -> StudentGrade:
    """Feedback quotes the student's notebook (an error message, a printed value): every text
    goes out redacted like a session log, as `agentos grade`'s feedback does."""
    rows = tuple(ScoreRow(r.grade_id, r.cell, r.points, r.max_points, r.status, redact(r.message))
                 for r in grade.rows)
    return StudentGrade(redact(grade.student), grade.status, redact(grade.reason), rows, grade.seconds,
                        tuple(redact(list(grade.notes))))


def default_jobs() -> int:
    """One submission per core this process may use."""
    return max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1)


def require_sandbox(submitted: Path, limits: Limits) -> None:
    """SandboxUnavailable when this machine cannot confine the kernels and `limits` does not
    accept running them unconfined: asked once, before anything is run or written."""
    missing = sandbox.probe().missing
    if missing and not limits.unconfined:
        raise SandboxUnavailable(f"{submitted}: cannot sandbox the notebooks' kernels on this machine ("
                                 + "; ".join(missing) + "), so students' code would run with your rights; "
                                 "to run it anyway, pass --unconfined")


def grade_submissions(lab: Lab, submitted: Path | str, students: list[str], *, jobs: int | None = None,
                      limits: Limits = Limits(),
                      on_graded: Callable[[StudentGrade], None] = lambda g: None) -> list[StudentGrade]:
    """Grade `students`' submissions `jobs` at a time; `on_graded` is called (in this thread) as
    each lands. On KeyboardInterrupt the runs under way stop before their next cell, are
    dropped, and the interrupt goes on up once they have (the grades that landed were passed to
    `on_graded`). SandboxUnavailable before any student is run when this machine cannot
    sandbox the kernels and `limits.unconfined` is not set."""
    submitted = Path(submitted)
    require_sandbox(submitted, limits)
    with ForkServer() if limits.fork_server else contextlib.nullcontext() as server:
        return _grade_all(lab, submitted, students, jobs, limits, on_graded, server)


def _grade_all(lab: Lab, submitted: Path, students: list[str], jobs: int | None, limits: Limits,
               on_graded: Callable[[StudentGrade], None], server: ForkServer | None) -> list[StudentGrade]:
    cancel = threading.Event()
    graded: list[StudentGrade] = []
    pool = ThreadPoolExecutor(max_workers=jobs or default_jobs(), thread_name_prefix="lab-grade")
    pending: set[Future[StudentGrade]] = {
        pool.submit(grade_student, lab, submitted, s, limits, cancel, server) for s in students}
    try:
        while pending:
            done, pending = wait(pending, return_when=FIRST_COMPLETED)
            for fut in done:  # every grade that landed is kept before an error goes up
                if fut.exception() is None:
                    graded.append(fut.result())
                    on_graded(graded[-1])
            failed = [f.exception() for f in done if f.exception() is not None]
            if failed:
                raise failed[0]  # type: ignore[misc]
    except BaseException:
        cancel.set()  # the kernels stop at their next cell; no half-graded row is kept
        pool.shutdown(wait=True, cancel_futures=True)
        raise
    pool.shutdown(wait=True)
    return sorted(graded, key=lambda g: g.student)


"""Grade submission folders on the Lab Rubric: one folder -> SubmissionGrade; a directory of
them -> a list, graded in parallel (one worker per core by default; the heavy part, the test
runs, are subprocesses), with a callback after each so a progress bar can follow.

Per submission: the static criteria read the folder; its test suite runs in a sandbox twice,
each time in a fresh copy with a different hash seed (run 1 serves safety and determinism,
run 2 only determinism, and is skipped when run 1 already decides determinism). A criterion
that raises is failed with the error as its reason, and grading goes on.
"""

from __future__ import annotations

import importlib.util
import os
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path

from ...store.redaction import redact
from ..sandbox import run as sandbox
from . import criteria as rubric
from .model import CRITERIA, CriterionResult, SubmissionGrade
from .observability import LogSource
from .submission import find_submissions, language
from .suite import find_tests
from .testrun import SuiteRun, run_suite

DEFAULT_TIMEOUT = 60.0
INSTALL_HINT = "pip install 'agentos-kernel[labs]'"


class GradingUnavailable(RuntimeError):
    """Grading cannot run on this machine (e.g. pytest is missing); the message says the fix."""


def default_jobs() -> int:
    """One worker per core this process may use."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:
        return max(1, os.cpu_count() or 1)


def require_pytest() -> None:
    """GradingUnavailable naming the install command when pytest is not importable."""
    if importlib.util.find_spec("pytest") is None:
        raise GradingUnavailable("pytest is not installed, and grading runs each submission's pytest "
                                 f"suite: {INSTALL_HINT}")


def _guarded(key: str, fn: Callable[[], CriterionResult]) -> CriterionResult:
    try:
        return fn()
    except Exception as exc:  # a grader bug or an input nobody foresaw: fail this criterion, say so
        return CriterionResult(key, False, f"the grader could not check this ({type(exc).__name__}: {exc}); "
                               "please report it with the submission")


def grade_submission(path: Path, *, timeout: float = DEFAULT_TIMEOUT,
                     logs: LogSource | None = None) -> SubmissionGrade:
    """Grade one submission folder on every criterion (`logs`: where its example log is read
    from when not from the folder, e.g. the class's PostgreSQL store)."""
    start = time.monotonic()
    path = Path(path)
    lang = language(path)
    tests, parse_problems = find_tests(path, lang)
    with tempfile.TemporaryDirectory(prefix="agentos-grade-") as tmp:
        work = Path(tmp)
        run1 = run_suite(path, work, "run1", lang, timeout=timeout, seed=1)
        run2: SuiteRun | None = None
        e2e_passed = any(run1.outcomes.get(t.key) == "passed" for t in tests if t.e2e)
        if run1.problem is None and run1.logs and e2e_passed:
            run2 = run_suite(path, work, "run2", lang, timeout=timeout, seed=2)
        checks: dict[str, Callable[[], CriterionResult]] = {
            "runtime_boundary": lambda: rubric.runtime_boundary(path, lang),
            "contract_discipline": lambda: rubric.contract_discipline(path),
            "observability": lambda: rubric.observability(path, logs),
            "safety": lambda: rubric.safety(tests, run1),
            "determinism": lambda: rubric.determinism(tests, run1, run2),
            "documentation": lambda: rubric.documentation(path),
        }
        results = [_guarded(c.key, checks[c.key]) for c in CRITERIA]
    if parse_problems:
        results = [_with_notes(r, parse_problems) if r.criterion == "safety" else r for r in results]
    layers = [layer for r in (run1, run2) if r and r.run for layer in r.run.layers]
    held = tuple(dict.fromkeys(f"{x.name}: {x.what}" for x in layers if x.ok))
    lacking = [f"{x.name}: {x.what}" for x in layers if not x.ok]
    if not layers:  # nothing ran; still say what this machine could not have enforced
        lacking += list(sandbox.probe().missing)
    return redacted(SubmissionGrade(path.name, str(path), lang, tuple(results), held,
                                    tuple(dict.fromkeys(lacking)), time.monotonic() - start))


def redacted(grade: SubmissionGrade) -> SubmissionGrade:
    """The grade with every text redacted like a session log (the secret shapes): feedback
    quotes the submission (a README heading, a schema id, a log's field), and every report
    (the table, CSV, HTML, JSON, the DataFrame) is made from this."""
    results = tuple(CriterionResult(r.criterion, r.passed, redact(r.reason), tuple(redact(list(r.details))))
                    for r in grade.results)
    return SubmissionGrade(redact(grade.student), redact(grade.path), grade.language, results,
                           tuple(redact(list(grade.protections))),
                           tuple(redact(list(grade.unprotected))), grade.seconds)


def _with_notes(r: CriterionResult, notes: list[str]) -> CriterionResult:
    return CriterionResult(r.criterion, r.passed, r.reason, (*r.details, *notes))


def grade_all(directory: Path, *, jobs: int | None = None, timeout: float = DEFAULT_TIMEOUT,
              progress: Callable[[int, int, SubmissionGrade], None] | None = None,
              logs: LogSource | None = None) -> list[SubmissionGrade]:
    """Grade every submission folder in `directory` (sorted by student). NoSubmissions when there
    is none; GradingUnavailable when pytest is missing."""
    folders = find_submissions(directory)
    if any(language(f) == "python" for f in folders):
        require_pytest()
    sandbox.probe()  # once, before the workers start
    grades: list[SubmissionGrade] = []
    with ThreadPoolExecutor(max_workers=jobs or default_jobs(), thread_name_prefix="grade") as pool:
        futures = [pool.submit(grade_submission, f, timeout=timeout, logs=logs) for f in folders]
        for done, fut in enumerate(as_completed(futures), 1):
            grade = fut.result()
            grades.append(grade)
            if progress:
                progress(done, len(folders), grade)
    return sorted(grades, key=lambda g: g.student)

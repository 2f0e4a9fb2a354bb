"""Shared by the lab tests: the fixture lab, its submissions, and cached checks of them.

The fixture lab (fixtures/lab-00-fixture/fixture.ipynb, written by fixtures/make_fixtures.py):
a read-only setup cell, solution cells `add` and `total`, test cells `test_add` (1 point),
`test_total` (2 points, with hidden tests) and `test_add_floats` (1 point), and a written
answer `explain` (1 point, graded by hand). Checks start a kernel (about 1 s each), so each
(student, source?) pair is run once per test session and shared by the test modules.
"""

from __future__ import annotations

import shutil
from functools import cache
from pathlib import Path
from typing import Any

import nbformat

from agentos_kernel.labs.notebook.check import check_notebook
from agentos_kernel.labs.notebook.score import LabScore

FIXTURES = Path(__file__).resolve().parent / "fixtures"
LAB = FIXTURES / "lab-00-fixture"
SOURCE = LAB / "fixture.ipynb"
SUBMISSIONS = FIXTURES / "submissions"
STUDENTS = ("all_correct", "partly_correct", "raises", "hangs", "tampered")
TIMEOUT = 2
"""Per-cell timeout of the checks (the fixture's honest cells take milliseconds)."""

# grade_id -> points the notebook earns (None: a written answer for a person to grade).
EXPECTED: dict[tuple[str, bool], dict[str, float | None]] = {
    ("all_correct", False): {"test_add": 1, "test_total": 2, "explain": None, "test_add_floats": 1},
    ("all_correct", True): {"test_add": 1, "test_total": 2, "explain": None, "test_add_floats": 1},
    # the hidden tests catch the negative numbers only with the source; no written answer
    ("partly_correct", False): {"test_add": 1, "test_total": 2, "explain": 0, "test_add_floats": 1},
    ("partly_correct", True): {"test_add": 1, "test_total": 0, "explain": 0, "test_add_floats": 1},
    ("raises", False): {"test_add": 0, "test_total": 0, "explain": None, "test_add_floats": 0},
    ("raises", True): {"test_add": 0, "test_total": 0, "explain": None, "test_add_floats": 0},
    ("hangs", False): {"test_add": 1, "test_total": 0, "explain": None, "test_add_floats": 1},
    ("hangs", True): {"test_add": 1, "test_total": 0, "explain": None, "test_add_floats": 1},
    # the edited test (and its points, 10) count only without the source
    ("tampered", False): {"test_add": 1, "test_total": 2, "explain": None, "test_add_floats": 10},
    ("tampered", True): {"test_add": 1, "test_total": 2, "explain": None, "test_add_floats": 0},
}


def submission(student: str) -> Path:
    return SUBMISSIONS / student / "fixture.ipynb"


@cache
def checked(student: str, with_source: bool) -> LabScore:
    """`check_notebook` of one fixture submission (cached for the session)."""
    return check_notebook(submission(student), source=SOURCE if with_source else None, timeout=TIMEOUT)


def points(score: LabScore) -> dict[str, float | None]:
    return {r.grade_id: r.points for r in score.rows}


def read(path: Path) -> Any:
    return nbformat.read(path, as_version=4)


def cell(nb: Any, grade_id: str) -> Any:
    """The cell with this grade_id."""
    (found,) = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == grade_id]
    return found


def lab_copy(dest: Path, edit: Any = None) -> Path:
    """Copy the fixture lab folder to `dest`; `edit(nb)` changes its notebook. Returns the notebook."""
    shutil.copytree(LAB, dest)
    path = dest / SOURCE.name
    if edit is not None:
        nb = read(path)
        edit(nb)
        nbformat.write(nb, path)
    return path


def submission_copy(student: str, dest: Path, edit: Any = None) -> Path:
    """Copy a fixture submission folder to `dest`; `edit(nb)` changes its notebook."""
    shutil.copytree(SUBMISSIONS / student, dest)
    path = dest / SOURCE.name
    if edit is not None:
        nb = read(path)
        edit(nb)
        nbformat.write(nb, path)
    return path

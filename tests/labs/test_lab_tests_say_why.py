"""The labs' own tests, tested: every lab under notebooks/labs/ (found, not listed, so a lab
added later is covered too), released as `agentos lab release` writes it and graded with its
source as `agentos lab grade` does, fails each test cell with the test's own ✗ line (an
AssertionError saying what was expected), never with a bare exception (a StopIteration, a
NameError, a KeyError, the stub's NotImplementedError) that tells a student nothing. And a
self-check (no source) of a released lab says how many points hidden tests decide."""

from __future__ import annotations

from functools import cache
from pathlib import Path

import pytest

from agentos_kernel.labs.notebook.check import check_notebook
from agentos_kernel.labs.notebook.release import release
from agentos_kernel.labs.notebook.score import LabScore

from ..jupyter.conftest import lab_notebooks

LABS = lab_notebooks()


@cache
def released(notebook: Path, tmp: Path) -> Path:
    report = release(notebook.parent, tmp / notebook.parent.name)
    return next(nb.dest for nb in report.notebooks if nb.dest.name == notebook.name)


@cache
def graded(notebook: Path, tmp: Path) -> LabScore:
    return check_notebook(released(notebook, tmp), source=notebook, timeout=60)


@pytest.fixture(scope="module")
def tmp(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("released")


def test_every_lab_is_found() -> None:
    assert len(LABS) >= 5 and all(p.stem == p.parent.name for p in LABS)


@pytest.mark.parametrize("notebook", LABS, ids=[p.stem for p in LABS])
def test_a_released_lab_fails_every_test_with_its_own_message(notebook: Path, tmp: Path) -> None:
    score = graded(notebook, tmp)
    tests = [r for r in score.rows if r.status != "no answer" and r.status != "manual"]
    assert tests and score.total == 0
    for row in tests:
        assert row.status == "failed", (row.grade_id, row.status, row.message)
        assert row.message.startswith("AssertionError: ✗ "), (row.grade_id, row.message)


@pytest.mark.parametrize("notebook", LABS, ids=[p.stem for p in LABS])
def test_a_self_check_names_the_points_hidden_tests_decide(notebook: Path, tmp: Path) -> None:
    from agentos_kernel.labs.notebook.nbgrader_format import is_grade, read_notebook

    src = read_notebook(notebook)
    hidden = {c.metadata["nbgrader"]["grade_id"]: c.metadata["nbgrader"]["points"] for c in src.cells
              if is_grade(c) and "BEGIN HIDDEN TESTS" in c.source}
    score = check_notebook(released(notebook, tmp), timeout=60)
    assert set(score.hidden or ()) == set(hidden)
    line = score.total_line()
    assert line.startswith("visible: 0 / ")
    assert f"; {sum(hidden.values()):g} more points in hidden tests the grader runs" in line
    assert "total:" not in line

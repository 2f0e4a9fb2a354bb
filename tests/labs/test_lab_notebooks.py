"""The graded labs as stored (notebooks/labs/<name>/<name>.ipynb, the instructor's form with
solutions and hidden tests): nbgrader's own cell metadata, a goal a student can state, points
that add up, and stored outputs nbval can compare. (tests/jupyter/conftest.py runs each lab
under nbval too.)"""

from __future__ import annotations

import re

import nbformat
import pytest

from ..jupyter.conftest import LABS, lab_notebooks
from ..jupyter.test_notebooks import VOLATILE, texts

EXPECTED = ["lab-01-tools", "lab-02-hooks", "lab-03-skills", "lab-04-handoffs", "lab-05-cycles",
            "lab-06-ralph-loop", "lab-07-mcp", "lab-08-context-reset", "lab-09-fanout",
            "lab-10-telemetry"]
NBGRADER_KEYS = {"grade", "grade_id", "locked", "schema_version", "solution", "task"}
MARKERS = {"solution": ("### BEGIN SOLUTION", "### END SOLUTION"),
           "hidden": ("### BEGIN HIDDEN TESTS", "### END HIDDEN TESTS")}
SESSION_ID = re.compile(r"\bs\d{4,}\b")
WEEK = re.compile(r"\bWeeks? \d\d(–\d\d)?\b")
TOTAL = re.compile(r"\|\s*\|\s*\*\*Total\*\*\s*\|\s*\*\*(\d+)\*\*\s*\|")


def load(name: str) -> nbformat.NotebookNode:
    return nbformat.read(LABS / name / f"{name}.ipynb", as_version=4)


def nbgrader(cell: nbformat.NotebookNode) -> dict:
    return dict(cell.metadata.get("nbgrader", {}))


def regions(source: str, kind: str) -> list[str]:
    """The text of each marked region; AssertionError when the markers do not pair up."""
    begin, end = MARKERS[kind]
    found, current = [], None
    for line in source.splitlines():
        if line.strip() == begin:
            assert current is None, f"a nested {begin}"
            current = []
        elif line.strip() == end:
            assert current is not None, f"{end} without {begin}"
            found.append("\n".join(current))
            current = None
        elif current is not None:
            current.append(line)
        else:
            assert begin.split(" ", 1)[1] not in line and end.split(" ", 1)[1] not in line, \
                f"a marker that is not alone on its line: {line!r}"
    assert current is None, f"{begin} without {end}"
    return found


def visible(source: str) -> str:
    """A test cell as a student sees it: the hidden regions removed."""
    return re.sub(r"^\s*### BEGIN HIDDEN TESTS$.*?^\s*### END HIDDEN TESTS$\n?", "", source,
                  flags=re.S | re.M)


def test_the_lab_set() -> None:
    assert [p.parent.name for p in lab_notebooks()] == EXPECTED
    for name in EXPECTED:
        assert [p.name for p in (LABS / name).glob("*.ipynb")] == [f"{name}.ipynb"]


@pytest.mark.parametrize("name", EXPECTED)
def test_cells_carry_nbgrader_v3_metadata(name: str) -> None:
    nb = load(name)
    ids = []
    for cell in nb.cells:
        meta = nbgrader(cell)
        assert set(meta) >= NBGRADER_KEYS, f"{name}: a cell without nbgrader metadata: {cell.source[:60]!r}"
        assert meta["schema_version"] == 3 and meta["task"] is False
        assert all(isinstance(meta[k], bool) for k in ("grade", "solution", "locked"))
        assert re.fullmatch(r"[A-Za-z0-9_-]+", meta["grade_id"]), meta["grade_id"]
        ids.append(meta["grade_id"])
        if meta["grade"]:  # an autograded test: locked, with points
            assert cell.cell_type == "code" and meta["locked"] and not meta["solution"], meta["grade_id"]
            assert isinstance(meta.get("points"), int | float) and meta["points"] > 0, meta["grade_id"]
        elif meta["solution"]:  # an answer the student writes
            assert cell.cell_type == "code" and not meta["locked"], meta["grade_id"]
            assert "points" not in meta
        else:  # instructions and setup
            assert meta["locked"] and "points" not in meta, meta["grade_id"]
    assert len(ids) == len(set(ids)), f"{name}: grade_ids repeat"


@pytest.mark.parametrize("name", EXPECTED)
def test_answers_and_tests_are_marked_as_nbgrader_releases_them(name: str) -> None:
    nb = load(name)
    answers = [c for c in nb.cells if nbgrader(c)["solution"]]
    tests = [c for c in nb.cells if nbgrader(c)["grade"]]
    assert len(answers) >= 2 and tests
    for cell in answers:
        assert regions(cell.source, "solution"), nbgrader(cell)["grade_id"]
        assert not regions(cell.source, "hidden")
    hidden = 0
    for cell in tests:
        hidden += len(regions(cell.source, "hidden"))
        assert not regions(cell.source, "solution")
        # What the student sees must check something: a test cell left empty by the release
        # would pass without any work.
        shown = visible(cell.source)
        assert "check(" in shown or "assert " in shown, nbgrader(cell)["grade_id"]
    assert hidden >= 1, f"{name}: no hidden tests"
    for cell in nb.cells:  # nbgrader refuses markers in any other cell
        if not (nbgrader(cell)["solution"] or nbgrader(cell)["grade"]):
            assert "SOLUTION" not in cell.source and "HIDDEN TESTS" not in cell.source, \
                nbgrader(cell)["grade_id"]


@pytest.mark.parametrize("name", EXPECTED)
def test_the_goal_comes_first_and_the_points_add_up(name: str) -> None:
    nb = load(name)
    first = nb.cells[0]
    assert first.cell_type == "markdown" and first.source.startswith(f"# Lab {name[4:6]} · ")
    assert "**Goal.** By the end you can " in first.source
    # the course map (docs/course.md): the first cell says which week of the course it serves
    assert WEEK.search(first.source.split("**Goal.**")[0]), \
        "before its goal, the first cell names its week: **Week NN · what it teaches.**"
    total = TOTAL.search(first.source)
    assert total, "the first cell's table ends with | | **Total** | **N** |"
    points = sum(nbgrader(c).get("points", 0) for c in nb.cells if nbgrader(c)["grade"])
    assert points == int(total[1]) and 10 <= points <= 20
    setup = next(c for c in nb.cells if c.cell_type == "code")
    assert not nbgrader(setup)["solution"] and not nbgrader(setup)["grade"]
    assert "%load_ext agentos_kernel" in setup.source and "scratch_workspace()" in setup.source


@pytest.mark.parametrize("name", EXPECTED)
def test_checks_never_name_a_session(name: str) -> None:
    # Cells are re-run in any order in class: a check that names s0003 breaks the second time.
    for cell in load(name).cells:
        if cell.cell_type == "code":
            assert not SESSION_ID.search(cell.source), f"{name}: {SESSION_ID.search(cell.source)[0]}"


@pytest.mark.parametrize("name", EXPECTED)
def test_stored_outputs_are_the_solution_run(name: str) -> None:
    nb = load(name)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert [c.execution_count for c in code] == list(range(1, len(code) + 1)), \
        "run python -m tests.jupyter.refresh_notebooks " + name
    for c in code:
        for o in c.get("outputs", []):
            assert o.get("output_type") != "error", f"{name}: {nbgrader(c)['grade_id']} stored an error"
            assert "image/png" not in o.get("data", {}), "nbval ignores PNG: show figures as SVG"
        for text in texts(c):
            for pattern, what in VOLATILE:
                assert not pattern.search(text), f"{name}: an output shows {what}: {pattern.search(text)[0]}"
        if nbgrader(c)["grade"]:
            printed = "".join(texts(c))
            assert printed.count("✓ ") >= 2 and "✗" not in printed, nbgrader(c)["grade_id"]

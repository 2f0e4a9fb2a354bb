"""`agentos lab check`: run a lab notebook in a fresh kernel and score each grade cell.

Most tests share one check per (submission, --source?) from _lab_fixtures.checked; the
others start their own kernel (about 1 s each; the two timeout cases a few seconds more).
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

from agentos_kernel.labs.notebook import check as labcheck
from agentos_kernel.labs.notebook.check import check_notebook
from agentos_kernel.labs.notebook.nbgrader_format import LabInputError, compute_checksum
from agentos_kernel.labs.notebook.release import release
from agentos_kernel.labs.notebook.run import TIMEOUT_ENAME
from agentos_kernel.labs.notebook.score import LabScore, ScoreRow, score_cell

from ..helpers import REPO
from ._lab_fixtures import (
    EXPECTED,
    LAB,
    SOURCE,
    STUDENTS,
    TIMEOUT,
    cell,
    checked,
    lab_copy,
    points,
    read,
    submission,
    submission_copy,
)

UNKNOWN_HIDDEN = "; the grader may run hidden tests too (no source of this lab was found to say how many)"

def row(score: LabScore, gid: str) -> ScoreRow:
    (found,) = [r for r in score.rows if r.grade_id == gid]
    return found


@pytest.mark.parametrize("with_source", [False, True], ids=["alone", "with-source"])
@pytest.mark.parametrize("student", STUDENTS)
def test_each_grade_cell_is_scored(student: str, with_source: bool) -> None:
    score = checked(student, with_source)
    assert points(score) == EXPECTED[(student, with_source)]
    assert [r.cell for r in score.rows] == [3, 5, 7, 8]
    assert score.total == sum(p for p in points(score).values() if p is not None)


def test_an_error_scores_zero_with_its_first_line() -> None:
    score = checked("raises", False)
    assert row(score, "test_add").status == "failed"
    assert row(score, "test_add").message == "NotImplementedError (line 1: assert add(1, 2) == 3)"
    assert row(score, "test_total").message.startswith("ValueError: total() is not written yet")
    assert score.points_lost and score.total_line() == "visible: 0 / 5 (1 to grade by hand)" + UNKNOWN_HIDDEN


def test_a_hanging_cell_is_cut_off_and_the_rest_still_run() -> None:
    score = checked("hangs", True)
    total = row(score, "test_total")
    assert (total.points, total.status) == (0, "timeout")
    assert f"{TIMEOUT} s timeout" in total.message
    assert row(score, "test_add_floats").status == "passed"  # runs after the interrupted cell


def test_a_kernel_that_ignores_the_interrupt_stops_the_run(tmp_path: Path) -> None:
    def stubborn(nb: Any) -> None:
        cell(nb, "total").source = ("import time\n\ndef total(xs):\n    while True:\n        try:\n"
                                    "            time.sleep(0.05)\n        except KeyboardInterrupt:\n"
                                    "            pass")
    path = submission_copy("hangs", tmp_path / "s", stubborn)
    started = time.monotonic()
    score = check_notebook(path, timeout=1)
    assert time.monotonic() - started < 60  # it would never return otherwise
    assert row(score, "test_total").status == "timeout"
    floats = row(score, "test_add_floats")
    assert (floats.points, floats.status) == (0, "not run")
    assert floats.message == "the kernel did not recover from the timeout in cell 5"


def test_a_dead_kernel_marks_the_rest_not_run(tmp_path: Path) -> None:
    def dies(nb: Any) -> None:
        cell(nb, "total").source = "import os\nos._exit(3)"
    score = check_notebook(submission_copy("all_correct", tmp_path / "s", dies), timeout=TIMEOUT)
    assert row(score, "test_add").status == "passed"
    assert [(r.status, r.message) for r in score.rows if r.grade_id != "explain"][1:] == \
        [("not run", "the kernel died in cell 4")] * 2


def test_source_restores_hidden_tests_and_edited_tests() -> None:
    partly = checked("partly_correct", True)
    assert row(partly, "test_total").message == "AssertionError (line 4: assert total([-1, 1]) == 0)"
    tampered = checked("tampered", True)
    assert row(tampered, "test_add_floats").max_points == 1
    assert tampered.notes == ("cell 5 (test_total): restored from the source",
                              "cell 8 (test_add_floats): points restored to 1",
                              "cell 8 (test_add_floats): restored from the source")
    assert checked("tampered", False).notes == ()


def test_source_scores_deleted_cells_zero_and_duplicates_once(tmp_path: Path) -> None:
    def edit(nb: Any) -> None:
        nb.cells.remove(cell(nb, "test_add_floats"))
        copy = nbformat.from_dict(json.loads(json.dumps(cell(nb, "test_add"))))
        copy.id, copy.source = "pasted", "assert True"
        nb.cells.append(copy)  # the last cell with an id keeps it (nbgrader's DeduplicateIds)
    path = submission_copy("all_correct", tmp_path / "s", edit)
    score = check_notebook(path, source=SOURCE, timeout=TIMEOUT)
    assert [(r.grade_id, r.cell, r.points, r.status) for r in score.rows] == [
        ("test_total", 5, 2, "passed"), ("explain", 7, None, "manual"), ("test_add", 8, 1, "passed"),
        ("test_add_floats", None, 0, "missing")]
    assert "cell 3: a second cell with grade_id 'test_add'; only the last one counts" in score.notes
    assert "cell 8 (test_add): restored from the source" in score.notes


def test_the_released_lab_scores_zero(tmp_path: Path) -> None:
    release(LAB, tmp_path / "student")
    for source in (None, SOURCE):
        score = check_notebook(tmp_path / "student" / SOURCE.name, source=source, timeout=TIMEOUT)
        assert score.total == 0 and score.max_total == 5
        assert [r.status for r in score.rows] == ["failed", "failed", "no answer", "failed"]
        assert all(r.message.startswith("NotImplementedError") for r in score.rows if r.status == "failed")


def test_the_instructor_notebook_earns_full_marks() -> None:
    score = check_notebook(SOURCE, timeout=TIMEOUT)  # solutions in, hidden tests run as comments' code
    assert not score.points_lost and score.total == 4 and score.pending == 1


def test_the_kernel_runs_this_python_elsewhere_with_the_folders_files(tmp_path: Path) -> None:
    folder = tmp_path / "s"

    def writes(nb: Any) -> None:  # an error here would undefine add() and fail test_add
        cell(nb, "add").source += (
            f'\n\nimport sys\nassert sys.executable == {sys.executable!r}, sys.executable\n'
            f'assert Path.cwd() != Path({str(folder)!r})\nPath("written.txt").write_text(str(NUMBERS))')
    path = submission_copy("all_correct", folder, writes)
    before = sorted(p.name for p in path.parent.rglob("*")), path.read_bytes()
    score = check_notebook(path, timeout=TIMEOUT)
    assert not score.points_lost  # data/numbers.txt was there (NUMBERS), the write did not fail
    assert (sorted(p.name for p in path.parent.rglob("*")), path.read_bytes()) == before


def test_cli_prints_the_table_and_total_with_exit_codes(cli: Any) -> None:
    code, out, _ = cli("lab", "check", submission("all_correct"), "--timeout", TIMEOUT)
    assert code == 0
    lines = out.splitlines()
    assert lines[0].startswith("sandbox held: namespaces, ")  # the table comes after what held
    assert lines[1].split() == ["grade_id", "points", "max", "status", "message"]
    assert lines[2].split() == ["test_add", "1", "1", "passed"]
    # the fixture lab is not shipped: nothing says which of its cells hold hidden tests
    assert lines[-1] == "visible: 4 / 5 (1 to grade by hand)" + UNKNOWN_HIDDEN
    code, out, _ = cli("lab", "check", submission("partly_correct"), "--source", SOURCE, "--json")
    assert code == 1
    data = json.loads(out)
    assert (data["total"], data["max"]) == (2, 5)
    assert {r["grade_id"]: r["points"] for r in data["rows"]} == EXPECTED[("partly_correct", True)]


def test_cli_refuses_what_it_cannot_check(tmp_path: Path, cli: Any) -> None:
    plain = tmp_path / "plain.ipynb"
    nbformat.write(new_notebook(cells=[new_code_cell("x = 1")]), plain)
    code, _, err = cli("lab", "check", plain)
    assert code == 2 and f"{plain}: no grade cells" in err
    broken = lab_copy(tmp_path / "lab", lambda nb: cell(nb, "test_add").metadata.nbgrader.pop("points"))
    code, _, err = cli("lab", "check", broken)
    assert code == 2 and "cell 3 (test_add): grade cell without points" in err
    code, _, err = cli("lab", "check", tmp_path / "nope.ipynb")
    assert code == 2 and "no such notebook file" in err
    with pytest.raises(LabInputError, match="at least 1 second"):
        check_notebook(submission("all_correct"), timeout=0)


def test_check_refuses_a_folder_too_big_to_copy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(labcheck, "MAX_FILES", 1)  # the fixture folder has 2 files
    with pytest.raises(LabInputError, match=r"holds 2 files, 0 MB;.*in its own lab folder"):
        check_notebook(submission("all_correct"))


def _graded(source: str, outputs: list[Any], points: float = 2) -> Any:
    c = new_code_cell(source, outputs=outputs)
    c.metadata["nbgrader"] = {"grade": True, "solution": False, "locked": False, "grade_id": "t",
                              "points": points, "schema_version": 3}
    return c


def _result(text: str) -> Any:
    return new_output("execute_result", {"text/plain": text}, execution_count=1)


@pytest.mark.parametrize(("outputs", "expected"), [
    ([], (2, "passed", "")),
    ([new_output("stream", name="stdout", text="fine\n")], (2, "passed", "")),
    ([new_output("stream", name="stderr", text="DeprecationWarning: old\nmore\n")],
     (0, "failed", "wrote to stderr: DeprecationWarning: old")),
    ([new_output("error", ename="KeyError", evalue="'x'", traceback=[])], (0, "failed", "KeyError: 'x'")),
    ([_result("0.5")], (0.5, "partial", "partial credit: the cell shows 0.5")),
    ([_result("2")], (2, "passed", "")),
    ([_result("'a string'")], (2, "passed", "")),
    ([_result("3")], (0, "failed", "the cell shows 3, more than its 2 points "
                                    "(a number shown last is read as partial credit)")),
    ([new_output("error", ename="KeyboardInterrupt", evalue="", traceback=[]),
      new_output("error", ename=TIMEOUT_ENAME, evalue="no reply", traceback=[])], (0, "timeout", "no reply")),
], ids=["quiet", "stdout", "stderr", "error", "partial", "number-equal-max", "not-a-number", "too-many",
        "timeout"])
def test_score_cell_follows_nbgraders_determine_grade(outputs: list[Any], expected: tuple) -> None:
    r = score_cell(_graded("x", outputs), 0, None)
    assert (r.points, r.status, r.message) == expected


def test_score_cell_written_answers_and_cells_not_run() -> None:
    answer = new_markdown_cell("YOUR ANSWER HERE")
    answer.metadata["nbgrader"] = {"grade": True, "solution": True, "locked": False, "grade_id": "a",
                                   "points": 1, "schema_version": 3}
    answer.metadata.nbgrader["checksum"] = compute_checksum(answer)
    assert score_cell(answer, 0, None).status == "no answer"
    answer.source = "Because."
    assert (score_cell(answer, 0, None).points, score_cell(answer, 0, None).status) == (None, "manual")
    assert score_cell(_graded("x", []), 0, "the kernel died in cell 1").status == "not run"


def test_lab_score_as_frame_html_and_dict() -> None:
    score = LabScore(Path("lab.ipynb"), None, (
        ScoreRow("t1", 1, 1.0, 1.0, "passed", ""), ScoreRow("t2", 2, 0.0, 2.0, "failed", "x < 1"),
        ScoreRow("a", 3, None, 1.0, "manual", "grade it by hand")))
    frame = score.to_frame()
    assert list(frame.columns) == ["grade_id", "points", "max", "status", "message"]
    assert frame["max"].sum() == 4
    page = score._repr_html_()
    assert page.count("<tr>") == 4 and "x &lt; 1" in page and "total: 1 / 4 (1 to grade by hand)" in page
    assert json.loads(json.dumps(score.to_dict()))["rows"][2]["points"] is None


LAB_NOTEBOOKS = sorted(p for p in (REPO / "notebooks" / "labs").glob("lab-*/*.ipynb")
                       if '"nbgrader"' in p.read_text())


@pytest.mark.parametrize("notebook", LAB_NOTEBOOKS, ids=[p.parent.name for p in LAB_NOTEBOOKS])
def test_every_course_lab_passes_as_written_and_scores_zero_released(notebook: Path, tmp_path: Path) -> None:
    """The real labs under notebooks/labs/: full marks with the solutions in, 0 once released."""
    instructor = check_notebook(notebook, timeout=60)
    assert not instructor.points_lost, instructor.table_lines()
    report = release(notebook.parent, tmp_path / "student")
    for nb in report.notebooks:
        score = check_notebook(nb.dest, timeout=60)
        assert score.total == 0, score.table_lines()
        assert score.rows and all(r.status in ("failed", "no answer", "manual") for r in score.rows)
    assert read(notebook)  # untouched and still readable

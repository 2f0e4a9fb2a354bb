"""`agentos lab release` and `agentos lab validate`: the student version, and refusing bad labs.

No kernel is started here. That the released notebook is what nbgrader's own
generate_assignment writes is in test_nbgrader_compat.py.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import nbformat
import pytest

from agentos_kernel.labs.notebook.nbgrader_format import (
    CODE_STUB,
    TEXT_STUB,
    LabInputError,
    RegionError,
    strip_region,
    validate_notebook,
)
from agentos_kernel.labs.notebook.release import release

from ._lab_fixtures import LAB, SOURCE, cell, lab_copy, read

ADD_STUB = 'def add(a, b):\n    """Return a + b."""\n    # YOUR CODE HERE\n    raise NotImplementedError()'


@pytest.fixture
def released(tmp_path: Path) -> tuple[Any, Any]:
    """(instructor notebook, student notebook released from the fixture lab folder)."""
    report = release(LAB, tmp_path / "out")
    (nb,) = report.notebooks
    assert (nb.solutions, nb.hidden_tests) == (3, 1)
    return read(SOURCE), read(tmp_path / "out" / SOURCE.name)


def test_solutions_are_replaced_by_nbgraders_stubs(released: tuple[Any, Any]) -> None:
    _, student = released
    assert cell(student, "add").source == ADD_STUB
    assert cell(student, "total").source.endswith("    # YOUR CODE HERE\n    raise NotImplementedError()")
    assert "add(out, x)" not in cell(student, "total").source
    assert cell(student, "explain").source == TEXT_STUB  # a solution cell with no markers: whole cell
    text = json.dumps(student)
    assert "BEGIN SOLUTION" not in text and "So that a bug" not in text


def test_hidden_tests_are_removed_and_visible_tests_kept(released: tuple[Any, Any]) -> None:
    _, student = released
    assert cell(student, "test_total").source == "assert total(NUMBERS) == 15\nassert total([]) == 0"
    assert "HIDDEN" not in json.dumps(student) and "4950" not in json.dumps(student)


def test_outputs_and_execution_counts_are_cleared(released: tuple[Any, Any]) -> None:
    source, student = released
    assert any(c.get("outputs") for c in source.cells)  # the fixture has something to clear
    for c in student.cells:
        if c.cell_type == "code":
            assert c.outputs == [] and c.execution_count is None
            assert "scrolled" not in c.metadata


def test_nbgrader_metadata_is_kept_with_checksums_and_locks(released: tuple[Any, Any]) -> None:
    source, student = released
    for src, out in zip(source.cells, student.cells, strict=True):
        if "nbgrader" not in src.metadata:
            continue
        kept = {k: v for k, v in out.metadata.nbgrader.items() if k not in ("checksum", "cell_type")}
        assert kept == src.metadata.nbgrader
        assert len(out.metadata.nbgrader.checksum) == 32 and out.metadata.nbgrader.cell_type == out.cell_type
    assert cell(student, "test_add").metadata.editable is False  # tests are read-only
    answer = cell(student, "add").metadata
    assert answer.deletable is False and "editable" not in answer
    assert "celltoolbar" not in student.metadata and "celltoolbar" in source.metadata


def test_other_cells_are_byte_identical(released: tuple[Any, Any]) -> None:
    source, student = released
    plain = [(s, o) for s, o in zip(source.cells, student.cells, strict=True) if "nbgrader" not in s.metadata]
    assert [s.id for s, _ in plain] == ["intro", "question"]
    for s, o in plain:
        assert json.dumps(s, sort_keys=True) == json.dumps(o, sort_keys=True)
    assert cell(student, "test_add").source == cell(source, "test_add").source


def test_folder_files_are_copied_and_junk_is_not(tmp_path: Path) -> None:
    lab = tmp_path / "lab"
    lab_copy(lab)
    (lab / ".ipynb_checkpoints").mkdir()
    (lab / ".ipynb_checkpoints" / "fixture-checkpoint.ipynb").write_text("{}")
    report = release(lab, tmp_path / "out")
    assert sorted(p.relative_to(tmp_path / "out").as_posix() for p in report.copied) == \
        ["README.md", "data/numbers.txt"]
    assert (tmp_path / "out" / "data" / "numbers.txt").read_text() == "1 2 3 4 5\n"
    assert not (tmp_path / "out" / ".ipynb_checkpoints").exists()


def test_a_single_notebook_goes_to_a_path_or_into_a_folder(tmp_path: Path) -> None:
    release(SOURCE, tmp_path / "student.ipynb")
    release(SOURCE, tmp_path / "folder")
    assert read(tmp_path / "student.ipynb") == read(tmp_path / "folder" / SOURCE.name)
    assert not (tmp_path / "folder" / "README.md").exists()  # a notebook alone carries no files


def test_releasing_one_notebook_says_which_files_beside_it_stay_behind(tmp_path: Path, cli: Any) -> None:
    report = release(SOURCE, tmp_path / "one")
    assert {p.name for p in report.left_behind} == {"README.md", "data"}
    code, out, _ = cli("lab", "release", SOURCE, tmp_path / "two")
    assert code == 0 and f"note: not copied from {LAB}: README.md, data; " in out
    assert f"release the folder: agentos lab release {LAB} DEST" in out
    assert release(LAB, tmp_path / "three").left_behind == ()


def test_release_refuses_to_overwrite_unless_forced(tmp_path: Path, cli: Any) -> None:
    dest = tmp_path / "out"
    code, out, _ = cli("lab", "release", LAB, dest)
    assert code == 0
    assert f"wrote {dest / SOURCE.name}: 3 solution(s) stripped, 1 hidden test region(s) removed" in out
    assert f"copied {dest / 'data' / 'numbers.txt'}" in out
    (dest / SOURCE.name).write_text("my edits")
    code, _, err = cli("lab", "release", LAB, dest)
    assert code == 2 and "already exists; pass --force to overwrite" in err
    assert (dest / SOURCE.name).read_text() == "my edits"
    code, _, _ = cli("lab", "release", LAB, dest, "--force")
    assert code == 0 and "YOUR CODE HERE" in (dest / SOURCE.name).read_text()


def test_release_refuses_a_notebook_without_nbgrader_cells(tmp_path: Path, cli: Any) -> None:
    plain = tmp_path / "plain.ipynb"
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = 1")]), plain)
    with pytest.raises(LabInputError, match="no nbgrader cells"):
        release(plain, tmp_path / "out.ipynb")
    code, _, err = cli("lab", "release", plain, tmp_path / "out.ipynb")
    assert code == 2 and "no nbgrader cells" in err and not (tmp_path / "out.ipynb").exists()


def test_release_refuses_a_destination_inside_the_lab(tmp_path: Path) -> None:
    lab = tmp_path / "lab"
    lab_copy(lab)
    with pytest.raises(LabInputError, match="inside the lab folder"):
        release(lab, lab / "student")


def _meta(gid: str, key: str, value: Any) -> Any:
    def edit(nb: Any) -> None:
        if value is None:
            del cell(nb, gid).metadata.nbgrader[key]
        else:
            cell(nb, gid).metadata.nbgrader[key] = value
    return edit


def _source(gid: str, old: str, new: str) -> Any:
    def edit(nb: Any) -> None:
        c = cell(nb, gid)
        assert old in c.source
        c.source = c.source.replace(old, new)
    return edit


def _hidden_in_solution(nb: Any) -> None:
    cell(nb, "add").source += "\n### BEGIN HIDDEN TESTS\nassert add(2, 2) == 4\n### END HIDDEN TESTS"


# (edit, cell index, grade_id, words of the problem, words of the fix)
BROKEN = {
    "duplicate grade_id": (_meta("test_add_floats", "grade_id", "test_add"), 8, "test_add",
                           "duplicate grade_id (cell 3 has it too)", "its own grade_id"),
    "grade cell without points": (_meta("test_add", "points", None), 3, "test_add",
                                  "grade cell without points", "add \"points\""),
    "BEGIN without END": (_source("add", "    ### END SOLUTION", ""), 2, "add",
                          "'BEGIN SOLUTION' without a matching 'END SOLUTION'", "### END SOLUTION"),
    "END without BEGIN": (_source("total", "    ### BEGIN SOLUTION", ""), 4, "total",
                          "line 8: 'END SOLUTION' without a 'BEGIN SOLUTION'", "delete the line"),
    "nested BEGIN": (_source("add", "    return a + b", "    ### BEGIN SOLUTION"), 2, "add",
                     "nested 'BEGIN SOLUTION'", "close the first region"),
    "hidden tests outside a grade cell": (_hidden_in_solution, 2, "add",
                                          "hidden tests region outside a grade cell", "Autograder tests"),
    "solution region in a test cell": (_source("test_add", "assert add(-2, 2) == 0",
                                               "### BEGIN SOLUTION\nx = 1\n### END SOLUTION"),
                                       3, "test_add", "solution region outside a solution cell",
                                       "solution cell"),
    "schema_version not 3": (_meta("test_total", "schema_version", 2), 5, "test_total",
                             "schema_version is 2, not 3", "nbgrader update"),
    "bad grade_id": (_meta("total", "grade_id", "my total"), 4, "my total", "grade_id", "letters, digits"),
    "unknown key": (_meta("total", "weight", 3), 4, "total", "weight", "keep only"),
    "markdown grade only": (_meta("explain", "solution", False), 7, "explain",
                            "markdown cell marked grade only", "both grade and solution"),
}


@pytest.mark.parametrize("case", sorted(BROKEN))
def test_validate_names_notebook_cell_grade_id_and_fix(case: str, tmp_path: Path, cli: Any) -> None:
    edit, index, gid, problem, fix = BROKEN[case]
    path = lab_copy(tmp_path / "lab", edit)
    problems = validate_notebook(read(path), path)
    assert len(problems) == 1, problems
    (p,) = problems
    assert (p.path, p.cell, p.grade_id) == (str(path), index, gid)
    assert problem in p.problem and fix in p.fix
    code, out, _ = cli("lab", "validate", path)
    assert code == 1 and str(p) in out
    code, _, err = cli("lab", "release", tmp_path / "lab", tmp_path / "out")
    assert code == 2 and str(p) in err and not (tmp_path / "out").exists()


def test_validate_passes_the_fixture_lab(cli: Any) -> None:
    assert validate_notebook(read(SOURCE), SOURCE) == []
    code, out, _ = cli("lab", "validate", SOURCE)
    assert (code, out.strip()) == (0, f"ok: {SOURCE}")


def test_validate_reports_a_file_that_is_not_a_notebook(tmp_path: Path, cli: Any) -> None:
    bad = tmp_path / "lab.ipynb"
    bad.write_text("{not json")
    code, _, err = cli("lab", "validate", bad)
    assert code == 2 and f"{bad}: not a readable Jupyter notebook" in err


def test_strip_region_keeps_indentation_and_rejects_nesting() -> None:
    src = "def f():\n    ### BEGIN SOLUTION\n    return 1\n    ### END SOLUTION\nx = 2"
    assert strip_region(src, "BEGIN SOLUTION", "END SOLUTION", CODE_STUB.split("\n")) == (
        "def f():\n    # YOUR CODE HERE\n    raise NotImplementedError()\nx = 2", 1)
    assert strip_region(src, "BEGIN SOLUTION", "END SOLUTION", None) == ("def f():\nx = 2", 1)
    with pytest.raises(RegionError, match="nested"):
        strip_region("# BEGIN SOLUTION\n# BEGIN SOLUTION\n# END SOLUTION", "BEGIN SOLUTION",
                     "END SOLUTION", None)

"""nbgrader itself agrees: the fixture lab run through a real nbgrader course directory.

In a temp course (nbgrader_config.py with CourseDirectory.root and a sqlite gradebook in it,
HOME and the Jupyter/IPython dirs pointed into tmp), `nbgrader generate_assignment` releases
the lab and `nbgrader autograde` grades every fixture submission plus the untouched released
notebook. Its release must equal `agentos lab release`, and the scores in its gradebook must
equal `agentos lab check --source` per grade_id. Costs about 15-20 s (two nbgrader runs).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("nbgrader", reason="nbgrader is not installed (pip install -e '.[labs]')")

from agentos_kernel.labs.notebook.check import check_notebook
from agentos_kernel.labs.notebook.nbgrader_format import compute_checksum, has_grade_id, validate_notebook
from agentos_kernel.labs.notebook.release import release

from ._lab_fixtures import LAB, SOURCE, STUDENTS, SUBMISSIONS, TIMEOUT, checked, lab_copy, points, read
from .test_lab_release import BROKEN

ASSIGNMENT = "lab00"
UNTOUCHED = "untouched"  # submits the released notebook as it came


def _nbgrader(course: Path, home: Path, *args: str) -> None:
    env = {**os.environ, "HOME": str(home), "JUPYTER_CONFIG_DIR": str(home / "config"),
           "JUPYTER_DATA_DIR": str(home / "data"), "JUPYTER_RUNTIME_DIR": str(home / "runtime"),
           "IPYTHONDIR": str(home / "ipython"), "JUPYTER_PLATFORM_DIRS": "0"}
    done = subprocess.run([sys.executable, "-m", "nbgrader", *args], cwd=course, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]


@pytest.fixture(scope="module")
def course(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Run nbgrader on the fixture lab; return its released notebook dir and gradebook scores."""
    from nbgrader.api import Gradebook

    root = tmp_path_factory.mktemp("course")
    home = tmp_path_factory.mktemp("home")
    db = f"sqlite:///{root / 'gradebook.db'}"
    (root / "nbgrader_config.py").write_text(
        "c = get_config()\n"
        f"c.CourseDirectory.root = {str(root)!r}\n"
        f"c.CourseDirectory.db_url = {db!r}\n"
        f"c.Execute.timeout = {TIMEOUT}\n")
    shutil.copytree(LAB, root / "source" / ASSIGNMENT)
    _nbgrader(root, home, "generate_assignment", ASSIGNMENT)
    released = root / "release" / ASSIGNMENT
    for student in STUDENTS:
        shutil.copytree(SUBMISSIONS / student, root / "submitted" / student / ASSIGNMENT)
    shutil.copytree(released, root / "submitted" / UNTOUCHED / ASSIGNMENT)
    _nbgrader(root, home, "autograde", ASSIGNMENT)
    scores: dict[str, dict[str, float | None]] = {}
    with Gradebook(db) as gb:
        for student in (*STUDENTS, UNTOUCHED):
            nb = gb.find_submission_notebook(SOURCE.stem, ASSIGNMENT, student)
            scores[student] = {g.name: g.auto_score for g in nb.grades}
    return {"released": released, "scores": scores}


def test_release_is_what_generate_assignment_writes(course: dict[str, Any], tmp_path: Path) -> None:
    release(LAB, tmp_path / "ours")
    theirs = course["released"]
    ours_files = sorted(p.relative_to(tmp_path / "ours") for p in (tmp_path / "ours").rglob("*"))
    assert ours_files == sorted(p.relative_to(theirs) for p in theirs.rglob("*"))
    assert [c.source for c in read(tmp_path / "ours" / SOURCE.name).cells] == \
        [c.source for c in read(theirs / SOURCE.name).cells]
    assert read(tmp_path / "ours" / SOURCE.name) == read(theirs / SOURCE.name)  # metadata too
    assert (tmp_path / "ours" / SOURCE.name).read_bytes() == (theirs / SOURCE.name).read_bytes()


@pytest.mark.parametrize("student", STUDENTS)
def test_autograde_agrees_with_lab_check(course: dict[str, Any], student: str) -> None:
    nbgrader_scores = course["scores"][student]
    assert points(checked(student, True)) == nbgrader_scores
    assert checked(student, True).total == sum(s for s in nbgrader_scores.values() if s is not None)


def test_autograde_scores_the_untouched_release_zero_like_lab_check(course: dict[str, Any]) -> None:
    ours = check_notebook(course["released"] / SOURCE.name, source=SOURCE, timeout=TIMEOUT)
    assert points(ours) == course["scores"][UNTOUCHED]
    assert ours.total == 0


def test_checksums_are_nbgraders(course: dict[str, Any]) -> None:
    from nbgrader.utils import compute_checksum as theirs

    nbs = [read(SOURCE), read(course["released"] / SOURCE.name),
           *(read(SUBMISSIONS / s / SOURCE.name) for s in STUDENTS)]
    cells = [c for nb in nbs for c in nb.cells if has_grade_id(c)]
    assert len(cells) == 7 * len(nbs)
    assert [compute_checksum(c) for c in cells] == [theirs(c) for c in cells]


@pytest.mark.parametrize("case", ["duplicate grade_id", "grade cell without points", "schema_version not 3",
                                  "bad grade_id", "unknown key", "markdown grade only"])
def test_metadata_nbgrader_rejects_is_rejected_here_too(case: str, tmp_path: Path) -> None:
    from nbgrader.nbgraderformat import MetadataValidator, ValidationError

    nb = read(lab_copy(tmp_path / "lab", BROKEN[case][0]))
    assert validate_notebook(nb, "lab.ipynb")
    with pytest.raises((ValidationError, Exception)):  # SchemaTooOldError for the old version
        MetadataValidator().validate_nb(nb)
    MetadataValidator().validate_nb(read(SOURCE))  # and the fixture itself is valid to both


# -- a course lab, not only the fixture: lab-03-skills with half its answers -----------------

COURSE_LAB = Path(__file__).resolve().parents[2] / "notebooks" / "labs" / "lab-03-skills"


def _half_done(released: Path, source: Path, dest: Path) -> None:
    """The released notebook with only its first answer cell filled in (from the model answer)."""
    import nbformat

    nb, model = read(released), read(source)
    answers = {c.metadata["nbgrader"]["grade_id"]: c for c in model.cells
               if c.metadata.get("nbgrader", {}).get("solution")}
    first = next(iter(answers))
    for cell in nb.cells:
        if cell.metadata.get("nbgrader", {}).get("grade_id") == first:
            cell.source = answers[first].source
    dest.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, dest)


def test_autograde_agrees_with_lab_check_on_a_course_lab(tmp_path: Path) -> None:
    from nbgrader.api import Gradebook

    name = COURSE_LAB.name
    root, home = tmp_path / "course", tmp_path / "home"
    root.mkdir()
    db = f"sqlite:///{root / 'gradebook.db'}"
    (root / "nbgrader_config.py").write_text(
        f"c = get_config()\nc.CourseDirectory.root = {str(root)!r}\nc.CourseDirectory.db_url = {db!r}\n"
        "c.Execute.timeout = 60\n")
    shutil.copytree(COURSE_LAB, root / "source" / name)
    _nbgrader(root, home, "generate_assignment", name)
    submitted = root / "submitted" / "ada" / name
    shutil.copytree(root / "release" / name, submitted)
    _half_done(root / "release" / name / f"{name}.ipynb", COURSE_LAB / f"{name}.ipynb",
               submitted / f"{name}.ipynb")
    ours = check_notebook(submitted / f"{name}.ipynb", source=COURSE_LAB / f"{name}.ipynb", timeout=60)
    _nbgrader(root, home, "autograde", name)
    with Gradebook(db) as gb:
        theirs = {g.name: g.auto_score for g in gb.find_submission_notebook(name, name, "ada").grades}
    assert points(ours) == theirs
    assert 0 < ours.total < ours.max_total  # half done: some points, not all

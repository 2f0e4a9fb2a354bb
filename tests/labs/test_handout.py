"""`agentos notebooks DEST`: students get the teaching notebooks and the RELEASED labs only
(issue 20: "students never receive instructor copies"); `--instructor` gives the sources; the
wheel carries the notebooks, so a `pip install` user has the workbench too."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import nbformat
import pytest

from agentos_kernel.cli.main import main
from agentos_kernel.labs.notebook.handout import copy_notebooks, notebooks_dir
from agentos_kernel.labs.notebook.nbgrader_format import BEGIN_HIDDEN, BEGIN_SOLUTION, LabInputError
from agentos_kernel.labs.notebook.release import student_version

from ..helpers import REPO

SOURCES = REPO / "notebooks"
LAB_SOURCES = sorted((SOURCES / "labs").glob("*/*.ipynb"))


def _solution_lines(nb: nbformat.NotebookNode) -> set[str]:
    """Lines that stand only inside the instructor's solution and hidden-test regions."""
    lines, outside, inside = set(), set(), False
    for cell in nb.cells:
        for line in cell.source.splitlines():
            if line.strip().startswith(("### BEGIN SOLUTION", "### BEGIN HIDDEN TESTS")):
                inside = True
            elif line.strip().startswith(("### END SOLUTION", "### END HIDDEN TESTS")):
                inside = False
            elif len(line.strip()) > 12:  # long enough to be the answer, not `pass`
                (lines if inside else outside).add(line.strip())
    return lines - outside


def test_the_student_copy_holds_released_labs_and_no_solution_or_hidden_test(tmp_path: Path) -> None:
    done = copy_notebooks(tmp_path / "class", src=SOURCES)
    assert not done.instructor
    assert len(done.released) == len(LAB_SOURCES) >= 5
    written = {p for p in (tmp_path / "class").rglob("*") if p.is_file()}
    assert not any(p.name == "README.md" and p.parent.name == "labs" for p in written), \
        "the instructors' guide stays with the instructor"
    for src in LAB_SOURCES:
        out = tmp_path / "class" / "labs" / src.parent.name / src.name
        instructor = nbformat.read(src, as_version=4)
        text = out.read_text(encoding="utf-8")
        assert BEGIN_SOLUTION not in text and BEGIN_HIDDEN not in text, out
        shown = {line.strip() for c in nbformat.read(out, as_version=4).cells
                 for line in c.source.splitlines()}
        secret = sorted(_solution_lines(instructor) & shown)
        assert not secret, f"{out} quotes the instructor's solution or hidden tests: {secret[:3]}"
        expected, _, _ = student_version(instructor)
        assert [c.source for c in nbformat.read(out, as_version=4).cells] == \
            [c.source for c in expected.cells]
    for teaching in SOURCES.glob("*.ipynb"):  # the teaching notebooks go as they are
        assert (tmp_path / "class" / teaching.name).read_bytes() == teaching.read_bytes()
    starter = SOURCES / "labs" / "lab-01-tools" / "starter"
    for f in (p for p in starter.rglob("*") if p.is_file()):
        assert (tmp_path / "class" / "labs" / "lab-01-tools" / f.relative_to(starter.parent)).is_file()


def test_the_instructor_copy_is_the_sources(tmp_path: Path) -> None:
    done = copy_notebooks(tmp_path / "inst", instructor=True, src=SOURCES)
    assert done.instructor and not done.released
    for src in [*LAB_SOURCES, SOURCES / "labs" / "README.md"]:
        assert (tmp_path / "inst" / src.relative_to(SOURCES)).read_bytes() == src.read_bytes()


def test_nothing_is_overwritten_or_written_inside_the_sources(tmp_path: Path) -> None:
    copy_notebooks(tmp_path / "class", src=SOURCES)
    before = (tmp_path / "class" / "00_tour.ipynb").read_bytes()
    (tmp_path / "class" / "00_tour.ipynb").write_text("mine")
    with pytest.raises(LabInputError, match="already exists; pass --force"):
        copy_notebooks(tmp_path / "class", src=SOURCES)
    assert (tmp_path / "class" / "00_tour.ipynb").read_text() == "mine"
    copy_notebooks(tmp_path / "class", src=SOURCES, force=True)
    assert (tmp_path / "class" / "00_tour.ipynb").read_bytes() == before
    with pytest.raises(LabInputError, match="inside the notebooks folder"):
        copy_notebooks(SOURCES / "out", src=SOURCES)
    assert not (SOURCES / "out").exists()


def test_the_command_says_what_it_wrote_and_refuses_in_one_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["notebooks", str(tmp_path / "nb")]) == 0
    out = capsys.readouterr().out
    assert f"released lab notebook(s) to {tmp_path / 'nb'}" in out and "hidden test region(s) removed" in out
    assert main(["notebooks", str(tmp_path / "nb")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "pass --force" in err
    assert main(["notebooks", "--instructor", str(tmp_path / "inst")]) == 0
    assert "INSTRUCTOR copy" in capsys.readouterr().out


def test_the_wheel_carries_the_notebooks_and_hands_out_released_labs(tmp_path: Path) -> None:
    """Built without isolation (offline), installed into a folder, run from there."""
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-build-isolation",
                            "--no-deps", str(REPO), "-w", str(tmp_path / "whl")],
                           capture_output=True, text=True, check=False)
    assert built.returncode == 0, built.stderr[-2000:]
    (wheel,) = (tmp_path / "whl").glob("*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert "agentos_kernel/py.typed" in names  # PEP 561: a checker reads the installed package's hints
    for src in [*LAB_SOURCES, *sorted(SOURCES.glob("*.ipynb"))]:
        assert f"agentos_kernel/_reference/notebooks/{src.relative_to(SOURCES).as_posix()}" in names
    zipfile.ZipFile(wheel).extractall(tmp_path / "site")
    env = {**os.environ, "PYTHONPATH": str(tmp_path / "site")}
    code = ("import sys; from agentos_kernel.labs.notebook.handout import copy_notebooks, notebooks_dir; "
            "print(notebooks_dir()); copy_notebooks(sys.argv[1])")
    ran = subprocess.run([sys.executable, "-c", code, str(tmp_path / "out")], cwd=tmp_path,
                         env=env, capture_output=True, text=True, check=False)
    assert ran.returncode == 0, ran.stderr[-2000:]
    assert ran.stdout.strip() == str(tmp_path / "site" / "agentos_kernel" / "_reference" / "notebooks")
    out = tmp_path / "out" / "labs" / "lab-01-tools" / "lab-01-tools.ipynb"
    assert BEGIN_HIDDEN not in out.read_text(encoding="utf-8")


def test_this_checkout_hands_out_its_own_notebooks() -> None:
    assert notebooks_dir() == SOURCES

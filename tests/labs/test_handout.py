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


def test_the_wheel_carries_the_notebooks_as_students_get_them_never_the_sources(tmp_path: Path) -> None:
    """Built without isolation (offline), installed into a folder, run from there. A student's
    code can read the installed package (a lab kernel may read the Python installation; a hub's
    servers all run on it), so no line of a solution or hidden test may be in the wheel: an
    answer cell that globbed site-packages for the lab and exec'd its solutions scored 7/15."""
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-build-isolation",
                            "--no-deps", str(REPO), "-w", str(tmp_path / "whl")],
                           capture_output=True, text=True, check=False)
    assert built.returncode == 0, built.stderr[-2000:]
    (wheel,) = (tmp_path / "whl").glob("*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert "agentos_kernel/py.typed" in names  # PEP 561: a checker reads the installed package's hints
    for src in [*LAB_SOURCES, *sorted(SOURCES.glob("*.ipynb"))]:
        assert f"agentos_kernel/_reference/notebooks/{src.relative_to(SOURCES).as_posix()}" in names
    assert not [n for n in names if "/capstone-lab-07/solution/" in n], "a project's solution stays out"
    assert "agentos_kernel/_reference/notebooks/labs/README.md" not in names, "the instructors' guide"
    zipfile.ZipFile(wheel).extractall(tmp_path / "site")
    notebooks = tmp_path / "site" / "agentos_kernel" / "_reference" / "notebooks"
    shipped: set[str] = set()  # every line of every file the wheel carries there, stripped
    for p in (p for p in notebooks.rglob("*") if p.is_file()):
        texts = ([c.source for c in nbformat.read(p, as_version=4).cells] if p.suffix == ".ipynb"
                 else [p.read_text(encoding="utf-8", errors="replace")])
        shipped |= {line.strip() for text in texts for line in text.splitlines()}
    # a line one lab hands out as given code (a helper) is no secret of another's solution
    given = set().union(*(_given_lines(nbformat.read(p, as_version=4)) for p in LAB_SOURCES),
                        *({line.strip() for c in nbformat.read(p, as_version=4).cells
                           for line in c.source.splitlines()} for p in SOURCES.glob("*.ipynb")),
                        *({line.strip() for line in p.read_text(encoding="utf-8").splitlines()}
                          for p in (SOURCES / "labs").rglob("*") if p.is_file() and p.suffix != ".ipynb"
                          and "solution" not in p.parts and p.name != "README.md"))
    for src in LAB_SOURCES:
        secret = _solution_lines(nbformat.read(src, as_version=4)) - given
        leaked = [line for line in secret if line in shipped]
        assert not leaked, f"{src.name}: solution or hidden-test lines in the wheel: {leaked[:3]}"
    env = {**os.environ, "PYTHONPATH": str(tmp_path / "site")}
    code = ("import sys; from agentos_kernel.labs.notebook.handout import copy_notebooks, notebooks_dir; "
            "print(notebooks_dir()); done = copy_notebooks(sys.argv[1]); "
            "print(len(done.released), sum(n.hidden_tests for n in done.released))")
    ran = subprocess.run([sys.executable, "-c", code, str(tmp_path / "out")], cwd=tmp_path,
                         env=env, capture_output=True, text=True, check=False)
    assert ran.returncode == 0, ran.stderr[-2000:]
    where, counts = ran.stdout.strip().splitlines()
    assert where == str(tmp_path / "site" / "agentos_kernel" / "_reference" / "notebooks")
    assert counts == f"{len(LAB_SOURCES)} {sum(_hidden_regions(p) for p in LAB_SOURCES)}"
    out = tmp_path / "out" / "labs" / "lab-01-tools" / "lab-01-tools.ipynb"
    assert BEGIN_HIDDEN not in out.read_text(encoding="utf-8")
    refused = subprocess.run([sys.executable, "-m", "agentos_kernel", "notebooks", "--instructor",
                              str(tmp_path / "inst")], cwd=tmp_path, env=env, capture_output=True,
                             text=True, check=False)
    assert refused.returncode == 2 and "in a checkout" in refused.stderr, refused.stderr
    assert not (tmp_path / "inst").exists()


def _given_lines(nb: nbformat.NotebookNode) -> set[str]:
    """Lines outside the solution and hidden-test regions: what a student is given."""
    everything = {line.strip() for c in nb.cells for line in c.source.splitlines()}
    return everything - _solution_lines(nb)


def _hidden_regions(path: Path) -> int:
    return sum(line.strip().endswith(BEGIN_HIDDEN)
               for c in nbformat.read(path, as_version=4).cells for line in c.source.splitlines())


def test_a_self_check_from_the_wheels_copy_still_knows_the_hidden_points(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The wheel's labs hold no hidden tests; its manifest says which cells the grader adds."""
    from agentos_kernel.labs.notebook import check, handout, shipped

    released = shipped.write_released(SOURCES, tmp_path / "wheel-notebooks")
    monkeypatch.setattr(handout, "notebooks_dir", lambda: released)
    monkeypatch.setattr(shipped, "notebooks_dir", lambda: released)
    student = released / "labs" / "lab-01-tools" / "lab-01-tools.ipynb"
    source = nbformat.read(SOURCES / "labs" / "lab-01-tools" / "lab-01-tools.ipynb", as_version=4)
    expected = tuple(c.metadata["nbgrader"]["grade_id"] for c in source.cells
                     if c.metadata.get("nbgrader", {}).get("grade")
                     and any(line.strip().endswith(BEGIN_HIDDEN) for line in c.source.splitlines()))
    assert expected, "lab 01 has hidden tests"
    assert check._hidden_here(student, nbformat.read(student, as_version=4)) == expected


def test_this_checkout_hands_out_its_own_notebooks() -> None:
    assert notebooks_dir() == SOURCES

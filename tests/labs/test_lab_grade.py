"""`agentos lab grade SUBMITTED --source SRC`: a class's submissions of the fixture lab in
nbgrader's layout (submitted/<student>/fixture/fixture.ipynb), made from the fixture
submissions: full marks, the released notebook untouched, one whose kernel dies, one that
hangs, one with an edited test, one not a notebook, one with broken nbgrader metadata, one
missing. Graded once per module
through the CLI (--jobs 2); the tests read what it wrote."""

from __future__ import annotations

import contextlib
import csv
import io
import shutil
import threading
from pathlib import Path
from typing import Any

import nbformat
import pytest

from agentos_kernel.cli.main import main as cli_main
from agentos_kernel.labs.notebook import batch
from agentos_kernel.labs.notebook.batch import Limits, find_students, grade_submissions, load_criteria
from agentos_kernel.labs.notebook.release import release

from ._lab_fixtures import SOURCE, SUBMISSIONS, TIMEOUT, cell, read

IDS = ["test_add", "test_total", "explain", "test_add_floats"]


def make_class(root: Path) -> Path:
    """submitted/<student>/fixture/fixture.ipynb for each kind of submission."""
    submitted = root / "submitted"

    def put(student: str, nb: Any = None, raw: bytes | None = None) -> None:
        folder = submitted / student / "fixture"
        folder.mkdir(parents=True)
        if nb is not None:
            nbformat.write(nb, folder / "fixture.ipynb")
        if raw is not None:
            (folder / "fixture.ipynb").write_bytes(raw)

    for student in ("all_correct", "hangs", "tampered"):
        put(student, read(SUBMISSIONS / student / "fixture.ipynb"))
    release(SOURCE, root / "released" / "fixture.ipynb")
    put("released", read(root / "released" / "fixture.ipynb"))
    crashing = read(SUBMISSIONS / "all_correct" / "fixture.ipynb")
    cell(crashing, "total").source += "\nimport os\nos._exit(3)"  # the kernel dies in the answer
    put("crashing", crashing)
    put("garbage", raw=b"this is not a notebook {")
    broken = read(SUBMISSIONS / "all_correct" / "fixture.ipynb")
    cell(broken, "add").metadata.nbgrader["schema_version"] = 1  # nbgrader refuses it too
    put("broken_metadata", broken)
    (submitted / "missing" / "fixture").mkdir(parents=True)  # handed in nothing
    return submitted


def run_cli(*argv: object) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli_main([str(a) for a in argv])
    return code, out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def graded(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("class")
    submitted = make_class(root)
    code, out, err = run_cli("lab", "grade", submitted, "--source", SOURCE, "--out", root / "grades",
                             "--jobs", 2, "--timeout", TIMEOUT, "--no-progress")
    return {"root": root, "submitted": submitted, "out": root / "grades", "code": code,
            "stdout": out, "stderr": err}


def rows(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8", newline="") as f:
        return list(csv.DictReader(f))


def by_student(graded: dict[str, Any]) -> dict[str, dict[str, str]]:
    return {r["student"]: r for r in rows(graded["out"] / "gradebook.csv")}


def test_every_student_is_a_row_whatever_went_wrong(graded: dict[str, Any]) -> None:
    assert graded["code"] == 0, graded["stderr"]
    book = by_student(graded)
    assert list(book) == sorted(["all_correct", "broken_metadata", "crashing", "garbage", "hangs", "missing",
                                 "released", "tampered"])
    header = next(csv.reader((graded["out"] / "gradebook.csv").open(encoding="utf-8")))
    assert header == ["student", "status", "reason", *IDS, "total", "max"]
    full = book["all_correct"]
    assert (full["status"], full["test_add"], full["test_total"], full["explain"], full["test_add_floats"],
            full["total"], full["max"]) == ("graded", "1", "2", "", "1", "4", "5")
    assert full["reason"] == "to grade by hand: explain"
    assert (book["released"]["status"], book["released"]["total"]) == ("graded", "0")
    assert book["missing"]["status"] == "missing"
    assert book["missing"]["reason"] == "no missing/fixture/fixture.ipynb"
    assert book["garbage"]["status"] == "invalid"
    assert "not a readable Jupyter notebook" in book["garbage"]["reason"]
    assert book["broken_metadata"]["status"] == "invalid"
    assert "schema_version" in book["broken_metadata"]["reason"]
    assert book["crashing"]["status"] == "graded" and book["crashing"]["test_add"] == "1"
    assert "not run: the kernel died in cell 4" in book["crashing"]["reason"]
    assert book["crashing"]["test_total"] == "0"
    assert "timed out: test_total" in book["hangs"]["reason"] and book["hangs"]["test_add"] == "1"
    assert book["tampered"]["reason"] == ("tampered (the grader used the source's cells): test_add_floats "
                                          "edited; cell 8 (test_add_floats): points restored to 1; "
                                          "to grade by hand: explain")
    assert book["tampered"]["test_add_floats"] == "0"


def test_the_lms_exports_follow_canvas_and_gradescope(graded: dict[str, Any]) -> None:
    canvas = list(csv.reader((graded["out"] / "canvas.csv").open(encoding="utf-8")))
    assert canvas[0] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "fixture"]
    assert canvas[1] == ["    Points Possible", "", "", "", "", "5"]
    assert ["all_correct", "", "", "all_correct", "", "4"] in canvas
    assert ["missing", "", "", "missing", "", ""] in canvas  # blank: Canvas's missing policy applies
    scope = {r["SID"]: r for r in rows(graded["out"] / "gradescope.csv")}
    head = ["Name", "SID", "Email", "Total Score", "Max Points", "Status"]
    assert list(next(iter(scope.values())))[:6] == head
    assert scope["all_correct"]["1: test_add (1.0 pts)"] == "1"
    assert scope["all_correct"]["Total Score"] == "4" and scope["all_correct"]["Max Points"] == "5"
    assert (scope["missing"]["Status"], scope["missing"]["Total Score"]) == ("Missing", "")
    assert scope["released"]["Status"] == "Graded"


def test_the_summary_counts_who_lost_each_criterion(graded: dict[str, Any]) -> None:
    summary = {r["grade_id"]: r for r in rows(graded["out"] / "summary.csv")}
    assert list(summary) == IDS
    # graded: all_correct, crashing, hangs, released, tampered
    assert summary["test_add"]["graded"] == "5" and summary["test_add"]["lost"] == "1"  # released
    assert summary["test_total"]["lost"] == "3"  # released, crashing, hangs
    assert summary["test_add_floats"]["lost"] == "3"  # released, crashing (not run), tampered (edit undone)
    assert summary["explain"]["to_grade_by_hand"] == "4" and summary["explain"]["lost"] == "1"
    assert "test_total: 3 of 5 students lost it (2 points)" in graded["stdout"]


def test_feedback_is_a_page_per_student_redacted(graded: dict[str, Any]) -> None:
    pages = sorted(p.stem for p in (graded["out"] / "feedback").glob("*.html"))
    assert pages == sorted(by_student(graded))
    page = (graded["out"] / "feedback" / "released.html").read_text(encoding="utf-8")
    assert "<h1>fixture: released</h1>" in page and "NotImplementedError" in page
    assert "total: 0 / 5" in page


def test_a_secret_in_a_students_output_is_redacted(tmp_path: Path) -> None:
    submitted = tmp_path / "submitted"
    nb = read(SUBMISSIONS / "all_correct" / "fixture.ipynb")
    cell(nb, "add").source = 'def add(a, b):\n    raise ValueError("token sk-ant-api03-' + "a" * 40 + '")'
    (submitted / "leaky" / "fixture").mkdir(parents=True)
    nbformat.write(nb, submitted / "leaky" / "fixture" / "fixture.ipynb")
    lab = load_criteria(SOURCE)
    (grade,) = grade_submissions(lab, submitted, ["leaky"], limits=Limits(timeout=TIMEOUT))
    message = next(r.message for r in grade.rows if r.grade_id == "test_add")
    assert message.startswith("ValueError: token ") and "a" * 40 not in message


def test_an_interruption_keeps_the_rows_already_graded(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    submitted = make_class(tmp_path)
    real = batch.grade_student
    first_done = threading.Event()

    def grade_student(lab: Any, sub: Path, student: str, limits: Any, cancel: Any, server: Any) -> Any:
        if student != "all_correct":
            first_done.wait(60)
            raise KeyboardInterrupt  # as Ctrl-C lands in the main thread while others run
        try:
            return real(lab, sub, student, limits, cancel, server)
        finally:
            first_done.set()

    monkeypatch.setattr(batch, "grade_student", grade_student)
    code, _, err = run_cli("lab", "grade", submitted, "--source", SOURCE, "--out", tmp_path / "out",
                           "--jobs", 1, "--timeout", TIMEOUT, "--no-progress")
    assert code == 130 and "interrupted: 1 of 8 students graded" in err
    assert [r["student"] for r in rows(tmp_path / "out" / "gradebook.csv")] == ["all_correct"]
    assert (tmp_path / "out" / "feedback" / "all_correct.html").is_file()


def test_bad_input_is_refused_before_anything_runs(tmp_path: Path) -> None:
    code, _, err = run_cli("lab", "grade", tmp_path / "nope", "--source", SOURCE, "--out", tmp_path / "o")
    assert code == 2 and "no such folder" in err and not (tmp_path / "o").exists()
    (tmp_path / "empty").mkdir()
    code, _, err = run_cli("lab", "grade", tmp_path / "empty", "--source", SOURCE, "--out", tmp_path / "o")
    assert code == 2 and "no student folders" in err
    code, _, err = run_cli("lab", "grade", tmp_path / "empty", "--source", SOURCE, "--jobs", 0)
    assert code == 2 and "--jobs must be 1 or more" in err
    (tmp_path / "o").mkdir()
    (tmp_path / "o" / "gradebook.csv").write_text("kept\n")
    (tmp_path / "s" / "x").mkdir(parents=True)
    code, _, err = run_cli("lab", "grade", tmp_path / "s", "--source", SOURCE, "--out", tmp_path / "o")
    assert code == 2 and "already exists; pass --force" in err
    assert (tmp_path / "o" / "gradebook.csv").read_text() == "kept\n"
    assert find_students(tmp_path / "s") == ["x"]
    shutil.rmtree(tmp_path / "s")


def test_progress_is_a_bar_on_a_terminal_and_a_line_per_student_otherwise() -> None:
    from agentos_kernel.labs.notebook.batch import StudentGrade
    from agentos_kernel.labs.notebook.gradebook import Progress

    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    plain, tty = io.StringIO(), Tty()
    for stream in (plain, tty):
        progress = Progress(stream, 2, width=4)
        progress(StudentGrade("ada", "graded", ""), 5)
        progress(StudentGrade("bob", "missing", "no bob/lab/lab.ipynb"), 5)
    assert plain.getvalue() == "graded 1/2: ada 0/5\ngraded 2/2: bob 0/5 (missing)\n"
    assert tty.getvalue() == "\r\x1b[K[##..] 1/2 ada 0/5\r\x1b[K[####] 2/2 bob 0/5 (missing)\n"


def test_a_machine_without_the_sandbox_is_refused_before_anything_is_written(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from agentos_kernel.labs.sandbox import run as sandbox

    no_landlock = sandbox.Protections(sandbox.probe().unshare, 0)
    monkeypatch.setattr(sandbox, "probe", lambda: no_landlock)
    (tmp_path / "s" / "ada" / "fixture").mkdir(parents=True)
    code, _, err = run_cli("lab", "grade", tmp_path / "s", "--source", SOURCE, "--out", tmp_path / "o")
    assert code == 2 and "cannot sandbox the notebooks' kernels" in err and "--unconfined" in err
    assert not (tmp_path / "o").exists()


def test_a_kernel_that_will_not_start_or_a_grader_bug_is_an_error_row(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from agentos_kernel.labs.notebook.gradebook import write_reports
    from agentos_kernel.labs.notebook.run import KernelStartError

    submitted = tmp_path / "submitted"
    for student in ("ada", "bob"):
        (submitted / student / "fixture").mkdir(parents=True)
        shutil.copy(SUBMISSIONS / "all_correct" / "fixture.ipynb", submitted / student / "fixture")
    failures = {"ada": KernelStartError("could not start a Python kernel (x); its log: (empty)"),
                "bob": RuntimeError("boom")}

    def check_notebook(path: Path, **kw: Any) -> Any:
        raise failures[path.parents[1].name]

    monkeypatch.setattr(batch, "check_notebook", check_notebook)
    lab = load_criteria(SOURCE)
    grades = {g.student: g for g in grade_submissions(lab, submitted, ["ada", "bob"])}
    assert (grades["ada"].status, grades["ada"].reason) == (
        "error", "could not start a Python kernel (x); its log: (empty)")
    assert grades["bob"].status == "error"
    assert grades["bob"].reason == ("the grader could not run it (RuntimeError: boom); please report it "
                                    "with the submission")
    write_reports(tmp_path / "out", lab, list(grades.values()))
    scope = {r["SID"]: r for r in rows(tmp_path / "out" / "gradescope.csv")}
    assert (scope["ada"]["Status"], scope["ada"]["Total Score"]) == ("Ungraded", "")
    assert ["bob", "", "", "bob", "", ""] in list(csv.reader((tmp_path / "out" / "canvas.csv").open()))
    summary = {r["grade_id"]: r for r in rows(tmp_path / "out" / "summary.csv")}
    assert summary["test_add"]["graded"] == "0"  # an error row is not counted as a loss


def test_ctrl_c_on_the_command_keeps_the_rows_already_graded(tmp_path: Path) -> None:
    import signal
    import subprocess
    import sys
    import time

    submitted = tmp_path / "submitted"
    for i in range(6):  # each hangs in test_total for the whole --timeout
        (submitted / f"s{i}" / "fixture").mkdir(parents=True)
        shutil.copy(SUBMISSIONS / "hangs" / "fixture.ipynb", submitted / f"s{i}" / "fixture")
    book = tmp_path / "out" / "gradebook.csv"
    proc = subprocess.Popen([sys.executable, "-m", "agentos_kernel.cli.main", "lab", "grade", str(submitted),
                             "--source", str(SOURCE), "--out", str(tmp_path / "out"), "--jobs", "1",
                             "--timeout", "3", "--no-progress"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and (not book.exists() or len(book.read_text().splitlines()) < 2):
        time.sleep(0.2)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    graded = [r["student"] for r in rows(book)]
    assert 1 <= len(graded) < 6 and "interrupted: " in err
    assert sorted(p.stem for p in (tmp_path / "out" / "feedback").glob("*.html")) == sorted(graded)
    assert all(r["status"] == "graded" and "timed out: test_total" in r["reason"] for r in rows(book))

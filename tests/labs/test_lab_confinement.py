"""Confinement of the grading side (agentos_kernel/labs/): a symlink inside a lab folder, a
submission or a log directory that points out is never followed when copying or reading,
and `lab release` never writes into its own source. Each is a one-line error (exit 2), a
failed criterion or an audit gap naming the link; a canary outside is never read or written.
(The runtime side is tests/test_confinement.py.)"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from agentos_kernel.labs.notebook.check import check_notebook
from agentos_kernel.labs.notebook.nbgrader_format import LabInputError
from agentos_kernel.labs.notebook.release import release
from agentos_kernel.labs.rubric import observability
from agentos_kernel.labs.rubric.submission import SubmissionFileError, files, read_text
from agentos_kernel.labs.sandbox.run import make_box

from ..helpers import Cli
from ._grade_fixtures import FULL_MARKS, LOG
from ._lab_fixtures import LAB, SOURCE

SECRET = "CANARY-91c2-do-not-leak"


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    d = tmp_path / "outside"
    d.mkdir()
    (d / "canary.txt").write_text(SECRET)
    (d / "notes.ipynb").write_text("{}")
    return d


def _listing(root: Path) -> dict[str, bytes | None]:
    return {p.relative_to(root).as_posix(): p.read_bytes() if p.is_file() else None
            for p in sorted(root.rglob("*"))}


def _one_line(err: str) -> str:
    assert err.endswith("\n") and err.count("\n") == 1 and err.startswith("agentos: error: "), err
    return err


@pytest.fixture
def lab(tmp_path: Path, outside: Path) -> Path:
    """A copy of the fixture lab folder with a data file symlinked out of it."""
    folder = tmp_path / "lab"
    shutil.copytree(LAB, folder)
    (folder / "data.txt").symlink_to(outside / "canary.txt")
    return folder


def test_release_refuses_a_lab_folder_with_a_link_out(lab: Path, outside: Path, tmp_path: Path,
                                                      cli: Cli) -> None:
    before = _listing(outside)
    code, out, err = cli("lab", "release", lab, tmp_path / "handout")
    assert code == 2 and out == ""
    assert "data.txt: a symlink leading outside" in _one_line(err)
    assert not (tmp_path / "handout").exists() and _listing(outside) == before


def test_release_never_writes_into_its_own_source(tmp_path: Path, cli: Cli) -> None:
    folder = tmp_path / "lab"
    shutil.copytree(LAB, folder)
    (tmp_path / "into_src").symlink_to(folder / "sub")
    before = _listing(folder)
    for dest in (folder / "handout", folder / SOURCE.name, folder, tmp_path / "into_src"):
        code, out, err = cli("lab", "release", folder, dest)
        assert code == 2 and out == "" and "lab folder" in _one_line(err), dest
    code, out, err = cli("lab", "release", folder / SOURCE.name, folder)
    assert code == 2 and "is the source notebook itself" in _one_line(err)
    assert _listing(folder) == before


def test_release_never_overwrites_a_source_file_through_a_nested_name(tmp_path: Path) -> None:
    """Releasing a/x into a/ would write a/x/f for x/f: a file of the source itself."""
    parent = tmp_path / "a"
    folder = parent / "x"
    shutil.copytree(LAB, folder)
    (folder / "x").mkdir()
    (folder / "x" / "data.csv").write_text("1,2\n")
    (folder / "data.csv").write_text("source\n")
    with pytest.raises(LabInputError, match="would overwrite a file of the lab folder"):
        release(folder, parent, force=True)
    assert (folder / "data.csv").read_text() == "source\n"


def test_lab_check_refuses_a_link_out_before_running_anything(lab: Path, outside: Path, cli: Cli) -> None:
    with pytest.raises(LabInputError, match="a symlink leading outside"):
        check_notebook(lab / SOURCE.name, timeout=2)
    code, out, err = cli("lab", "check", lab / SOURCE.name)
    assert code == 2 and out == "" and "data.txt: a symlink leading outside" in _one_line(err)


@pytest.fixture
def submission(tmp_path: Path, outside: Path) -> Path:
    sub = tmp_path / "students" / "20230001"
    shutil.copytree(FULL_MARKS, sub)
    return sub


def test_a_submitted_log_symlinked_out_fails_observability_unread(submission: Path, outside: Path) -> None:
    (submission / LOG).unlink()
    (submission / LOG).symlink_to(outside / "canary.txt")
    got = observability.check(submission)
    assert not got.passed and "leads outside the submission" in got.reason
    assert SECRET not in repr(got)


def test_submission_reads_and_listings_skip_links_out(submission: Path, outside: Path) -> None:
    (submission / "runtime" / "stolen.py").symlink_to(outside / "canary.txt")
    (submission / "skills" / "planted").symlink_to(outside)
    with pytest.raises(SubmissionFileError, match="leads outside the submission"):
        read_text(submission, "runtime/stolen.py")
    assert "runtime/stolen.py" not in list(files(submission, "runtime", (".py",)))
    assert not [f for f in files(submission, "skills", (".md", ".ipynb")) if f.startswith("skills/planted")]


def test_the_sandbox_copy_keeps_links_as_links(submission: Path, outside: Path, tmp_path: Path) -> None:
    (submission / "runtime" / "stolen.py").symlink_to(outside / "canary.txt")
    box = make_box(submission, tmp_path / "box")
    assert (box.sub / "runtime" / "stolen.py").is_symlink()  # copied as a link, its target unread
    assert not [p for p in box.root.rglob("*") if p.is_file() and not p.is_symlink()
                and SECRET.encode() in p.read_bytes()]


def test_audit_of_a_directory_does_not_read_a_session_linked_out(tmp_path: Path, outside: Path,
                                                                 cli: Cli) -> None:
    logs = tmp_path / "logs"
    (logs / "good").mkdir(parents=True)
    shutil.copy(FULL_MARKS / LOG, logs / "good" / ".events.jsonl")
    (outside / "s9").mkdir()
    (outside / "s9" / ".events.jsonl").write_text(SECRET + "\n")
    (logs / "s9").symlink_to(outside / "s9")
    code, out, _ = cli("audit", logs)
    assert code == 1 and "leads outside" in out and SECRET not in out
    assert "good/.events.jsonl" in out and ", clean" in out.split("\n")[0] + out


def test_conform_does_not_read_a_scenario_log_linked_out(tmp_path: Path, outside: Path, cli: Cli) -> None:
    logs = tmp_path / "logs"
    (logs / "canonical").mkdir(parents=True)
    (logs / "canonical" / ".events.jsonl").symlink_to(outside / "canary.txt")
    code, out, _ = cli("conform", logs, "--only", "canonical")
    assert code == 1 and "leads outside" in out and SECRET not in out


@pytest.mark.parametrize("target", ["sessions/s1/.events.jsonl", "class", "missing/grades.csv"])
def test_grade_refuses_an_output_it_must_not_write_before_grading(tmp_path: Path, cli: Cli,
                                                                  target: str) -> None:
    (tmp_path / "class" / "student1").mkdir(parents=True)  # an empty folder grades fast (zero)
    log = tmp_path / "sessions" / "s1" / ".events.jsonl"
    log.parent.mkdir(parents=True)
    log.write_text('{"not": "touched"}\n')
    code, out, err = cli("grade", tmp_path / "class", "--csv", tmp_path / target)
    assert code == 2 and out == "" and _one_line(err)
    assert log.read_text() == '{"not": "touched"}\n' and not (tmp_path / "missing").exists()

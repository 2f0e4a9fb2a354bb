"""Labs handed out and collected through an exchange folder (issue 22: "The hub hands each
student the released labs and collects submissions into the instructor's submitted/"):
`hand_out` / `agentos lab fetch`, `submit`, `collect`. The hub itself: tests/test_jupyterhub.py."""

from __future__ import annotations

import os
from pathlib import Path

import nbformat
import pytest

from agentos_kernel.cli.main import main
from agentos_kernel.labs.notebook.exchange import (
    INBOUND,
    OUTBOUND,
    collect,
    hand_out,
    make_exchange,
    submit,
)
from agentos_kernel.labs.notebook.nbgrader_format import BEGIN_HIDDEN, BEGIN_SOLUTION, LabInputError
from agentos_kernel.labs.notebook.release import release

from ..helpers import REPO

LAB = REPO / "notebooks" / "labs" / "lab-01-tools"
NB = "lab-01-tools.ipynb"
EARLY, LATE = "2026-12-01 10:00:00.000000 UTC", "2026-12-02 09:30:00.500000 UTC"


@pytest.fixture
def exchange(tmp_path: Path) -> Path:
    """An exchange with lab-01 released into outbound/."""
    ex = make_exchange(tmp_path / "exchange")
    release(LAB, ex / OUTBOUND / LAB.name)
    return ex


def _answer(nb_path: Path, text: str, dest: Path) -> Path:
    """A copy of a notebook with `text` appended as a cell (a student's work)."""
    nb = nbformat.read(nb_path, as_version=4)
    nb.cells.append(nbformat.v4.new_code_cell(text))
    dest.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, dest)
    return dest


def test_the_exchange_is_made_with_a_drop_box_inbound(exchange: Path) -> None:
    assert (exchange / INBOUND).stat().st_mode & 0o7777 == 0o1733
    assert (exchange / OUTBOUND).stat().st_mode & 0o777 == 0o755


def test_hand_out_gives_teaching_notebooks_and_released_labs_only(exchange: Path, tmp_path: Path) -> None:
    home = tmp_path / "alice" / "notebooks"
    done = hand_out(exchange, home)
    assert not done.refused
    assert (home / "00_tour.ipynb").is_file() and (home / "labs" / LAB.name / NB).is_file()
    text = (home / "labs" / LAB.name / NB).read_text(encoding="utf-8")
    assert BEGIN_SOLUTION not in text and BEGIN_HIDDEN not in text
    assert sorted(p.name for p in (home / "labs").iterdir()) == [LAB.name], "only what is in outbound/"


def test_hand_out_never_overwrites_a_students_work_and_adds_new_labs(exchange: Path, tmp_path: Path) -> None:
    home = tmp_path / "alice" / "notebooks"
    hand_out(exchange, home)
    mine = home / "labs" / LAB.name / NB
    _answer(mine, "my_answer = 42", mine)
    before = mine.read_bytes()
    release(REPO / "notebooks" / "labs" / "lab-02-hooks", exchange / OUTBOUND / "lab-02-hooks")
    again = hand_out(exchange, home)
    assert mine.read_bytes() == before, "the student's answers survive a second login"
    assert (home / "labs" / "lab-02-hooks" / "lab-02-hooks.ipynb") in again.added
    assert mine not in again.added


def test_an_instructor_copy_in_outbound_is_held_back(tmp_path: Path) -> None:
    ex = make_exchange(tmp_path / "exchange")
    (ex / OUTBOUND / LAB.name).mkdir()
    (ex / OUTBOUND / LAB.name / NB).write_bytes((LAB / NB).read_bytes())  # the source, not released
    done = hand_out(ex, tmp_path / "bob")
    assert not (tmp_path / "bob" / "labs" / LAB.name).exists()
    assert len(done.refused) == 1 and BEGIN_SOLUTION in done.refused[0]
    assert "agentos lab release" in done.refused[0]


def test_collect_takes_each_students_newest_submission_in_nbgraders_layout(
        exchange: Path, tmp_path: Path) -> None:
    released = exchange / OUTBOUND / LAB.name / NB
    first = _answer(released, "x = 'first'", tmp_path / "alice" / NB)
    submit(first, exchange, "alice", timestamp=EARLY)
    second = _answer(released, "x = 'second'", tmp_path / "alice2" / NB)
    submit(second, exchange, "alice", timestamp=LATE)
    submit(_answer(released, "x = 'bob'", tmp_path / "bob" / NB), exchange, "bob", timestamp=EARLY)
    submitted = tmp_path / "submitted"
    done = collect(exchange, submitted)
    assert sorted((s.student, s.lab) for s in done.collected) == [("alice", "lab-01-tools"),
                                                                  ("bob", "lab-01-tools")]
    alice = submitted / "alice" / "lab-01-tools"
    assert "x = 'second'" in (alice / NB).read_text(encoding="utf-8"), "the newest wins"
    assert (alice / "timestamp.txt").read_text(encoding="utf-8") == LATE
    assert "x = 'bob'" in (submitted / "bob" / "lab-01-tools" / NB).read_text(encoding="utf-8")
    again = collect(exchange, submitted)
    assert again.collected == () and again.unchanged == 2


def test_collect_skips_entries_that_are_not_submissions(exchange: Path, tmp_path: Path) -> None:
    inbound = exchange / INBOUND
    (inbound / "no-plus-signs").mkdir()
    (inbound / f"mallory+lab-01-tools+{EARLY}+x").symlink_to(LAB)  # a link to the instructor's lab
    bad = inbound / f"eve+lab-01-tools+{EARLY}+y"
    bad.mkdir()
    (bad / NB).symlink_to(LAB / NB)
    done = collect(exchange, tmp_path / "submitted")
    assert done.collected == ()
    assert len(done.skipped) == 3
    assert not (tmp_path / "submitted" / "mallory").exists() and not (tmp_path / "submitted" / "eve").exists()


@pytest.mark.parametrize("student", ["", "a+b", "../x", ".hidden", "a*"])
def test_submit_refuses_a_name_that_cannot_be_a_folder_of_the_exchange(
        exchange: Path, student: str) -> None:
    with pytest.raises(LabInputError, match="student"):
        submit(exchange / OUTBOUND / LAB.name / NB, exchange, student)
    assert os.listdir(exchange / INBOUND) == []


def test_submit_refuses_a_file_that_is_not_a_notebook(exchange: Path, tmp_path: Path) -> None:
    bogus = tmp_path / "lab-01-tools.ipynb"
    bogus.write_text("not json", encoding="utf-8")
    with pytest.raises(LabInputError, match="not a readable Jupyter notebook"):
        submit(bogus, exchange, "alice")
    assert os.listdir(exchange / INBOUND) == []


def test_the_cli_round_trip(exchange: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                            capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("AGENTOS_EXCHANGE", str(exchange))
    monkeypatch.setenv("JUPYTERHUB_USER", "alice")
    monkeypatch.chdir(tmp_path)
    assert main(["lab", "fetch"]) == 0
    assert "new file(s) in notebooks" in capsys.readouterr().out
    nb = Path("notebooks") / "labs" / LAB.name / NB
    assert main(["lab", "submit", str(nb)]) == 0
    assert f"submitted {nb} as alice's lab-01-tools at " in capsys.readouterr().out
    assert main(["lab", "collect", "submitted"]) == 0
    out = capsys.readouterr().out
    assert "1 collected, 0 already up to date, 0 skipped" in out
    assert (tmp_path / "submitted" / "alice" / "lab-01-tools" / NB).is_file()


def test_the_cli_says_how_to_name_the_exchange_and_the_student(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.delenv("AGENTOS_EXCHANGE", raising=False)
    monkeypatch.delenv("JUPYTERHUB_USER", raising=False)
    monkeypatch.chdir(tmp_path)
    assert main(["lab", "collect", "submitted"]) == 2
    assert "pass --exchange DIR or set AGENTOS_EXCHANGE" in capsys.readouterr().err
    assert main(["lab", "submit", "x.ipynb", "--exchange", str(tmp_path)]) == 2
    assert "pass --student ID" in capsys.readouterr().err
    assert not Path("submitted").exists()

"""The Lab 07 capstone (notebooks/labs/capstone-lab-07/): the starter a student copies scores
low under `agentos grade`, the instructor's reference solution full marks, and `agentos
notebooks` hands students the handout and the starter, never the solution."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from agentos_kernel.labs.notebook.handout import copy_notebooks
from agentos_kernel.labs.rubric.grade import grade_all
from agentos_kernel.labs.rubric.model import CRITERIA, CRITERION_KEYS

from ..helpers import REPO
from ._grade_fixtures import FULL_MARKS

SOURCES = REPO / "notebooks"
CAPSTONE = SOURCES / "labs" / "capstone-lab-07"
LAYOUT = ("schemas", "agents", "skills/greet/SKILL.md", "runtime", "tests", "sessions/example",
          "README.md")


def _digests(root: Path) -> dict[str, Path]:
    return {hashlib.sha256(p.read_bytes()).hexdigest(): p for p in root.rglob("*") if p.is_file()}


@pytest.fixture(scope="module")
def grades() -> dict[str, dict[str, bool]]:
    """`agentos grade` on the capstone folder: its two subfolders are the two submissions."""
    return {g.student: {r.criterion: r.passed for r in g.results} for g in grade_all(CAPSTONE, timeout=30)}


def test_the_reference_solution_is_the_graders_full_marks_fixture() -> None:
    assert FULL_MARKS == CAPSTONE / "solution"


def test_the_solution_scores_full_marks_and_the_starter_low(grades: dict[str, dict[str, bool]]) -> None:
    assert set(grades) == {"solution", "starter"}
    assert grades["solution"] == dict.fromkeys(CRITERION_KEYS, True)
    assert sum(grades["starter"].values()) <= 1, grades["starter"]


def test_the_starter_is_in_the_spec_submission_layout() -> None:
    for part in LAYOUT:
        assert (CAPSTONE / "starter" / part).exists(), part
        assert (CAPSTONE / "solution" / part).exists(), part
    assert (CAPSTONE / "solution" / "replay_snapshot.json").is_file()
    assert (CAPSTONE / "solution" / "sessions" / "example" / ".events.jsonl").is_file()


def test_the_handout_names_every_criterion_and_the_checklist() -> None:
    text = (CAPSTONE / "README.md").read_text(encoding="utf-8")
    assert text.startswith("# Lab 07 · Weeks 13–14: ")
    for c in CRITERIA:
        assert f"| {c.title} |" in text, c.title
    for code in ("TOOL_NOT_FOUND", "TOOL_NOT_ALLOWED", "MALFORMED_AGENT_MESSAGE", "WRITE_CONFLICT",
                 "PROVIDER_ERROR", "skill.complete", "agentos grade assignments/lab-07/"):
        assert code in text, code
    assert text.count("- [ ] ") == 14  # the spec's core checklist, one box per item


def test_students_get_the_handout_and_starter_never_the_solution(tmp_path: Path) -> None:
    copy_notebooks(tmp_path / "class", src=SOURCES)
    out = tmp_path / "class" / "labs" / "capstone-lab-07"
    assert (out / "README.md").read_bytes() == (CAPSTONE / "README.md").read_bytes()
    starter = [p for p in (CAPSTONE / "starter").rglob("*") if p.is_file()]
    assert starter
    for p in starter:
        assert (out / p.relative_to(CAPSTONE)).read_bytes() == p.read_bytes()
    assert not (out / "solution").exists()
    leaked = set(_digests(tmp_path / "class")) & set(_digests(CAPSTONE / "solution"))
    assert not leaked, f"a solution file reached the students: {[str(p) for p in leaked][:3]}"


def test_the_instructor_gets_the_solution(tmp_path: Path) -> None:
    copy_notebooks(tmp_path / "inst", instructor=True, src=SOURCES)
    out = tmp_path / "inst" / "labs" / "capstone-lab-07" / "solution"
    for p in (p for p in (CAPSTONE / "solution").rglob("*") if p.is_file() and "__pycache__" not in p.parts):
        assert (out / p.relative_to(CAPSTONE / "solution")).read_bytes() == p.read_bytes()

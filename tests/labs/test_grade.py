"""`agentos grade` on the Lab 07 fixture set: the expected per-criterion table, the reasons,
the outputs (table, CSV, HTML, JSON, DataFrame), and grading going on past a hanging suite.

One CLI run over the whole set (11 submissions, a 4 s timeout for the hanging one) serves the
module: about 7 s on 2 cores; the library run over a subset adds about 3 s.
"""

from __future__ import annotations

import contextlib
import csv
import hashlib
import io
import json
from pathlib import Path

import pytest

from agentos_kernel.cli.main import main as cli_main
from agentos_kernel.labs.rubric.grade import grade_all
from agentos_kernel.labs.rubric.model import CRITERION_KEYS
from agentos_kernel.labs.rubric.report import Progress, to_frame, to_json

from ._grade_fixtures import EXPECTED, build_submissions

TIMEOUT = "4"
# Key words each failing criterion's reason must contain (the cause, named).
REASONS: dict[tuple[str, str], tuple[str, ...]] = {
    ("tampered_snapshot", "observability"): ("replay_snapshot.json", "output", "Hello, Bob!", "Hello, Ada!"),
    ("missing_tool_result", "observability"): ("sessions/example/.events.jsonl", "audit", "tool"),
    ("invalid_skill", "contract_discipline"): ("skills/farewell/SKILL.md", "description",
                                               "skill_frontmatter_v1"),
    ("hangs", "safety"): ("did not finish within 4 s", "killed"),
    ("hangs", "determinism"): ("run 1", "did not finish"),
    ("reads_outside", "safety"): ("tried to read /etc/passwd", "full_marks/README.md", "denied"),
    ("reads_outside", "determinism"): ("/etc/passwd",),
    ("crashes", "safety"): ("crashed", "SIGSEGV"),
    ("crashes", "determinism"): ("SIGSEGV",),
    ("network", "safety"): ("connect to 127.0.0.1:9", "no network"),
    ("network", "determinism"): ("127.0.0.1:9",),
    ("no_readme_sections", "documentation"): ("README.md", "run commands", "known limitations",
                                              "event trace example"),
    ("direct_io", "runtime_boundary"): ("runtime/agents.py:", "write_text", "dispatch_tool"),
    ("nondeterministic", "determinism"): ("differ", "output_tokens", "llm.response", "run 1", "run 2"),
}


def _tree(root: Path) -> dict[str, str]:
    return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file()
            else "dir" for p in sorted(root.rglob("*"))}


@pytest.fixture(scope="module")
def lab07(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_submissions(tmp_path_factory.mktemp("assignments"))


@pytest.fixture(scope="module")
def graded(lab07: Path, tmp_path_factory: pytest.TempPathFactory) -> dict:
    """`agentos grade lab-07 --csv --html --timeout 4` once for the module."""
    out_dir = tmp_path_factory.mktemp("grade-out")
    before = _tree(lab07)
    stdout, stderr = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        code = cli_main(["grade", str(lab07), "--csv", str(out_dir / "grades.csv"), "--html",
                         str(out_dir / "grades.html"), "--timeout", TIMEOUT, "--progress"])
    return {"code": code, "out": stdout.getvalue(), "err": stderr.getvalue(), "dir": out_dir,
            "before": before, "after": _tree(lab07)}


def _table(out: str) -> dict[str, tuple[int, ...]]:
    rows = {}
    for line in out.splitlines()[1:]:
        if not line.strip():
            break
        name, *marks, total = line.split()
        rows[name] = tuple(int(m == "✓") for m in marks)
        assert total == f"{sum(rows[name])}/6"
    return rows


def test_grade_prints_the_expected_table(graded: dict) -> None:
    assert graded["code"] == 0, graded["err"]
    head = graded["out"].splitlines()[0].split()
    assert head == ["student", "boundary", "contract", "observ", "safety", "determ", "docs", "total"]
    assert _table(graded["out"]) == EXPECTED


def test_each_failure_is_printed_with_its_cause(graded: dict) -> None:
    failures = [ln.strip() for ln in graded["out"].split("failures:\n", 1)[1].splitlines() if ln.strip()]
    expected_failures = {(s, k) for s, row in EXPECTED.items()
                         for k, ok in zip(CRITERION_KEYS, row, strict=True) if not ok}
    printed = {tuple(ln.split(":", 1)[0].split(" ", 1)) for ln in failures if ":" in ln and " " in ln}
    assert expected_failures <= printed
    for (student, criterion), words in REASONS.items():
        line = next(ln for ln in failures if ln.startswith(f"{student} {criterion}:"))
        for word in words:
            assert word in line, (student, criterion, word, line)


def test_grading_goes_on_after_a_hanging_suite(graded: dict) -> None:
    rows = _table(graded["out"])
    assert set(rows) == set(EXPECTED)  # every submission graded, the hanging one included
    assert rows["full_marks"] == (1,) * 6
    progress = [ln for ln in graded["err"].splitlines() if ln.startswith("[")]
    assert len(progress) == len(EXPECTED) and progress[-1].startswith(f"[{'#' * 30}] {len(EXPECTED)}/")


def test_submission_folders_are_never_written(graded: dict) -> None:
    assert graded["after"] == graded["before"]


def test_csv_has_a_row_per_student_and_the_reasons(graded: dict) -> None:
    with (graded["dir"] / "grades.csv").open(encoding="utf-8") as f:
        rows = {r["student"]: r for r in csv.DictReader(f)}
    assert {s: tuple(int(rows[s][k]) for k in CRITERION_KEYS) for s in rows} == EXPECTED
    assert rows["full_marks"]["total"] == "6" and rows["full_marks"]["language"] == "python"
    assert "Hello, Bob!" in rows["tampered_snapshot"]["observability_reason"]
    assert "SIGSEGV" in rows["crashes"]["safety_reason"]


def test_html_report_gives_per_criterion_feedback(graded: dict) -> None:
    page = (graded["dir"] / "grades.html").read_text(encoding="utf-8")
    for student, row in EXPECTED.items():
        assert f"id='{student}'" in page
        assert f"{student} — {sum(row)}/6" in page
    assert page.count("<td class='fail'") == sum(6 - sum(r) for r in EXPECTED.values())
    assert "tried to read /etc/passwd" in page and "Hello, Bob!" in page
    assert "sandbox: namespaces" in page and "landlock: Landlock ABI" in page


@pytest.fixture(scope="module")
def subset(tmp_path_factory: pytest.TempPathFactory) -> tuple[list, str]:
    root = build_submissions(tmp_path_factory.mktemp("subset"), ("full_marks", "reads_outside",
                                                               "tampered_snapshot"))
    stream = io.StringIO()
    grades = grade_all(root, jobs=2, timeout=float(TIMEOUT), progress=Progress(stream))
    return grades, stream.getvalue()


def test_grade_all_reports_progress_and_sorts_by_student(subset: tuple[list, str]) -> None:
    grades, progress = subset
    assert [g.student for g in grades] == ["full_marks", "reads_outside", "tampered_snapshot"]
    assert len(progress.splitlines()) == 3 and "3/3" in progress.splitlines()[-1]


def test_dataframe_for_a_notebook(subset: tuple[list, str]) -> None:
    grades, _ = subset
    frame = to_frame(grades)
    assert list(frame.index) == ["full_marks", "reads_outside", "tampered_snapshot"]
    assert frame.loc["full_marks", "total"] == 6
    assert not frame.loc["reads_outside", "safety"] and frame.loc["reads_outside", "documentation"]
    assert "/etc/passwd" in frame.loc["reads_outside", "safety_reason"]
    assert [c for c in frame.columns if c in CRITERION_KEYS] == list(CRITERION_KEYS)


def test_json_has_every_detail(subset: tuple[list, str]) -> None:
    grades, _ = subset
    data = json.loads(to_json(grades))
    assert data["criteria"] == list(CRITERION_KEYS)
    full = data["grades"][0]
    assert full["student"] == "full_marks" and full["total"] == 6
    safety = next(r for r in full["results"] if r["criterion"] == "safety")
    assert any("TOOL_NOT_FOUND" not in d and "unknown tool: passed" in d for d in safety["details"])
    assert any(p.startswith("landlock:") for p in full["protections"])

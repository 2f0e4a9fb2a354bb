"""The files `agentos lab grade` writes for a class: the gradebook, two LMS imports, a feedback
page per student and a summary per criterion. Every text in them comes from StudentGrades,
which are redacted (batch.py).

- `gradebook.csv`: student, status, reason, one column per grade_id (points earned; empty for
  a written answer waiting for a person), total, max. Appended to as each student lands (an
  interrupted run keeps its rows), then rewritten sorted by student.
- `canvas.csv`: Canvas's gradebook import: `Student, ID, SIS User ID, SIS Login ID, Section`,
  then one column named after the lab, a `Points Possible` row under the header. The student
  folder (nbgrader's student id) goes in Student and SIS Login ID, which Canvas matches on.
- `gradescope.csv`: the columns of a Gradescope assignment's score export: `Name, SID, Email,
  Total Score, Max Points, Status`, then one `N: grade_id (P pts)` column per criterion.
- `summary.csv`: per criterion, how many students were graded on it and how many lost points.
- `feedback/<student>.html`: the student's table of criteria with the reason of each loss.
"""

from __future__ import annotations

import csv
import html
import os
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any

from .batch import ERROR, GRADED, INVALID, MISSING, Lab, StudentGrade

GRADEBOOK, CANVAS, GRADESCOPE, SUMMARY, FEEDBACK = (
    "gradebook.csv", "canvas.csv", "gradescope.csv", "summary.csv", "feedback")
CANVAS_IDS = ("Student", "ID", "SIS User ID", "SIS Login ID", "Section")
GRADESCOPE_STATUS = {GRADED: "Graded", MISSING: "Missing", INVALID: "Graded", ERROR: "Ungraded"}


def _num(x: float | None) -> str:
    return "" if x is None else f"{x:g}"


def gradebook_header(lab: Lab) -> list[str]:
    return ["student", "status", "reason", *(c.grade_id for c in lab.criteria), "total", "max"]


def gradebook_row(lab: Lab, g: StudentGrade) -> list[str]:
    return [g.student, g.status, g.reason, *(_num(g.points(c.grade_id)) for c in lab.criteria),
            _num(g.total), _num(lab.max_total)]


class GradebookWriter:
    """gradebook.csv, one row written (and flushed) per student as each lands."""

    def __init__(self, path: Path, lab: Lab) -> None:
        self.path, self.lab = path, lab
        self._file: IO[str] = path.open("w", encoding="utf-8", newline="")
        self._csv = csv.writer(self._file)
        self._csv.writerow(gradebook_header(lab))
        self._file.flush()

    def add(self, grade: StudentGrade) -> None:
        self._csv.writerow(gradebook_row(self.lab, grade))
        self._file.flush()

    def close(self) -> None:
        self._file.close()


def _write(path: Path, rows: Sequence[Sequence[Any]]) -> None:
    """Write a CSV whole: to a temp file beside it, then renamed over it."""
    tmp = path.with_name(f".{path.name}.tmp")
    with tmp.open("w", encoding="utf-8", newline="") as f:
        csv.writer(f).writerows(rows)
    os.replace(tmp, path)


def canvas_rows(lab: Lab, grades: Sequence[StudentGrade]) -> list[list[str]]:
    """A blank score for a missing or ungradable submission, so Canvas's own missing policy
    applies and a person looks at it; 0 for a notebook that is not a lab notebook."""
    rows = [[*CANVAS_IDS, lab.name], ["    Points Possible", "", "", "", "", _num(lab.max_total)]]
    for g in grades:
        score = "" if g.status in (MISSING, ERROR) else _num(g.total)
        rows.append([g.student, "", "", g.student, "", score])
    return rows


def gradescope_rows(lab: Lab, grades: Sequence[StudentGrade]) -> list[list[str]]:
    questions = [f"{i}: {c.grade_id} ({c.points:.1f} pts)" for i, c in enumerate(lab.criteria, 1)]
    rows = [["Name", "SID", "Email", "Total Score", "Max Points", "Status", *questions]]
    for g in grades:
        blank = g.status in (MISSING, ERROR)
        scores = ["" if blank else _num(g.points(c.grade_id)) for c in lab.criteria]
        rows.append([g.student, g.student, "", "" if blank else _num(g.total), _num(lab.max_total),
                     GRADESCOPE_STATUS[g.status], *scores])
    return rows


def summary_rows(lab: Lab, grades: Sequence[StudentGrade]) -> list[list[str]]:
    """Per criterion: students graded on it, how many lost points on it (of those), and how
    many wait for a person. Missing and ungradable submissions are not counted."""
    rows = [["grade_id", "points", "graded", "lost", "lost_share", "to_grade_by_hand"]]
    scored = [g for g in grades if g.status == GRADED]
    for c in lab.criteria:
        earned = [g.points(c.grade_id) for g in scored]
        auto = [p for p in earned if p is not None]
        lost = sum(1 for p in auto if p < c.points)
        share = f"{lost / len(auto):.0%}" if auto else ""
        rows.append([c.grade_id, _num(c.points), str(len(auto)), str(lost), share,
                     str(sum(1 for p in earned if p is None))])
    return rows


def feedback_html(lab: Lab, g: StudentGrade) -> str:
    """One student's feedback page: what each criterion earned and why points were lost."""
    e = html.escape
    head = "".join(f"<th>{h}</th>" for h in ("criterion", "points", "max", "status", "why"))
    body = "".join(
        "<tr>" + "".join(f"<td>{e(v)}</td>" for v in (
            r.grade_id, "-" if r.points is None else _num(r.points), _num(r.max_points), r.status,
            r.message)) + "</tr>" for r in g.rows)
    reason = f"<p><b>{e(g.status)}</b>: {e(g.reason)}</p>" if g.reason or g.status != GRADED else ""
    return (f"<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>{e(lab.name)}: {e(g.student)}"
            f"</title></head><body>\n<h1>{e(lab.name)}: {e(g.student)}</h1>\n"
            f"<p>total: {_num(g.total)} / {_num(lab.max_total)}</p>\n{reason}\n"
            + (f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>\n" if g.rows else "")
            + "</body></html>\n")  # the notes are not shown: every cell with hidden tests is "restored"


def write_reports(out: Path, lab: Lab, grades: Sequence[StudentGrade]) -> list[Path]:
    """Write every file for `grades` (sorted by student) into `out`; returns them."""
    grades = sorted(grades, key=lambda g: g.student)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for name, rows in ((GRADEBOOK, [gradebook_header(lab), *(gradebook_row(lab, g) for g in grades)]),
                       (CANVAS, canvas_rows(lab, grades)), (GRADESCOPE, gradescope_rows(lab, grades)),
                       (SUMMARY, summary_rows(lab, grades))):
        _write(out / name, rows)
        written.append(out / name)
    (out / FEEDBACK).mkdir(exist_ok=True)
    for g in grades:
        page = out / FEEDBACK / f"{g.student}.html"
        page.write_text(feedback_html(lab, g), encoding="utf-8")
        written.append(page)
    return written


class Progress:
    """On a terminal, a bar redrawn in place; else one plain line per student (a log)."""

    def __init__(self, stream: IO[str], total: int, width: int = 30) -> None:
        self.stream, self.total, self.width, self.done = stream, total, width, 0
        self.live = bool(getattr(stream, "isatty", lambda: False)())

    def __call__(self, g: StudentGrade, max_total: float) -> None:
        self.done += 1
        what = f"{g.student} {_num(g.total)}/{_num(max_total)}"
        what += "" if g.status == GRADED else f" ({g.status})"
        if self.live:
            filled = self.width * self.done // self.total
            bar = "#" * filled + "." * (self.width - filled)
            self.stream.write(f"\r\x1b[K[{bar}] {self.done}/{self.total} {what}"
                              + ("\n" if self.done == self.total else ""))
        else:
            self.stream.write(f"graded {self.done}/{self.total}: {what}\n")
        self.stream.flush()

    def stop(self) -> None:
        """End a bar left part-drawn (an interruption)."""
        if self.live and self.done < self.total:
            self.stream.write("\n")
            self.stream.flush()

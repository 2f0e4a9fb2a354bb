"""Grades out: the printed table, CSV, a pandas DataFrame, JSON and an HTML report with
per-criterion feedback; and the progress bar shown while grading."""

from __future__ import annotations

import csv
import html
import io
import json
from collections.abc import Sequence
from typing import IO, Any

from .model import CRITERIA, CRITERION_KEYS, SubmissionGrade

MARK = {True: "✓", False: "✗"}


def table(grades: Sequence[SubmissionGrade]) -> list[str]:
    """One line per student: a ✓/✗ column per criterion and the total."""
    width = max([len("student"), *(len(g.student) for g in grades)])
    head = f"{'student':<{width}}  " + "  ".join(f"{c.short:^8}" for c in CRITERIA) + "  total"
    lines = [head]
    for g in grades:
        marks = "  ".join(f"{MARK[g.result(c.key).passed]:^8}" for c in CRITERIA)
        lines.append(f"{g.student:<{width}}  {marks}  {g.total}/{len(CRITERIA)}")
    return lines


def failures(grades: Sequence[SubmissionGrade]) -> list[str]:
    """One line per failed criterion: student, criterion, reason."""
    return [f"{g.student} {r.criterion}: {r.reason}" for g in grades for r in g.results if not r.passed]


def rows(grades: Sequence[SubmissionGrade]) -> list[dict[str, Any]]:
    """The flat records behind CSV and the DataFrame: student, language, a bool per criterion,
    total, then the reason for each criterion (`<criterion>_reason`)."""
    out = []
    for g in grades:
        row: dict[str, Any] = {"student": g.student, "language": g.language}
        row.update({k: g.result(k).passed for k in CRITERION_KEYS})
        row["total"] = g.total
        row.update({f"{k}_reason": g.result(k).reason for k in CRITERION_KEYS})
        out.append(row)
    return out


def write_csv(grades: Sequence[SubmissionGrade], stream: IO[str]) -> None:
    """CSV with the columns of `rows` (criteria as 1/0)."""
    fields = ["student", "language", *CRITERION_KEYS, "total", *(f"{k}_reason" for k in CRITERION_KEYS)]
    w = csv.DictWriter(stream, fieldnames=fields, lineterminator="\n")
    w.writeheader()
    for row in rows(grades):
        w.writerow({k: int(v) if isinstance(v, bool) else v for k, v in row.items()})


def to_csv(grades: Sequence[SubmissionGrade]) -> str:
    """The CSV as a string."""
    buf = io.StringIO()
    write_csv(grades, buf)
    return buf.getvalue()


def to_frame(grades: Sequence[SubmissionGrade]) -> Any:
    """A pandas DataFrame indexed by student (pandas is imported here, on use)."""
    import pandas as pd

    columns = ["student", "language", *CRITERION_KEYS, "total", *(f"{k}_reason" for k in CRITERION_KEYS)]
    return pd.DataFrame(rows(grades), columns=columns).set_index("student")


def to_json(grades: Sequence[SubmissionGrade]) -> str:
    """Every grade with every detail, as JSON."""
    return json.dumps({"criteria": [c.key for c in CRITERIA], "grades": [g.to_dict() for g in grades]},
                      indent=2, ensure_ascii=False)


_CSS = """body{font-family:sans-serif;margin:2em;max-width:70em}table{border-collapse:collapse}
td,th{border:1px solid #ccc;padding:.3em .6em;text-align:center}td.s{text-align:left}
.pass{background:#e6f4ea;color:#137333}.fail{background:#fce8e6;color:#a50e0e}
li.pass,li.fail{list-style:none;margin:.4em 0;padding:.3em .6em}.warn{color:#a50e0e}
small{color:#555}"""


def to_html(grades: Sequence[SubmissionGrade], title: str = "Lab grades") -> str:
    """A self-contained HTML report: the summary table, then per student each criterion with
    its reason and details, and the sandbox protections that held (or did not)."""
    e = html.escape
    parts = [f"<!doctype html><html><head><meta charset='utf-8'><title>{e(title)}</title>",
             f"<style>{_CSS}</style></head><body><h1>{e(title)}</h1><table><tr><th>student</th>"]
    parts += [f"<th>{e(c.title)}</th>" for c in CRITERIA] + ["<th>total</th></tr>"]
    for g in grades:
        parts.append(f"<tr><td class='s'><a href='#{e(g.student)}'>{e(g.student)}</a></td>")
        for c in CRITERIA:
            r = g.result(c.key)
            cls = "pass" if r.passed else "fail"
            parts.append(f"<td class='{cls}' title='{e(r.reason)}'>{MARK[r.passed]}</td>")
        parts.append(f"<td>{g.total}/{len(CRITERIA)}</td></tr>")
    parts.append("</table>")
    for g in grades:
        parts.append(f"<h2 id='{e(g.student)}'>{e(g.student)} — {g.total}/{len(CRITERIA)}</h2>"
                     f"<p><small>{e(g.path)} · {e(g.language)} · graded in {g.seconds:.1f} s</small></p><ul>")
        for c in CRITERIA:
            r = g.result(c.key)
            cls = "pass" if r.passed else "fail"
            parts.append(f"<li class='{cls}'><b>{MARK[r.passed]} {e(c.title)}</b>: {e(r.reason)}")
            if r.details:
                parts.append("<ul>" + "".join(f"<li>{e(d)}</li>" for d in r.details) + "</ul>")
            parts.append("</li>")
        parts.append("</ul>")
        if g.protections:
            parts.append("<p><small>sandbox: " + "; ".join(e(p) for p in g.protections) + "</small></p>")
        if g.unprotected:
            parts.append("<p class='warn'>sandbox protections missing: "
                         + "; ".join(e(p) for p in g.unprotected) + "</p>")
    parts.append("</body></html>")
    return "\n".join(parts)


class Progress:
    """A progress bar over submissions on a stream (stderr): redrawn in place on a terminal,
    one line per submission otherwise."""

    def __init__(self, stream: IO[str], width: int = 30) -> None:
        self.stream = stream
        self.width = width
        self.live = bool(getattr(stream, "isatty", lambda: False)())

    def __call__(self, done: int, total: int, grade: SubmissionGrade) -> None:
        filled = self.width * done // total
        bar = "#" * filled + "." * (self.width - filled)
        text = f"[{bar}] {done}/{total} {grade.student} {grade.total}/{len(CRITERIA)}"
        if self.live:
            self.stream.write("\r" + text + ("\n" if done == total else ""))
        else:
            self.stream.write(text + "\n")
        self.stream.flush()

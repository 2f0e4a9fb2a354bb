"""Scoring a run lab notebook: nbgrader's rule for one grade cell, and the score table.

The rule is nbgrader/utils.py `determine_grade` (with `get_partial_grade`): a code test cell
with an error output, or any output on stderr, scores 0; else its first `execute_result`
that reads as a number in [0, points] is partial credit; else full points. A solution cell
that is also graded (a written answer) is for a person to grade, unless it is unchanged
from the released stub, which scores 0.
"""

from __future__ import annotations

import html
import re
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from .nbgrader_format import compute_checksum, is_solution, meta
from .run import TIMEOUT_ENAME

# Row statuses. Only "passed" and "partial" earn points; "manual" has no points yet.
PASSED, PARTIAL, FAILED, TIMEOUT, NOT_RUN = "passed", "partial", "failed", "timeout", "not run"
MANUAL, NO_ANSWER, MISSING = "manual", "no answer", "missing"


@dataclass(frozen=True)
class ScoreRow:
    """The score of one grade cell."""

    grade_id: str
    """The cell's nbgrader grade_id."""
    cell: int | None
    """Index of the cell in the notebook (None: the cell is missing from it)."""
    points: float | None
    """Points earned; None when a person has to grade it (a written answer)."""
    max_points: float
    """The cell's points."""
    status: str
    """passed, partial, failed, timeout, not run, manual, no answer or missing."""
    message: str
    """Why: the first line of the error, what went to stderr, ... ('' when passed)."""


@dataclass(frozen=True)
class LabScore:
    """The per-cell scores of one checked notebook."""

    notebook: Path
    """The notebook that was checked."""
    source: Path | None
    """The instructor notebook its locked cells were restored from, if any."""
    rows: tuple[ScoreRow, ...]
    """One per grade cell, in notebook order (cells missing from the notebook last)."""
    notes: tuple[str, ...] = ()
    """What was changed before running (cells restored from the source, ids dropped)."""
    protections: tuple[str, ...] = ()
    """Each sandbox protection that held for the kernel: 'name: what it enforced'."""
    unprotected: tuple[str, ...] = ()
    """Each one this machine could not apply, with its consequence."""
    attempts: tuple[str, ...] = ()
    """What the notebook's code tried outside its sandbox, by cell ('cell 3: tried to read ...')."""
    hidden: tuple[str, ...] | None = ()
    """grade_ids of the cells whose hidden tests did not run (a self-check without the source);
    None when it is not known whether any cell has some (no source of this lab was found)."""

    @property
    def total(self) -> float:
        """Points earned by the autograded cells."""
        return sum(r.points for r in self.rows if r.points is not None)

    @property
    def max_total(self) -> float:
        """Points of every grade cell (written answers included)."""
        return sum(r.max_points for r in self.rows)

    @property
    def pending(self) -> float:
        """Points waiting for a person (written answers)."""
        return sum(r.max_points for r in self.rows if r.points is None)

    @property
    def points_lost(self) -> bool:
        """True when an autograded cell earned less than its points."""
        return any(r.points is not None and r.points < r.max_points for r in self.rows)

    def total_line(self) -> str:
        """The total; for a self-check, the points of the cells whose every test ran here and
        how many more hidden tests decide, never a total the grader may not give."""
        pending = f" ({_num(self.pending)} to grade by hand)" if self.pending else ""
        if self.hidden is None:
            return (f"visible: {_num(self.total)} / {_num(self.max_total)}{pending}; the grader "
                    "may run hidden tests too (no source of this lab was found to say how many)")
        if not self.hidden:
            return f"total: {_num(self.total)} / {_num(self.max_total)}{pending}"
        shown = [r for r in self.rows if r.grade_id not in self.hidden]
        held = [r for r in self.rows if r.grade_id in self.hidden]
        earned = sum(r.points for r in shown if r.points is not None)
        passing = sum(r.points for r in held if r.points is not None)
        return (f"visible: {_num(earned)} / {_num(sum(r.max_points for r in shown))}{pending}; "
                f"{_num(sum(r.max_points for r in held))} more points in hidden tests the grader "
                f"runs (the checks shown here pass for {_num(passing)} of them)")

    def to_dict(self) -> dict[str, Any]:
        return {"notebook": str(self.notebook), "source": str(self.source) if self.source else None,
                "total": self.total, "max": self.max_total, "pending": self.pending,
                "rows": [asdict(r) for r in self.rows], "notes": list(self.notes),
                "hidden": None if self.hidden is None else list(self.hidden),
                "sandbox": {"held": list(self.protections), "missing": list(self.unprotected),
                            "attempts": list(self.attempts)}}

    def sandbox_line(self) -> str:
        """One line: the protections that held by name, and those missing with why."""
        held = ", ".join(dict.fromkeys(p.split(":", 1)[0] for p in self.protections)) or "none"
        missing = f"; MISSING: {'; '.join(self.unprotected)}" if self.unprotected else ""
        return f"sandbox held: {held}{missing}"

    def to_frame(self) -> Any:
        """The rows as a pandas DataFrame (grade_id, points, max, status, message)."""
        import pandas as pd

        return pd.DataFrame([{"grade_id": r.grade_id, "points": r.points, "max": r.max_points,
                              "status": r.status, "message": r.message} for r in self.rows])

    def table_lines(self) -> list[str]:
        """The score table as fixed-width text lines (the CLI prints these)."""
        head = ("grade_id", "points", "max", "status", "message")
        cells = [(r.grade_id, "-" if r.points is None else _num(r.points), _num(r.max_points),
                  r.status, r.message) for r in self.rows]
        widths = [max(len(c[i]) for c in [head, *cells]) for i in range(4)]
        return [("  ".join(c[i].ljust(widths[i]) for i in range(4)) + "  " + c[4]).rstrip()
                for c in [head, *cells]]

    def _repr_html_(self) -> str:
        head = "".join(f"<th>{h}</th>" for h in ("grade_id", "points", "max", "status", "message"))
        body = "".join(
            "<tr>" + "".join(f"<td>{html.escape(str(v))}</td>" for v in (
                r.grade_id, "-" if r.points is None else _num(r.points), _num(r.max_points),
                r.status, r.message)) + "</tr>" for r in self.rows)
        return (f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
                f"<p><b>{html.escape(self.total_line())}</b></p>")


def _num(x: float) -> str:
    return f"{x:g}"


def score_cell(cell: Any, index: int, not_run: str | None) -> ScoreRow:
    """Score one grade cell of a run notebook by nbgrader's determine_grade."""
    gid, max_points = meta(cell)["grade_id"], float(meta(cell)["points"])

    def row(points: float | None, status: str, message: str = "") -> ScoreRow:
        return ScoreRow(gid, index, points, max_points, status, message)

    if is_solution(cell):
        if "checksum" in meta(cell) and meta(cell)["checksum"] == compute_checksum(cell):
            return row(0.0, NO_ANSWER, "unchanged from the released notebook")
        return row(None, MANUAL, "a written answer: grade it by hand")
    if cell.cell_type != "code":
        return row(None, MANUAL, "not a code cell: grade it by hand")
    if not_run:
        return row(0.0, NOT_RUN, not_run)
    timeouts = [o for o in cell.outputs if o.output_type == "error" and o.get("ename") == TIMEOUT_ENAME]
    if timeouts:  # the interrupt's KeyboardInterrupt may be recorded first; the timeout is the cause
        return row(0.0, TIMEOUT, timeouts[0].get("evalue", ""))
    for out in cell.outputs:
        if out.output_type == "error":
            return row(0.0, FAILED, error_message(out))
        if out.output_type == "stream" and out.get("name") == "stderr":
            return row(0.0, FAILED, _first_line("wrote to stderr: " + out.get("text", "")))
        if out.output_type == "execute_result":
            return _partial(out, max_points, row)
    return row(max_points, PASSED)


def _partial(out: Any, max_points: float, row: Any) -> ScoreRow:
    """nbgrader/utils.py get_partial_grade: a number shown last is the cell's score."""
    text = out.get("data", {}).get("text/plain", "")
    if isinstance(text, list):
        if len(text) > 1:
            return row(max_points, PASSED)
        text = text[0] if text else ""
    try:
        value = float(text)
    except ValueError:
        return row(max_points, PASSED)
    if value > max_points:  # nbgrader stops autograding with a ValueError here
        return row(0.0, FAILED, f"the cell shows {text}, more than its {_num(max_points)} points "
                                "(a number shown last is read as partial credit)")
    if value < 0:
        return row(max_points, PASSED)
    return row(value, PASSED if value == max_points else PARTIAL,
               "" if value == max_points else f"partial credit: the cell shows {text}")


_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_ARROW = re.compile(r"^-+>\s*(\d+)\s(.*)$")  # IPython marks the failing line "----> 3 assert ..."


def error_message(out: Any) -> str:
    """`Name: first line of the value`, and the line of the cell that raised (IPython's arrow)."""
    ename, evalue = out.get("ename", "Error"), _first_line(out.get("evalue", ""))
    text = f"{ename}: {evalue}" if evalue else ename
    for frame in out.get("traceback", []):
        for line in _ANSI.sub("", frame).splitlines():
            m = _ARROW.match(line)
            if m:
                return f"{text} (line {m.group(1)}: {m.group(2).strip()})"
    return text


def _first_line(text: str) -> str:
    lines = [ln for ln in text.strip().splitlines() if ln.strip()]
    return lines[0].strip() if lines else text.strip()

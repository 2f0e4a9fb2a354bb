"""nbgrader's cell metadata (schema v3) over plain nbformat: what a lab cell is, and checks.

A lab is an ordinary nbgrader notebook, so a course already on nbgrader uses it unchanged.
Every rule here is matched from nbgrader 0.9.6 and names the file it came from; nbgrader
itself is never imported (it is the optional `labs` extra), nbformat is imported on use.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# nbgrader/preprocessors/clearsolutions.py, clearhiddentests.py, clearmarkingscheme.py:
# a marker is found anywhere in a line (`### BEGIN SOLUTION` is the usual spelling).
BEGIN_SOLUTION, END_SOLUTION = "BEGIN SOLUTION", "END SOLUTION"
BEGIN_HIDDEN, END_HIDDEN = "BEGIN HIDDEN TESTS", "END HIDDEN TESTS"
BEGIN_MARK_SCHEME, END_MARK_SCHEME = "BEGIN MARK SCHEME", "END MARK SCHEME"
# ClearSolutions.code_stub["python"] and ClearSolutions.text_stub
CODE_STUB = "# YOUR CODE HERE\nraise NotImplementedError()"
TEXT_STUB = "YOUR ANSWER HERE"
SCHEMA_VERSION = 3
REGIONS = ((BEGIN_SOLUTION, END_SOLUTION, "solution"), (BEGIN_HIDDEN, END_HIDDEN, "hidden tests"),
           (BEGIN_MARK_SCHEME, END_MARK_SCHEME, "mark scheme"))

# nbgrader/nbgraderformat/v3.json (draft-04), kept as data so jsonschema-rs checks the types.
CELL_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "schema_version": {"type": "integer"},  # its value gets its own message below
        "grade": {"type": "boolean"}, "locked": {"type": "boolean"},
        "solution": {"type": "boolean"}, "task": {"type": "boolean"},
        "grade_id": {"type": "string", "pattern": "^[a-zA-Z0-9_\\-]*$"},
        "points": {"type": "number", "minimum": 0},
        "checksum": {"type": "string", "minLength": 32, "maxLength": 32},
        "cell_type": {"type": "string", "enum": ["raw", "code", "markdown"]},
    },
    "required": ["schema_version", "grade", "locked", "solution"],
    "additionalProperties": False,
}


class LabInputError(Exception):
    """A notebook or folder that cannot be released or checked (the message names it and the fix)."""


@dataclass(frozen=True)
class LabProblem:
    """One thing wrong with a lab's nbgrader metadata or markers."""

    path: str
    """The notebook file."""
    cell: int
    """0-based index of the cell in the notebook."""
    grade_id: str | None
    """The cell's nbgrader grade_id, if it has one."""
    problem: str
    """What is wrong."""
    fix: str
    """What to change."""

    def __str__(self) -> str:
        gid = f" ({self.grade_id})" if self.grade_id else ""
        return f"{self.path}: cell {self.cell}{gid}: {self.problem}; fix: {self.fix}"


def meta(cell: Any) -> dict[str, Any]:
    """The cell's `nbgrader` metadata ({} when it has none)."""
    m = cell.get("metadata", {}).get("nbgrader")
    return m if isinstance(m, dict) else {}


# nbgrader/utils.py: is_grade, is_solution, is_task, is_locked (a grade cell that is not a
# solution is locked: autograde overwrites it from the instructor's copy).
def is_grade(cell: Any) -> bool:
    return bool(meta(cell).get("grade", False))


def is_solution(cell: Any) -> bool:
    return bool(meta(cell).get("solution", False))


def is_task(cell: Any) -> bool:
    return bool(meta(cell).get("task", False))


def is_locked(cell: Any) -> bool:
    if is_solution(cell):
        return False
    return is_grade(cell) or bool(meta(cell).get("locked", False))


def has_grade_id(cell: Any) -> bool:
    """A cell nbgrader tracks by grade_id (grade, solution, locked or task)."""
    return is_grade(cell) or is_solution(cell) or is_locked(cell) or is_task(cell)


def compute_checksum(cell: Any) -> str:
    """nbgrader/utils.py `compute_checksum`: md5 over source, type, flags, id and points."""
    m = hashlib.md5()
    for part in (cell.source, cell.cell_type, str(is_grade(cell)), str(is_solution(cell)),
                 str(is_locked(cell)), meta(cell)["grade_id"]):
        m.update(part.encode("utf-8"))
    if is_grade(cell):
        m.update(str(float(meta(cell)["points"])).encode("utf-8"))
    return m.hexdigest()


class RegionError(ValueError):
    """Unbalanced or nested BEGIN/END markers in one cell."""


def strip_region(source: str, begin: str, end: str, stub: list[str] | None) -> tuple[str, int]:
    """Remove every `begin`..`end` region (marker lines included); with `stub`, put its lines
    in place of each region, indented like the BEGIN line. Returns (new source, regions).

    The loop of ClearSolutions._replace_solution_region / ClearHiddenTests.
    _remove_hidden_test_region: split on "\\n", a marker anywhere in a line, rejoin on "\\n"."""
    out: list[str] = []
    inside, count = False, 0
    for line in source.split("\n"):
        if begin in line:
            if inside:
                raise RegionError(f"nested '{begin}' (a second one before '{end}')")
            inside, count = True, count + 1
            if stub is not None:
                indent = line[: len(line) - len(line.lstrip())]
                out.extend(indent + s for s in stub)
        elif end in line:
            inside = False
        elif not inside:
            out.append(line)
    if inside:
        raise RegionError(f"'{begin}' without a matching '{end}'")
    return "\n".join(out), count


def read_notebook(path: Path) -> Any:
    """Read a notebook as nbformat v4; LabInputError naming the file if it is not one."""
    import nbformat

    if not path.is_file():
        raise LabInputError(f"{path}: no such notebook file")
    try:
        return nbformat.read(path, as_version=4)
    except Exception as exc:  # nbformat raises several types for a bad file
        raise LabInputError(f"{path}: not a readable Jupyter notebook ({type(exc).__name__}: "
                            f"{str(exc).splitlines()[0] if str(exc) else ''})") from None


def language(nb: Any) -> str:
    """The notebook's kernel language, as ClearSolutions.preprocess reads it."""
    return str(nb.metadata.get("kernelspec", {}).get("language", "python"))


def validate_notebook(nb: Any, path: Path | str, *, markers: bool = True) -> list[LabProblem]:
    """Every problem nbgrader would reject (nbgraderformat/v3.py validate_cell/validate_nb,
    the Clear* preprocessors' marker checks), plus the ones it would only warn about or
    silently mangle (a stray END marker is dropped by nbgrader; here it is reported).
    `markers=False` checks the metadata only (a student's copy: its markers are not used)."""
    import jsonschema_rs

    check = jsonschema_rs.Draft4Validator(CELL_SCHEMA)
    problems: list[LabProblem] = []
    seen: dict[str, int] = {}

    def add(i: int, gid: str | None, problem: str, fix: str) -> None:
        problems.append(LabProblem(str(path), i, gid, problem, fix))

    if language(nb) != "python":
        add(0, None, f"kernel language is {language(nb)!r}", "agentos lab grades Python notebooks only; "
            "set metadata.kernelspec to a Python 3 kernel")
    for i, cell in enumerate(nb.cells):
        if markers:
            _check_markers(cell, i, add)
        if "nbgrader" not in cell.get("metadata", {}):
            continue
        m = meta(cell)
        gid = m.get("grade_id") if isinstance(m.get("grade_id"), str) else None
        version = m.get("schema_version")
        if version != SCHEMA_VERSION:
            add(i, gid, f"schema_version is {version!r}, not {SCHEMA_VERSION}",
                "set schema_version to 3 (`nbgrader update NOTEBOOK` upgrades old metadata)")
            continue
        errors = [(f"{'/'.join(map(str, e.instance_path))}: " if e.instance_path else "") + e.message
                  for e in check.iter_errors(m)]
        if errors:
            add(i, gid, "nbgrader metadata: " + "; ".join(errors),
                "keep only schema_version, grade, solution, locked, task (booleans), grade_id "
                "(letters, digits, _ and -), points (a number >= 0)")
            continue
        _check_cell(cell, i, m, gid, seen, add)
    return problems


def _check_cell(cell: Any, i: int, m: dict[str, Any], gid: str | None, seen: dict[str, int],
                add: Any) -> None:
    grade, solution, task = is_grade(cell), is_solution(cell), is_task(cell)
    if not (grade or solution or m.get("locked") or task):
        return
    if not gid:
        add(i, None, "nbgrader cell has no grade_id", "give it a unique grade_id, e.g. \"test_add\"")
        return
    if gid in seen:
        add(i, gid, f"duplicate grade_id (cell {seen[gid]} has it too)",
            "give each graded, solution or read-only cell its own grade_id")
    seen.setdefault(gid, i)
    if (grade or task) and "points" not in m:
        add(i, gid, "grade cell without points", "add \"points\": N (a number >= 0)")
    if task and cell.cell_type != "markdown":
        add(i, gid, "task cell that is not markdown", "make it a markdown cell or drop task")
    elif not task and cell.cell_type == "markdown" and grade != solution:
        add(i, gid, f"markdown cell marked {'grade' if grade else 'solution'} only",
            "a written answer is both grade and solution (nbgrader: 'Manually graded answer')")
    if "AUTOTEST" in cell.source and grade:
        add(i, gid, "AUTOTEST template line", "write the test out as plain asserts; agentos lab "
            "does not expand nbgrader's AUTOTEST templates")


def _check_markers(cell: Any, i: int, add: Any) -> None:
    gid = meta(cell).get("grade_id") if isinstance(meta(cell).get("grade_id"), str) else None
    owner = {"solution": (is_solution(cell), "solution cell ('Autograded answer' or 'Manually "
                          "graded answer')"),
             "hidden tests": (is_grade(cell) and not is_solution(cell),
                              "grade cell ('Autograder tests')"),
             "mark scheme": (is_task(cell), "task cell ('Manually graded task')")}
    for begin, end, what in REGIONS:
        if begin not in cell.source and end not in cell.source:
            continue
        depth = 0
        for n, line in enumerate(cell.source.split("\n"), 1):
            if begin in line:
                if depth:
                    add(i, gid, f"line {n}: nested '{begin}'", f"close the first region with '{end}'")
                depth = 1
            elif end in line:
                if not depth:
                    add(i, gid, f"line {n}: '{end}' without a '{begin}' before it",
                        f"add '### {begin}' above it or delete the line")
                depth = 0
        if depth:
            add(i, gid, f"'{begin}' without a matching '{end}'", f"add a '### {end}' line")
        ok, kind = owner[what]
        if not ok:
            add(i, gid, f"{what} region outside a {kind.split(' (')[0]}",
                f"mark the cell as a {kind} in nbgrader's metadata, or move the region")

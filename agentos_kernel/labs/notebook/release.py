"""`release`: the student version of a lab, as `nbgrader generate_assignment` writes it.

The transforms run in generate_assignment's order (nbgrader/converters/generate_assignment.py:
LockCells, ClearSolutions, ClearOutput, ComputeChecksums, [SaveCells], ClearHiddenTests,
ClearMarkScheme, ComputeChecksums); `instructor_cells` stops where SaveCells records the
cells autograde later restores from.
"""

from __future__ import annotations

import copy
import fnmatch
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .nbgrader_format import (
    BEGIN_HIDDEN,
    BEGIN_MARK_SCHEME,
    BEGIN_SOLUTION,
    CODE_STUB,
    END_HIDDEN,
    END_MARK_SCHEME,
    END_SOLUTION,
    TEXT_STUB,
    LabInputError,
    compute_checksum,
    has_grade_id,
    is_grade,
    is_locked,
    is_solution,
    meta,
    read_notebook,
    strip_region,
    validate_notebook,
)

# nbgrader/coursedir.py CourseDirectory.ignore: never copied along with a lab.
IGNORE = (".ipynb_checkpoints", "*.pyc", "__pycache__", "feedback")


@dataclass(frozen=True)
class ReleasedNotebook:
    """One notebook written in its student version."""

    source: Path
    """The instructor notebook."""
    dest: Path
    """The student notebook written."""
    solutions: int
    """Solution cells whose answer was replaced by the stub."""
    hidden_tests: int
    """BEGIN/END HIDDEN TESTS regions removed."""


@dataclass(frozen=True)
class ReleaseReport:
    """What `release` wrote."""

    notebooks: tuple[ReleasedNotebook, ...]
    """Every notebook released."""
    copied: tuple[Path, ...]
    """Other files of the lab folder copied unchanged (destination paths)."""
    left_behind: tuple[Path, ...] = ()
    """Files beside a notebook SRC that were not copied (release the folder to include them)."""


def lock_cells(nb: Any) -> None:
    """nbgrader/preprocessors/lockcells.py with its defaults (solution, grade, read-only)."""
    for cell in nb.cells:
        if is_solution(cell):
            cell.metadata["deletable"] = False
        elif is_grade(cell) or is_locked(cell):
            cell.metadata["deletable"] = False
            cell.metadata["editable"] = False


def clear_solutions(nb: Any) -> int:
    """nbgrader/preprocessors/clearsolutions.py: each solution region becomes the stub; a
    solution cell without regions becomes the stub whole. Returns the cells changed."""
    changed = 0
    for cell in nb.cells:
        stub = (CODE_STUB if cell.cell_type == "code" else TEXT_STUB).split("\n")
        cell.source, regions = strip_region(cell.source, BEGIN_SOLUTION, END_SOLUTION, stub)
        if is_solution(cell) and not regions:
            cell.source = "\n".join(stub)
        changed += is_solution(cell)
    nb.metadata.pop("celltoolbar", None)
    return changed


def clear_outputs(nb: Any) -> None:
    """nbconvert's ClearOutputPreprocessor (nbgrader's ClearOutput)."""
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs = []
            cell.execution_count = None
            for field in ("collapsed", "scrolled"):
                cell.metadata.pop(field, None)


def compute_checksums(nb: Any) -> None:
    """nbgrader/preprocessors/computechecksums.py."""
    for cell in nb.cells:
        if is_grade(cell) or is_solution(cell) or is_locked(cell):
            cell.metadata["nbgrader"]["checksum"] = compute_checksum(cell)
            cell.metadata["nbgrader"]["cell_type"] = cell.cell_type


def instructor_cells(nb: Any) -> tuple[Any, int]:
    """A copy of the instructor notebook as nbgrader's SaveCells stores it in the gradebook:
    solutions stubbed, hidden tests still in, checksums computed. Autograde restores locked
    cells (test cells, read-only cells) from exactly this. Returns (notebook, solutions)."""
    nb = copy.deepcopy(nb)
    lock_cells(nb)
    solutions = clear_solutions(nb)
    clear_outputs(nb)
    compute_checksums(nb)
    return nb, solutions


def student_version(nb: Any) -> tuple[Any, int, int]:
    """The released notebook: (notebook, solutions stubbed, hidden test regions removed).
    nbgrader metadata is kept; outputs and execution counts are cleared."""
    nb, solutions = instructor_cells(nb)
    hidden = 0
    for cell in nb.cells:
        cell.source, n = strip_region(cell.source, BEGIN_HIDDEN, END_HIDDEN, None)
        hidden += n
        cell.source, _ = strip_region(cell.source, BEGIN_MARK_SCHEME, END_MARK_SCHEME, None)
    compute_checksums(nb)
    return nb, solutions, hidden


def load_lab(path: Path) -> Any:
    """Read an instructor notebook and refuse it if its metadata or markers are wrong."""
    nb = read_notebook(path)
    problems = validate_notebook(nb, path)
    if problems:
        raise LabInputError("\n".join(str(p) for p in problems))
    return nb


def ignored(rel: Path) -> bool:
    """True for a path nbgrader never copies along with a lab (IGNORE, at any depth)."""
    return any(fnmatch.fnmatch(part, pat) for part in rel.parts for pat in IGNORE)


def _plan(src: Path, dest: Path) -> tuple[list[tuple[Path, Path]], list[tuple[Path, Path]]]:
    """(notebooks, other files) as (source, destination) pairs."""
    if src.is_file():
        target = dest if dest.suffix == ".ipynb" else dest / src.name
        if target.resolve() == src.resolve():
            raise LabInputError(f"{dest}: is the source notebook itself; release to another path")
        return [(src, target)], []
    if not src.is_dir():
        raise LabInputError(f"{src}: no such notebook or lab folder")
    if dest.resolve().is_relative_to(src.resolve()):
        raise LabInputError(f"{dest}: is inside the lab folder {src}; release to a folder outside it")
    notebooks: list[tuple[Path, Path]] = []
    others: list[tuple[Path, Path]] = []
    for path in sorted(src.rglob("*")):  # symlinked directories are not descended into
        rel = path.relative_to(src)
        if path.is_dir() or ignored(rel):
            continue
        refuse_link_out(path, src)
        is_nb = path.suffix == ".ipynb" and len(rel.parts) == 1
        (notebooks if is_nb else others).append((path, dest / rel))
    if not notebooks:
        raise LabInputError(f"{src}: no notebook (*.ipynb) at the top of the lab folder")
    sources = {p.resolve() for p, _ in notebooks + others}
    for _, d in notebooks + others:
        if d.resolve() in sources:
            raise LabInputError(f"{d}: would overwrite a file of the lab folder {src}; release to "
                                "a folder outside it")
    return notebooks, others


def refuse_link_out(path: Path, folder: Path) -> None:
    """LabInputError when `path` is a symlink resolving outside `folder`: copying it would
    put a file from elsewhere into the handout (or the checked copy)."""
    if not path.is_symlink():
        return
    real, base = os.path.realpath(path), os.path.realpath(folder)
    if not real.startswith(base + os.sep):
        raise LabInputError(f"{path}: a symlink leading outside {folder} (to {real}); put the "
                            "file itself in the folder")


def release(src: Path, dest: Path, *, force: bool = False) -> ReleaseReport:
    """Write the student version of SRC (a notebook, or a lab folder: its top-level notebooks
    released, every other file copied) to DEST (a notebook path or a folder). Refuses a SRC
    without nbgrader cells, invalid metadata, and existing destination files unless `force`."""
    src, dest = Path(src), Path(dest)
    notebooks, others = _plan(src, dest)
    loaded = [(s, d, load_lab(s)) for s, d in notebooks]
    if not any(has_grade_id(c) for _, _, nb in loaded for c in nb.cells):
        raise LabInputError(f"{src}: no nbgrader cells (no cell metadata 'nbgrader' with grade, "
                            "solution or locked); mark the answer and test cells first "
                            "(see docs/labs.md)")
    existing = [d for _, d in notebooks + others if d.exists()]
    if existing and not force:
        names = ", ".join(str(p) for p in existing[:3]) + (" ..." if len(existing) > 3 else "")
        raise LabInputError(f"{names}: already exists; pass --force to overwrite")
    import nbformat

    released = []
    for s, d, nb in loaded:
        student, solutions, hidden = student_version(nb)
        d.parent.mkdir(parents=True, exist_ok=True)
        nbformat.write(student, d)
        released.append(ReleasedNotebook(s, d, solutions, hidden))
    for s, d in others:
        d.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(s, d)
    beside = () if src.is_dir() else tuple(
        sorted(p for p in src.parent.iterdir() if p != src and p.suffix != ".ipynb"
               and not p.name.startswith(".")))
    return ReleaseReport(tuple(released), tuple(d for _, d in others), beside)


def grade_ids(nb: Any) -> list[str]:
    """grade_ids of the cells nbgrader tracks, in order."""
    return [meta(c)["grade_id"] for c in nb.cells if has_grade_id(c) and "grade_id" in meta(c)]

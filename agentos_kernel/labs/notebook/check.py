"""`check_notebook`: run a lab notebook in a fresh kernel and score its grade cells.

Before running, the notebook is sanitised as nbgrader autograde does
(nbgrader/converters/autograde.py `sanitize_preprocessors`): outputs cleared, duplicate
grade_ids dropped, and, given the instructor's `source`, every cell restored from it by
grade_id (nbgrader/preprocessors/overwritecells.py), so hidden tests run and an edited test
cell counts for nothing. The folder's other files go along (and the source folder's over
them, as autograde copies the assignment's source files over the submission's).

The kernel runs in the grader's sandbox (box.py): it reads only its box (the folder's
files and the student's notebook as submitted, never the restored one nor the source),
the system and Python prefixes and the package; it writes only its box; no network; limits
on memory, processes and time. A machine that cannot sandbox it is refused unless the
caller passes `unconfined` (the student's code then runs with the caller's rights).
"""

from __future__ import annotations

import dataclasses
import fnmatch
import os
import shutil
import tempfile
import threading
from pathlib import Path
from typing import Any

from ..sandbox import run as sandbox
from ..sandbox.forkserver import ForkServer
from .box import Limits, make_kernel_box, run_in_box
from .handout import shipped_lab
from .nbgrader_format import (
    BEGIN_HIDDEN,
    LabInputError,
    compute_checksum,
    has_grade_id,
    is_grade,
    is_locked,
    is_task,
    meta,
    read_notebook,
    validate_notebook,
)
from .release import IGNORE, clear_outputs, instructor_cells, load_lab, refuse_link_out
from .score import FAILED, MANUAL, MISSING, LabScore, ScoreRow, score_cell

DEFAULT_TIMEOUT = 30  # seconds per cell: nbgrader's Execute.timeout default
DEFAULT_WALL = 600  # seconds for the whole run: the five course labs take under 10 s
DEFAULT_MEMORY_MB = 2048  # a course lab's kernel peaks at ~390 MiB of address space (box.py)
MAX_PROCESSES = 256  # threads count too; a lab kernel has about 20
MAX_FILES, MAX_BYTES = 2000, 200 * 2**20  # a lab folder, not a home directory


class SandboxUnavailable(LabInputError):
    """This machine cannot confine the kernel and the caller did not accept running it unconfined."""


def check_notebook(path: Path | str, *, source: Path | str | None = None,
                   timeout: int = DEFAULT_TIMEOUT, memory_mb: int = DEFAULT_MEMORY_MB,
                   wall: float = DEFAULT_WALL, unconfined: bool = False,
                   cancel: threading.Event | None = None, forkserver: ForkServer | None = None) -> LabScore:
    """Run a copy of the notebook at `path` in a fresh, sandboxed kernel (cwd: a temp dir
    holding the copy and its folder's files), continuing past errors, and score every grade cell.

    `source` is the instructor notebook: its locked cells (tests, read-only cells) replace
    the submission's by grade_id first; they reach the kernel only as each cell runs.
    `timeout` bounds each cell and `wall` the whole run (seconds); `memory_mb` the kernel's
    memory. `unconfined` accepts a sandbox with layers missing (they are reported). `cancel`,
    once set, stops the run before its next cell (the cells left score 0 as not run).
    `forkserver`: the kernel is forked from it (the same sandbox, see forkserver.py). Raises
    LabInputError for a notebook that cannot be checked (unreadable, invalid nbgrader
    metadata, no grade cells), SandboxUnavailable when the kernel cannot be confined here."""
    path = Path(path)
    if timeout < 1:
        raise LabInputError(f"timeout {timeout}: must be at least 1 second")
    if wall < 1:
        raise LabInputError(f"total timeout {wall:g}: must be at least 1 second")
    if memory_mb < 256:
        raise LabInputError(f"memory {memory_mb} MiB: a Python kernel needs at least 256 MiB")
    nb = read_notebook(path)
    src_path = Path(source) if source is not None else None
    src_nb = instructor_cells(load_lab(src_path))[0] if src_path else None
    notes = _sanitize(nb, src_nb)
    problems = validate_notebook(nb, path, markers=False)
    if problems:
        raise LabInputError("\n".join(str(p) for p in problems))
    if not any(is_grade(c) for c in nb.cells) and not (src_nb and _grade_ids(src_nb)):
        raise LabInputError(f"{path}: no grade cells (nbgrader 'grade': true with points), so "
                            "nothing to score; is this the lab notebook?")
    folders = [path.parent] + ([src_path.parent] if src_path else [])
    for folder in folders:
        _check_size(folder)
    missing = sandbox.probe().missing
    if missing and not unconfined:
        raise SandboxUnavailable(f"{path}: cannot sandbox the notebook's kernel on this machine ("
                                 + "; ".join(missing) + "), so its code would run with your rights; "
                                 "to run it anyway, pass --unconfined")
    limits = Limits(memory_mb << 20, MAX_PROCESSES, wall)
    require = () if unconfined else ("landlock", "seccomp", *(("capabilities",) if os.geteuid() == 0 else ()))
    with tempfile.TemporaryDirectory(prefix="agentos-lab-") as tmp:
        (Path(tmp) / "out").mkdir()
        kb = make_kernel_box(Path(tmp) / "box", Path(tmp) / "out", limits=limits, require=require,
                             via=forkserver.prefix() if forkserver else None)
        try:
            # Only the student's own notebook goes in, as submitted: never the restored one
            # (the hidden tests) nor any other notebook of either folder.
            _copy_files(path.parent, kb.box.sub, skip_notebooks=True)
            if src_path:
                _copy_files(src_path.parent, kb.box.sub, skip_notebooks=True)
            shutil.copyfile(path, kb.box.sub / path.name)
            result, confined = run_in_box(nb, kb, timeout=timeout, wall=wall,
                                          cancelled=cancel.is_set if cancel else lambda: False)
        finally:
            leftovers = kb.close()
    rows = [score_cell(c, i, result.not_run.get(i)) for i, c in enumerate(nb.cells) if is_grade(c)]
    rows = [_name_memory_limit(r, memory_mb) for r in rows]
    rows += [ScoreRow(meta(c)["grade_id"], i, None, float(meta(c)["points"]), MANUAL,
                      "a task: grade it by hand") for i, c in enumerate(nb.cells) if is_task(c)]
    rows.sort(key=lambda r: r.cell if r.cell is not None else -1)
    if src_nb is not None:
        present = {r.grade_id for r in rows}
        rows += [ScoreRow(gid, None, 0.0, pts, MISSING, "the cell was deleted from the notebook")
                 for gid, pts in _grade_ids(src_nb).items() if gid not in present]
    return LabScore(path, src_path, tuple(rows), tuple(notes), confined.held,
                    (*confined.missing, *leftovers), confined.attempts,
                    () if src_nb is not None else _hidden_here(path, nb))


def _hidden_here(path: Path, nb: Any) -> tuple[str, ...] | None:
    """grade_ids whose hidden tests a self-check (no source) did not run: those of the cells
    that hold hidden tests in the lab as shipped. A notebook that still holds its hidden tests
    (the instructor's) ran them all. None when no source of the lab is known."""
    if any(_has_hidden(c) for c in nb.cells):
        return ()
    ids = {meta(c)["grade_id"] for c in nb.cells if has_grade_id(c)}
    shipped = shipped_lab(path.name, ids)
    if shipped is None:
        return None
    from .shipped import shipped_hidden

    released = shipped_hidden(shipped)  # a wheel carries the lab released: its manifest says
    if released is not None:
        return released
    return tuple(meta(c)["grade_id"] for c in read_notebook(shipped).cells if is_grade(c) and _has_hidden(c))


def _has_hidden(cell: Any) -> bool:
    return any(line.strip().endswith(BEGIN_HIDDEN) for line in cell.source.splitlines())


def _name_memory_limit(row: ScoreRow, memory_mb: int) -> ScoreRow:
    """A MemoryError is the sandbox's limit more often than the machine's: say which."""
    if row.status != FAILED or not row.message.startswith("MemoryError"):
        return row
    return dataclasses.replace(row, message=f"{row.message} (the kernel's memory limit is {memory_mb} MiB)")


def _grade_ids(nb: Any) -> dict[str, float]:
    return {meta(c)["grade_id"]: float(meta(c)["points"]) for c in nb.cells if is_grade(c) or is_task(c)}


def _sanitize(nb: Any, src: Any | None) -> list[str]:
    """Clear outputs, drop duplicate ids, restore from the source; returns what changed."""
    clear_outputs(nb)
    notes: list[tuple[int, str]] = []
    seen: set[str] = set()
    # nbgrader/preprocessors/deduplicateids.py: the last cell with an id keeps it
    for i in reversed(range(len(nb.cells))):
        cell = nb.cells[i]
        gid = meta(cell).get("grade_id")
        if not has_grade_id(cell) or gid is None:
            continue
        if gid in seen:
            del cell.metadata["nbgrader"]
            notes.append((i, f"cell {i}: a second cell with grade_id {gid!r}; only the last one counts"))
        seen.add(gid)
    if src is not None:
        if "kernelspec" in src.metadata:  # nbgrader's OverwriteKernelspec
            nb.metadata["kernelspec"] = src.metadata["kernelspec"]
        by_id = {meta(c)["grade_id"]: c for c in src.cells if has_grade_id(c)}
        for i, cell in enumerate(nb.cells):
            notes += [(i, note) for note in _overwrite(cell, i, by_id)]
    return [note for _, note in sorted(notes, key=lambda n: n[0])]


def _overwrite(cell: Any, i: int, by_id: dict[str, Any]) -> list[str]:
    """nbgrader/preprocessors/overwritecells.py `preprocess_cell`, with the gradebook's
    source cell read from the instructor notebook instead."""
    gid = meta(cell).get("grade_id")
    if gid is None:
        return []
    src = by_id.get(gid)
    if src is None:
        del cell.metadata["nbgrader"]["grade_id"]
        if not has_grade_id(cell):
            return []
        del cell.metadata["nbgrader"]  # nbgrader would fail on it: the id is gone
        return [f"cell {i}: grade_id {gid!r} is not in the source notebook; not graded"]
    notes = []
    if cell.cell_type != src.cell_type:
        notes.append(f"cell {i} ({gid}): cell type restored to {src.cell_type}")
        cell.cell_type = src.cell_type
        if src.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
        else:
            cell.pop("outputs", None)
            cell.pop("execution_count", None)
    if is_locked(cell) != is_locked(src):
        cell.metadata["nbgrader"]["locked"] = is_locked(src)
    points = meta(src).get("points")
    if is_grade(cell) and points is not None and meta(cell).get("points") != points:
        notes.append(f"cell {i} ({gid}): points restored to {points:g}")
        cell.metadata["nbgrader"]["points"] = float(points)
    cell.metadata["nbgrader"]["checksum"] = meta(src)["checksum"]
    if is_locked(src) and compute_checksum(cell) != meta(src)["checksum"]:
        cell.source = src.source
        notes.append(f"cell {i} ({gid}): restored from the source")
    return notes


def _walk(folder: Path, skip_notebooks: bool) -> list[Path]:
    """Files to copy: nbgrader's ignore list, and no hidden directories (.git, .venv).
    A symlink leading out of the folder is refused: copying it would hand the notebook a
    file from elsewhere (symlinked directories are not descended into)."""
    files = []
    for root, dirs, names in os.walk(folder):
        dirs[:] = [d for d in dirs if not d.startswith(".") and not _ignored(d)]
        files += [Path(root) / n for n in names if not _ignored(n)
                  and not (skip_notebooks and n.endswith(".ipynb"))]
    for f in files:
        refuse_link_out(f, folder)
    return files


def _ignored(name: str) -> bool:
    return any(fnmatch.fnmatch(name, pat) for pat in IGNORE)


def _check_size(folder: Path) -> None:
    files = _walk(folder, skip_notebooks=False)
    size = sum(f.stat().st_size for f in files if f.is_file())
    if len(files) > MAX_FILES or size > MAX_BYTES:
        raise LabInputError(f"{folder}: holds {len(files)} files, {size / 2**20:.0f} MB; the lab "
                            "is run with its folder's files, so put the notebook in its own lab folder")


def _copy_files(folder: Path, dest: Path, *, skip_notebooks: bool) -> None:
    for f in _walk(folder, skip_notebooks):
        target = dest / f.relative_to(folder)
        target.parent.mkdir(parents=True, exist_ok=True)
        if f.is_file():
            shutil.copy2(f, target)

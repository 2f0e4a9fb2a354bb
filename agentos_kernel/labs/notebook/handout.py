"""`agentos notebooks DEST`: the workbench notebooks a student gets, never the instructor's.

The teaching notebooks (`00_tour` … `12_class_dashboard`) are copied as they are; every lab
under `labs/` is written in its released version (`release.py`: solutions stubbed, hidden
tests removed, outputs cleared) with its starter files. A project lab — a lab folder with no
notebook, such as the Lab 07 capstone — is copied as it is (its handout and starter) except
its `solution/`. The lab sources — model solutions, hidden tests, a project's reference
solution, the instructors' guide `labs/README.md` — are copied only with `instructor=True`.
The notebooks come from the repository's `notebooks/` in a checkout, or from the installed
package: the wheel carries them as `_reference/notebooks` **already released** (hatch_build.py
writes this module's student copy there, with a manifest, shipped.py), because a student's
code can read the installed package; so from a wheel, `instructor=True` is refused.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...workspace import reference_dir
from .nbgrader_format import LabInputError, has_grade_id, read_notebook
from .release import ReleasedNotebook, ignored, release

LABS = "labs"
"""The folder of lab folders inside the notebooks folder."""
SOLUTION = "solution"
"""A project lab's reference solution folder: the instructor's, never in a student copy."""
RELEASED_MANIFEST = ".agentos-released.json"
"""Marks a notebooks folder whose labs are released already (the wheel's), and says per lab
notebook what was taken out (shipped.py writes it, at wheel build time)."""
MANIFEST_VERSION = 1


def notebooks_dir() -> Path:
    """The workbench notebooks shipped with this installation."""
    return reference_dir() / "notebooks"


@dataclass(frozen=True)
class Handout:
    """What `copy_notebooks` wrote."""

    dest: Path
    """The folder written."""
    copied: tuple[Path, ...]
    """Files copied unchanged (teaching notebooks, starter files; with `instructor` everything)."""
    released: tuple[ReleasedNotebook, ...]
    """Lab notebooks written in their student version (none with `instructor`)."""
    instructor: bool
    """True when the sources were copied (solutions and hidden tests included)."""


def _lab_folders(src: Path) -> list[Path]:
    labs = src / LABS
    return sorted(p for p in labs.iterdir() if p.is_dir() and any(p.glob("*.ipynb"))) \
        if labs.is_dir() else []


def _project_files(src: Path) -> list[Path]:
    """The files of every project lab (a lab folder with no notebook) a student gets: all but
    its solution/ (and what nbgrader never copies)."""
    labs = src / LABS
    projects = sorted(p for p in labs.iterdir() if p.is_dir() and not any(p.glob("*.ipynb"))) \
        if labs.is_dir() else []
    return [f for lab in projects for f in sorted(lab.rglob("*")) if f.is_file()
            and not ignored(f.relative_to(lab)) and f.relative_to(lab).parts[0] != SOLUTION]


def _teaching_files(src: Path) -> list[Path]:
    """The top-level notebooks and README: everything outside labs/."""
    return sorted(p for p in src.iterdir() if p.is_file() and not p.name.startswith("."))


def _refuse(dest: Path, src: Path, targets: list[Path], force: bool) -> None:
    real_dest, real_src = dest.resolve(), src.resolve()
    if real_dest == real_src or real_dest.is_relative_to(real_src):
        raise LabInputError(f"{dest}: is inside the notebooks folder {src}; copy them somewhere else")
    if dest.exists() and not dest.is_dir():
        raise LabInputError(f"{dest}: exists and is not a folder")
    existing = [t for t in targets if t.exists() or t.is_symlink()]
    if existing and not force:
        names = ", ".join(str(p) for p in existing[:3]) + (" ..." if len(existing) > 3 else "")
        raise LabInputError(f"{names}: already exists; pass --force to overwrite")


def copy_notebooks(dest: Path | str, *, instructor: bool = False, force: bool = False,
                   src: Path | None = None) -> Handout:
    """Write the notebooks to `dest`: the student version (labs released), or with
    `instructor` the sources. LabInputError (nothing written) for a `dest` inside the
    notebooks folder, or holding files of the same names without `force`."""
    dest, src = Path(dest), Path(src) if src is not None else notebooks_dir()
    if not src.is_dir():
        raise LabInputError(f"{src}: no notebooks here; this installation does not carry them "
                            "(reinstall agentos-kernel from its wheel or a checkout)")
    if (src / RELEASED_MANIFEST).is_file():
        return copy_released(dest, src, instructor=instructor, force=force)
    teaching = _teaching_files(src)
    labs = _lab_folders(src)
    if instructor:
        files = [p for p in sorted(src.rglob("*")) if p.is_file() and not ignored(p.relative_to(src))]
        _refuse(dest, src, [dest / p.relative_to(src) for p in files], force)
        for p in files:
            target = dest / p.relative_to(src)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(p, target)
        return Handout(dest, tuple(dest / p.relative_to(src) for p in files), (), True)
    projects = _project_files(src)
    lab_targets = [dest / LABS / lab.name / p.relative_to(lab)
                   for lab in labs for p in lab.rglob("*") if p.is_file()]
    _refuse(dest, src, [dest / p.name for p in teaching] + lab_targets
            + [dest / p.relative_to(src) for p in projects], force)
    dest.mkdir(parents=True, exist_ok=True)
    copied = []
    for p in teaching:
        shutil.copy2(p, dest / p.name)
        copied.append(dest / p.name)
    released: list[ReleasedNotebook] = []
    for lab in labs:
        report = release(lab, dest / LABS / lab.name, force=force)
        released += report.notebooks
        copied += report.copied
    for p in projects:
        target = dest / p.relative_to(src)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(p, target)
        copied.append(target)
    return Handout(dest, tuple(copied), tuple(released), False)



def shipped_lab(name: str, grade_ids: set[str]) -> Path | None:
    """The instructor notebook of a lab shipped with this installation that `name` (a
    notebook's file name) is the student version of: the same name holding every grade_id,
    else the one lab whose grade cells are exactly `grade_ids`. None when there is none."""
    labs = [p for lab in _lab_folders(notebooks_dir()) for p in sorted(lab.glob("*.ipynb"))]

    def ids(p: Path) -> set[str]:
        try:
            return {c.metadata["nbgrader"]["grade_id"] for c in read_notebook(p).cells if has_grade_id(c)}
        except LabInputError:
            return set()

    same_name = [p for p in labs if p.name == name and grade_ids <= ids(p)]
    if same_name:
        return same_name[0]
    alike = [p for p in labs if ids(p) and grade_ids == ids(p)]
    return alike[0] if len(alike) == 1 else None


def read_manifest(src: Path) -> dict[str, Any]:
    """The released folder's manifest (LabInputError naming the file when unreadable)."""
    try:
        doc = json.loads((src / RELEASED_MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise LabInputError(f"{src / RELEASED_MANIFEST}: unreadable ({exc}); "
                            "reinstall agentos-kernel") from None
    if not isinstance(doc, dict) or doc.get("version") != MANIFEST_VERSION:
        raise LabInputError(f"{src / RELEASED_MANIFEST}: not a version-{MANIFEST_VERSION} manifest; "
                            "reinstall agentos-kernel")
    return doc


def copy_released(dest: Path, src: Path, *, instructor: bool, force: bool) -> Handout:
    """`copy_notebooks` from a folder that is already the student copy: its files as they are.
    The instructor's copy cannot be made from it (LabInputError naming where it is)."""
    if instructor:
        raise LabInputError(
            f"{src}: this installation carries the labs released only (a wheel never holds solutions "
            "or hidden tests: students' code can read the installed package); the instructor's "
            "sources are in the repository: run `agentos notebooks --instructor DEST` in a checkout")
    released = read_manifest(src)["released"]
    files = [p for p in sorted(src.rglob("*")) if p.is_file() and p.name != RELEASED_MANIFEST
             and not ignored(p.relative_to(src))]
    _refuse(dest, src, [dest / p.relative_to(src) for p in files], force)
    copied, notebooks = [], []
    for p in files:
        rel = p.relative_to(src)
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(p, target)
        info = released.get(rel.as_posix())
        if info is None:
            copied.append(target)
        else:
            notebooks.append(ReleasedNotebook(p, target, int(info["solutions"]), int(info["hidden_tests"])))
    return Handout(dest, tuple(copied), tuple(notebooks), False)

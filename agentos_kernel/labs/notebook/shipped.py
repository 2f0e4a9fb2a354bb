"""The notebooks a wheel carries: the student copy, never the instructor's sources.

A student's code can read the installed package (the grader's sandbox lets a lab kernel read
the Python installation it runs on, and on a class hub every student's server runs on it), so
a wheel that carried the lab sources would hand every student the model solutions and hidden
tests: an answer cell could glob site-packages and exec them. hatch_build.py therefore writes
`write_released` of the repository's `notebooks/` into the wheel as `_reference/notebooks`:
the teaching notebooks, every lab released (handout.py), and a manifest naming, per lab
notebook, how many solutions were stubbed and which grade cells held hidden tests (so a
student's self-check can still say how many points the grader's hidden tests decide). The
instructor's sources stay in the repository (`agentos notebooks --instructor` from a checkout).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from .handout import RELEASED_MANIFEST, Handout, _refuse, copy_notebooks, notebooks_dir
from .nbgrader_format import BEGIN_HIDDEN, LabInputError, has_grade_id, is_grade, meta, read_notebook
from .release import ReleasedNotebook, ignored

MANIFEST_VERSION = 1


def _hidden_ids(nb: Any) -> list[str]:
    """grade_ids of the grade cells holding a hidden-tests region."""
    return [meta(c)["grade_id"] for c in nb.cells if is_grade(c) and has_grade_id(c)
            and any(line.strip().endswith(BEGIN_HIDDEN) for line in c.source.splitlines())]


def write_released(src: Path, out: Path) -> Path:
    """Write the student copy of the notebooks folder `src` to `out` (a new folder) with its
    manifest; returns `out`. What the wheel carries (hatch_build.py)."""
    done = copy_notebooks(out, src=src)
    labs: dict[str, dict[str, Any]] = {}
    for nb in done.released:
        rel = nb.dest.relative_to(out).as_posix()
        labs[rel] = {"solutions": nb.solutions, "hidden_tests": nb.hidden_tests,
                     "hidden_grade_ids": _hidden_ids(read_notebook(nb.source))}
    manifest = {"version": MANIFEST_VERSION, "released": labs}
    (out / RELEASED_MANIFEST).write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n",
                                         encoding="utf-8")
    return out


def _manifest(src: Path) -> dict[str, Any]:
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
    released = _manifest(src)["released"]
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


def shipped_hidden(notebook: Path) -> tuple[str, ...] | None:
    """The grade_ids whose hidden tests the grader runs for a lab notebook of the installed
    released copy (`notebooks_dir()`), from its manifest; None when `notebook` is not one."""
    src = notebooks_dir()
    if not (src / RELEASED_MANIFEST).is_file():
        return None
    try:
        rel = notebook.resolve().relative_to(src.resolve()).as_posix()
    except ValueError:
        return None
    info = _manifest(src)["released"].get(rel)
    return None if info is None else tuple(info["hidden_grade_ids"])

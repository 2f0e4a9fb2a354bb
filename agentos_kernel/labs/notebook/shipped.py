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
from pathlib import Path
from typing import Any

from .handout import MANIFEST_VERSION, RELEASED_MANIFEST, copy_notebooks, notebooks_dir, read_manifest
from .nbgrader_format import BEGIN_HIDDEN, has_grade_id, is_grade, meta, read_notebook


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
    info = read_manifest(src)["released"].get(rel)
    return None if info is None else tuple(info["hidden_grade_ids"])

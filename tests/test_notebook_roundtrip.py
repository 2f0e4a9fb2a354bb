"""Every notebook reads the same in every tool: jupytext's py:percent and Markdown round trip
gives back each cell, its type and its source unchanged (a line magic where plain Python does
not allow one, e.g. `r = %agent ...` inside a loop, comes back a comment), so a notebook kept as
a .py/.md pair, diffed or linted as text, is the notebook that nbval runs."""

from __future__ import annotations

from pathlib import Path

import pytest

from .helpers import REPO

jupytext = pytest.importorskip("jupytext", reason="jupytext comes with the test extra")

NOTEBOOKS = sorted(p for p in (REPO / "notebooks").rglob("*.ipynb") if ".ipynb_checkpoints" not in p.parts)


def test_every_notebook_is_found() -> None:
    names = {p.relative_to(REPO / "notebooks").as_posix() for p in NOTEBOOKS}
    assert {"01_L1_tools.ipynb", "06_L6_hooks.ipynb", "08_L8_workflows.ipynb"} <= names
    assert any(n.startswith("labs/") for n in names)  # the labs' sources too


@pytest.mark.parametrize("fmt", ["py:percent", "md"])
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.relative_to(REPO / "notebooks").as_posix())
def test_the_jupytext_round_trip_keeps_every_cell(path: Path, fmt: str) -> None:
    nb = jupytext.read(path)
    back = jupytext.reads(jupytext.writes(nb, fmt), fmt)
    cells = [(c.cell_type, c.source) for c in nb.cells]
    again = [(c.cell_type, c.source) for c in back.cells]
    changed = [(i, a[1], b[1]) for i, (a, b) in enumerate(zip(cells, again, strict=False)) if a != b]
    assert len(again) == len(cells) and not changed, (
        f"{path.name}: {fmt} round trip changed cell {changed[0][0] if changed else '(count)'}: "
        f"{changed[0][1:] if changed else (len(cells), len(again))}")

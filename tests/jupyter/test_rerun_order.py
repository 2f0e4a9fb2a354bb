"""In class, cells get re-run: a student runs a cell twice, or goes back to an earlier one and
then to the checks again. Every notebook must survive that. Each is run top to bottom, then
every code cell after the setup cell is run a second time in order, ending with the checks:
a check that names a session id literally (s0001) or a cell that appends to a file twice
fails here, not in front of the class."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import nbformat
import pytest
from jupyter_client.manager import KernelManager
from nbclient import NotebookClient
from nbval.kernel import CURRENT_ENV_KERNEL_NAME, NbvalKernelspecManager

from .conftest import lab_notebooks
from .test_notebooks import EXPECTED, NOTEBOOKS

LABS = lab_notebooks()


def run_twice(path: Path, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Run the notebook (from a copy of its folder), then its cells 2..n again; the outputs of
    the last cell's second run."""
    nb = nbformat.read(path, as_version=4)
    code = [(i, c) for i, c in enumerate(nb.cells) if c.cell_type == "code"]
    with tempfile.TemporaryDirectory(prefix="agentos-rerun-") as tmp:
        shutil.copytree(path.parent, tmp, dirs_exist_ok=True)  # a lab's starter files beside it
        monkeypatch.setenv("TMPDIR", tmp)  # the kernel's scratch workspaces go where we clean up
        km = KernelManager(kernel_name=CURRENT_ENV_KERNEL_NAME,
                           kernel_spec_manager=NbvalKernelspecManager())
        # nbclient raises on an error, except in cells tagged raises-exception (shown on purpose).
        client = NotebookClient(nb, km=km, timeout=300, record_timing=False,
                                store_widget_state=False, resources={"metadata": {"path": tmp}})
        with client.setup_kernel():
            for i, cell in code + code[1:]:
                client.execute_cell(cell, i)
    return [o.get("text", "") for o in code[-1][1].outputs]


@pytest.mark.parametrize("name", EXPECTED)
def test_every_cell_can_be_run_again(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    printed = "".join(run_twice(NOTEBOOKS / f"{name}.ipynb", monkeypatch))
    assert printed.count("✓ ") >= 3 and "✗" not in printed, printed


@pytest.mark.parametrize("lab", LABS, ids=[p.stem for p in LABS])
def test_every_lab_cell_can_be_run_again(lab: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A lab's last cell is a graded test: the second pass must still pass every one of them.
    assert "✗" not in "".join(run_twice(lab, monkeypatch))

"""Fixtures for the workbench tests, and the nbval wiring.

Every notebook in notebooks/ is collected here, so plain `pytest` runs them: each is copied
into a scratch directory first (the kernel's cwd), run cell by cell by nbval in a kernel of
this Python, and its outputs are compared with the stored ones (not --nbval-lax), after
the substitutions in nbval_sanitize.cfg. The notebooks themselves start with
`scratch_workspace()`, so nothing they do is written into the repository either. The labs,
notebooks/labs/<name>/<name>.ipynb, run the same way in their solution form, each from a
copy of its whole folder so its starter files are beside it.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import agentos_kernel

HERE = Path(__file__).resolve().parent
REPO = Path(agentos_kernel.__file__).resolve().parents[1]
NOTEBOOKS = REPO / "notebooks"
LABS = NOTEBOOKS / "labs"
SANITIZE = HERE / "nbval_sanitize.cfg"
TRIGGER = "test_notebooks.py"  # the notebooks are collected beside this module's tests


def lab_notebooks() -> list[Path]:
    """Every lab's instructor notebook: notebooks/labs/<name>/<name>.ipynb."""
    return sorted(p for p in LABS.glob("*/*.ipynb") if p.stem == p.parent.name)


@pytest.fixture
def ws(workspace: Path) -> Path:
    """A fresh workspace made by `agentos init` (tests/conftest.py's `workspace`)."""
    return workspace


@pytest.fixture
def ip(ws: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """An IPython shell with a fresh set of the workbench magics, its cwd in `ws`."""
    from IPython import get_ipython
    from IPython.testing.globalipapp import start_ipython

    from agentos_kernel import load_ipython_extension

    shell = start_ipython() or get_ipython()
    load_ipython_extension(shell)  # a new AgentMagics instance: no state from earlier tests
    monkeypatch.chdir(ws)
    yield shell


# -- a skipped browser test says why, whatever -r option is in force -----------------------

_BROWSER_SKIPS: list[str] = []


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.skipped and "test_browser.py" in report.nodeid and isinstance(report.longrepr, tuple):
        _BROWSER_SKIPS.append(str(report.longrepr[2]).removeprefix("Skipped: "))


def pytest_terminal_summary(terminalreporter: Any) -> None:
    for reason in _BROWSER_SKIPS:
        terminalreporter.write_line(f"SKIPPED {reason}", yellow=True, bold=True)


# -- nbval --------------------------------------------------------------------------------

def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    if file_path.name == TRIGGER and file_path.parent == HERE:
        return NotebookSuite.from_parent(parent, name="notebooks", path=file_path)
    return None


class NotebookSuite(pytest.Collector):
    """notebooks/*.ipynb and the labs, each run by nbval from a scratch copy."""

    def collect(self) -> list[pytest.Collector]:
        try:
            from nbval.plugin import IPyNbFile
        except ImportError:  # nbval is in the `test` extra; without it, say so instead of passing
            raise pytest.UsageError("nbval is not installed: pip install -e '.[test]'") from None
        sources = sorted(NOTEBOOKS.glob("*.ipynb"))
        if not sources:
            raise pytest.UsageError(f"no notebooks in {NOTEBOOKS}")
        scratch = Path(tempfile.mkdtemp(prefix="agentos-nbval-"))
        self.config.add_cleanup(lambda: shutil.rmtree(scratch, ignore_errors=True))
        # A kernel of the Python running pytest, whatever kernelspec is installed elsewhere.
        self.config.option.nbval_current_env = True

        kernel_tmp = scratch / "tmp"
        kernel_tmp.mkdir()

        class ScratchNotebook(IPyNbFile):
            def get_sanitize_files(self) -> list[str]:
                return [str(SANITIZE), *super().get_sanitize_files()]

            def setup(self) -> None:
                # The kernel's TMPDIR (where scratch_workspace() puts its workspace) is inside
                # our scratch dir: nbval kills its kernels, so their atexit clean-up never runs.
                saved = os.environ.get("TMPDIR")
                os.environ["TMPDIR"] = str(kernel_tmp)
                try:
                    super().setup()
                finally:
                    if saved is None:
                        del os.environ["TMPDIR"]
                    else:
                        os.environ["TMPDIR"] = saved

        items = []
        for src in sources:
            copy = scratch / src.name
            shutil.copy2(src, copy)
            items.append(ScratchNotebook.from_parent(self, path=copy, nodeid=f"notebooks/{src.name}"))
        for src in lab_notebooks():
            folder = scratch / "labs" / src.parent.name  # nbval runs the kernel in the notebook's folder
            shutil.copytree(src.parent, folder)
            items.append(ScratchNotebook.from_parent(self, path=folder / src.name,
                                                     nodeid=f"notebooks/labs/{src.parent.name}/{src.name}"))
        return items

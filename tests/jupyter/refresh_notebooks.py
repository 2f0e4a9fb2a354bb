"""Re-run the workbench notebooks and store their outputs the way nbval will compare them.

    python -m tests.jupyter.refresh_notebooks                # every notebook and every lab
    python -m tests.jupyter.refresh_notebooks 00_tour        # some of them
    python -m tests.jupyter.refresh_notebooks lab-01-tools   # a lab (notebooks/labs/<name>/)

Run it after editing a notebook. Each notebook is executed from a scratch copy (like the
tests do; for a lab, its whole folder, so its starter files are beside it) in a kernel of
this Python, then normalised so that re-running it gives the same file byte for byte: cell
ids are their positions, no timing metadata, one output per run of writes to a stream, no
widget state (its model ids are random, and nbval never compares widget views), and a
widget's output keeps only its plain-text repr, which is what a reader sees before the
kernel runs.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path

import nbformat
from jupyter_client.manager import KernelManager
from nbclient import NotebookClient
from nbval.kernel import CURRENT_ENV_KERNEL_NAME, NbvalKernelspecManager

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"
LABS = NOTEBOOKS / "labs"
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
KERNELSPEC = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}


def normalise(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """Make the stored notebook a function of its sources and outputs only."""
    nb.metadata = nbformat.from_dict({"kernelspec": KERNELSPEC, "language_info": {"name": "python"}})
    for i, cell in enumerate(nb.cells):
        cell.id = f"cell-{i:02d}"
        cell.metadata.pop("execution", None)
        if "outputs" in cell:
            cell.outputs = _coalesced(cell.outputs)
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            if WIDGET_VIEW in data:
                del data[WIDGET_VIEW]
            output.get("metadata", {}).pop(WIDGET_VIEW, None)
    return nb


def _coalesced(outputs: list) -> list:
    """Consecutive writes to one stream as one output: how a print is cut into chunks depends
    on when the kernel flushed (nbval joins them too before comparing)."""
    merged: list = []
    for out in outputs:
        last = merged[-1] if merged else None
        if last is not None and out.get("output_type") == last.get("output_type") == "stream" \
                and out.get("name") == last.get("name"):
            last["text"] += out["text"]
        else:
            merged.append(out)
    return merged


def refresh(path: Path, timeout: int = 300) -> None:
    """Execute `path` from a scratch copy and write its normalised outputs back."""
    nb = nbformat.read(path, as_version=4)
    with tempfile.TemporaryDirectory(prefix="agentos-refresh-") as tmp:
        if path.parent == NOTEBOOKS:
            cwd = Path(tmp)
            shutil.copy2(path, cwd / path.name)
        else:  # a lab: the kernel runs in a copy of its folder, beside its starter files
            cwd = Path(tmp) / path.parent.name
            shutil.copytree(path.parent, cwd)
        km = KernelManager(kernel_name=CURRENT_ENV_KERNEL_NAME, kernel_spec_manager=NbvalKernelspecManager())
        client = NotebookClient(nb, km=km, timeout=timeout, record_timing=False, store_widget_state=False,
                                resources={"metadata": {"path": str(cwd)}})
        saved = os.environ.get("TMPDIR")
        os.environ["TMPDIR"] = tmp  # the kernel's scratch workspaces go where we clean up
        try:
            client.execute()
        finally:
            if saved is None:
                del os.environ["TMPDIR"]
            else:
                os.environ["TMPDIR"] = saved
            if km.has_kernel:
                km.shutdown_kernel(now=True)
    nbformat.validate(normalise(nb))
    nbformat.write(nb, path)


def find(name: str) -> Path:
    """notebooks/<name>.ipynb, else the lab notebooks/labs/<name>/<name>.ipynb."""
    stem = name.removesuffix(".ipynb")
    for path in (NOTEBOOKS / f"{stem}.ipynb", LABS / stem / f"{stem}.ipynb"):
        if path.is_file():
            return path
    raise SystemExit(f"no notebook {name!r} in {NOTEBOOKS} or {LABS}")


def main(names: list[str]) -> int:
    paths = [find(n) for n in names] or \
        [*sorted(NOTEBOOKS.glob("*.ipynb")), *sorted(LABS.glob("*/*.ipynb"))]
    for path in paths:
        refresh(path)
        print(f"refreshed {path.relative_to(NOTEBOOKS.parent)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

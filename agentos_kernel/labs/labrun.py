"""Run a notebook's code cells in a fresh kernel of the current Python, as nbgrader autograde does.

nbgrader's Execute preprocessor (nbgrader/preprocessors/execute.py) runs with
`allow_errors=True`, `interrupt_on_timeout=True` and an `error_on_timeout` reply: a cell that
errors or times out is recorded and the run goes on in the same kernel. We do the same,
so a hang in one answer costs that cell (and whatever depends on it) and no more, and the
two graders agree. One thing is added: after a timeout the kernel must answer a trivial
request within the timeout; if it does not (the code ignores the interrupt), the remaining
cells are marked not run instead of each waiting out its own timeout. A dead kernel
(os._exit, a segfault) ends the run the same way: later cells would only fail on lost state.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from .nbgrader_format import LabInputError

TIMEOUT_ENAME = "CellTimeoutError"  # the ename nbgrader's Execute.error_on_timeout uses


@dataclass(frozen=True)
class RunResult:
    """What happened to the cells of one run (their outputs are written into the notebook)."""

    not_run: dict[int, str]
    """Cell index -> why it was not run."""


def _native_kernel_manager(connection_file: Path) -> Any:
    """A kernel manager for ipykernel on `sys.executable`, ignoring any `python3` kernelspec a
    user installed (it may point at another Python without this package)."""
    from jupyter_client.kernelspec import KernelSpecManager
    from jupyter_client.manager import AsyncKernelManager

    return AsyncKernelManager(kernel_name="python3",
                              kernel_spec_manager=KernelSpecManager(kernel_dirs=[]),
                              connection_file=str(connection_file))


def run_notebook(nb: Any, cwd: Path, *, timeout: int, private: Path) -> RunResult:
    """Execute every code cell of `nb` in order, in place (outputs land in the cells).

    `cwd` is the kernel's working directory; `private` a scratch directory for the connection
    file and IPYTHONDIR (so no user profile or startup file runs, and nothing goes to HOME)."""
    from nbclient import NotebookClient
    from nbclient.exceptions import DeadKernelError

    replies: dict[int, dict[str, Any]] = {}

    def keep_reply(cell: Any, cell_index: int, execute_reply: dict[str, Any]) -> None:
        replies[cell_index] = execute_reply

    client = NotebookClient(
        nb, km=_native_kernel_manager(private / "kernel.json"), timeout=timeout,
        interrupt_on_timeout=True, allow_errors=True, record_timing=False, startup_timeout=60,
        error_on_timeout={"ename": TIMEOUT_ENAME,
                          "evalue": f"no reply within the {timeout} s timeout; the cell was interrupted",
                          "traceback": []},
        extra_arguments=["--HistoryManager.hist_file=:memory:"], shell_timeout_interval=1,
        on_cell_executed=keep_reply,
        shutdown_kernel="immediate")  # outputs are in; a stuck kernel would only delay the exit
    env = {**os.environ, "IPYTHONDIR": str(private / "ipython")}
    not_run: dict[int, str] = {}
    stop: str | None = None
    log_path = private / "kernel.log"  # the kernel process's own chatter, shown if it fails to start
    with log_path.open("w") as log, _kernel(client, cwd, env, log, log_path):
        for i, cell in enumerate(nb.cells):
            if cell.cell_type != "code":
                continue
            if stop:
                not_run[i] = stop
                continue
            try:
                client.execute_cell(cell, i)
            except DeadKernelError:
                _record_error(cell, "DeadKernelError", "the kernel died while running this cell")
                stop = f"the kernel died in cell {i}"
                continue
            _record_reply(cell, replies.get(i))
            if _timed_out(cell) and not _responds(client):
                stop = f"the kernel did not recover from the timeout in cell {i}"
    return RunResult(not_run)


class KernelStartError(LabInputError):
    """The kernel did not start (the message carries the end of its log)."""


@contextmanager
def _kernel(client: Any, cwd: Path, env: dict[str, str], log: IO[str], log_path: Path) -> Iterator[None]:
    try:
        ctx = client.setup_kernel(cwd=str(cwd), env=env, stdout=log, stderr=log, cleanup_kc=True)
        ctx.__enter__()
    except (RuntimeError, TimeoutError) as exc:
        log.flush()
        tail = " | ".join(log_path.read_text(errors="replace").strip().splitlines()[-5:])
        raise KernelStartError(f"could not start a Python kernel ({exc}); "
                               f"its log: {tail or '(empty)'}") from None
    try:
        yield
    finally:
        ctx.__exit__(None, None, None)


def _record_error(cell: Any, ename: str, evalue: str) -> None:
    from nbformat.v4 import new_output

    cell.outputs.append(new_output("error", ename=ename, evalue=evalue, traceback=[]))


def _record_reply(cell: Any, reply: dict[str, Any] | None) -> None:
    """nbgrader's Execute.on_cell_executed: an error reply (a timeout) with no matching error
    output gets one, so scoring by outputs sees it."""
    if not reply or reply["content"].get("status") != "error":
        return
    content = reply["content"]
    if not any(o.output_type == "error" and o.get("ename") == content.get("ename") for o in cell.outputs):
        _record_error(cell, content.get("ename", "Error"), content.get("evalue", ""))


def _timed_out(cell: Any) -> bool:
    return any(o.output_type == "error" and o.get("ename") == TIMEOUT_ENAME for o in cell.outputs)


def _responds(client: Any) -> bool:
    """Does the kernel run a no-op within the timeout (after the interrupt)?"""
    msg_id = client.kc.execute("pass", silent=True, store_history=False)
    return client.wait_for_reply(msg_id) is not None

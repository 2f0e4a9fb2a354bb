"""Run a notebook's code cells in a fresh kernel of the current Python, as nbgrader autograde does.

nbgrader's Execute preprocessor (nbgrader/preprocessors/execute.py) runs with
`allow_errors=True`, `interrupt_on_timeout=True` and an `error_on_timeout` reply: a cell that
errors or times out is recorded and the run goes on in the same kernel. We do the same,
so a hang in one answer costs that cell (and whatever depends on it) and no more, and the
two graders agree. One thing is added: after a timeout the kernel must answer a trivial
request within the timeout; if it does not (the code ignores the interrupt), the remaining
cells are marked not run instead of each waiting out its own timeout. A dead kernel
(os._exit, a segfault, a limit of its sandbox) ends the run the same way: later cells would
only fail on lost state. The run as a whole has a time limit too (`wall`).

The kernel is started as `KernelLaunch` says (box.py: in the grader's sandbox); this
module only drives it, from outside.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from .nbgrader_format import LabInputError

TIMEOUT_ENAME = "CellTimeoutError"  # the ename nbgrader's Execute.error_on_timeout uses
MAX_OUTPUT_CHARS = 2 << 20  # a cell's outputs kept in the grader; a lab's are a few KiB
KEPT_CHARS = 2000  # of an output past that limit that still decides the score
CANCELLED = "the grading was interrupted before this cell"
LOST = "the kernel's outputs stopped arriving (one over the 64 MiB message limit, or the kernel is stuck)"


@dataclass(frozen=True)
class RunResult:
    """What happened to the cells of one run (their outputs are written into the notebook)."""

    not_run: dict[int, str]
    """Cell index -> why it was not run."""


@dataclass(frozen=True)
class KernelLaunch:
    """How to start the kernel, and what to ask its sandbox while it runs."""

    km: Any
    """The kernel manager (its command, connection file and transport)."""
    cwd: Path
    """The kernel's working directory."""
    env: dict[str, str]
    """The kernel's whole environment."""
    popen: dict[str, Any]
    """More arguments for the kernel's Popen (fds to pass, ...)."""
    log: Path
    """Where the kernel process's own output goes (outside its sandbox)."""
    after_cell: Callable[[int], None] = lambda i: None
    """Called with -1 once the kernel is ready, then after each code cell with its index
    (e.g. to tell what the sandbox reported during which cell)."""
    death_cause: Callable[[], str | None] = lambda: None
    """Why the kernel died (a limit, a signal), asked once it has."""
    cancelled: Callable[[], bool] = lambda: False
    """Asked before each cell: True stops the run there (a batch grading was interrupted)."""


def run_notebook(nb: Any, launch: KernelLaunch, *, timeout: int, wall: float) -> RunResult:
    """Execute every code cell of `nb` in order, in place (outputs land in the cells).

    `timeout` bounds each cell; `wall` the whole run (seconds): a cell still running at the
    wall limit is interrupted, and the cells after it are not run."""
    from nbclient.exceptions import CellTimeoutError, DeadKernelError

    replies: dict[int, dict[str, Any]] = {}

    def keep_reply(cell: Any, cell_index: int, execute_reply: dict[str, Any]) -> None:
        replies[cell_index] = execute_reply

    client = _capped_client()(
        nb, km=launch.km, timeout=timeout,
        interrupt_on_timeout=True, allow_errors=True, record_timing=False, startup_timeout=60,
        error_on_timeout=_timeout_error(f"no reply within the {timeout} s timeout; the cell was interrupted"),
        extra_arguments=["--HistoryManager.hist_file=:memory:"], shell_timeout_interval=1,
        raise_on_iopub_timeout=True,  # as nbgrader: outputs that never arrive are not a pass
        on_cell_executed=keep_reply,
        shutdown_kernel="immediate")  # outputs are in; a stuck kernel would only delay the exit
    deadline = time.monotonic() + wall
    walled = f"the run reached its total time limit of {wall:g} s"
    not_run: dict[int, str] = {}
    stop: str | None = None
    with launch.log.open("w") as log, _kernel(client, launch, log):
        launch.after_cell(-1)
        for i, cell in enumerate(nb.cells):
            if cell.cell_type != "code":
                continue
            left = deadline - time.monotonic()
            if not stop and left < 1:
                stop = walled
            if not stop and launch.cancelled():
                stop = CANCELLED
            if stop:
                not_run[i] = stop
                continue
            client.timeout = min(timeout, int(left))
            if client.timeout < timeout:  # the wall limit comes first
                client.error_on_timeout = _timeout_error(f"{walled}; the cell was interrupted")
            started = time.monotonic()
            try:
                client.execute_cell(cell, i)
            except CellTimeoutError:  # the reply came, the outputs (their closing 'idle') did not
                if time.monotonic() - started < client.timeout:  # no interrupt to blame
                    _record_error(cell, "OutputLost", f"{LOST}; the cell's outputs are incomplete")
                    stop = f"{LOST} in cell {i}"  # none after could be trusted either
                    continue
                # timed out, interrupted, and still busy: the check below finds it stuck
                _record_error(cell, TIMEOUT_ENAME, client.error_on_timeout["evalue"])
            except DeadKernelError:
                cause = launch.death_cause()
                _record_error(cell, "DeadKernelError", "the kernel died while running this cell"
                              + (f" ({cause})" if cause else ""))
                stop = f"the kernel died in cell {i}" + (f" ({cause})" if cause else "")
                continue
            finally:
                launch.after_cell(i)
            _record_reply(cell, replies.get(i))
            if _timed_out(cell) and client.timeout < timeout:
                stop = walled
            elif _timed_out(cell) and not _responds(client):
                stop = f"the kernel did not recover from the timeout in cell {i}"
    return RunResult(not_run)


def _capped_client() -> Any:
    from nbclient import NotebookClient

    class CappedClient(NotebookClient):
        """Keeps at most MAX_OUTPUT_CHARS of each cell's outputs, so a notebook printing
        without end cannot fill the grader's memory (the kernel's own is limited by its
        sandbox). Past it, what scores a cell is still kept, cut short: every error, the first
        stderr text, the first result; the rest is dropped, once with a notice."""

        def output(self, outs: list[Any], msg: dict[str, Any], display_id: str | None,
                   cell_index: int) -> Any:
            content = msg["content"]
            spent: dict[int, int] = self.__dict__.setdefault("_spent", {})  # chars a cell
            spent[cell_index] = spent.get(cell_index, 0) + _chars(content)
            if spent[cell_index] <= MAX_OUTPUT_CHARS:
                return super().output(outs, msg, display_id, cell_index)
            kind, name = msg["msg_type"], content.get("name")
            decides = kind == "error" or (kind == "stream" and name == "stderr" and not any(
                o.get("name") == "stderr" for o in outs)) or (kind == "execute_result" and not any(
                    o.output_type == "execute_result" for o in outs))
            if decides:
                return super().output(outs, _cut(msg), display_id, cell_index)
            if not any(o.get("text") == _CUT_NOTICE for o in outs):
                from nbformat.v4 import new_output

                outs.append(new_output("stream", name="stdout", text=_CUT_NOTICE))
            return None

    return CappedClient


_CUT_NOTICE = f"[agentos lab check: outputs past {MAX_OUTPUT_CHARS >> 20} M characters were dropped]\n"


def _chars(content: dict[str, Any]) -> int:
    """About how much memory an output message's content takes (its texts)."""
    return (len(str(content.get("text", ""))) + sum(len(str(v)) for v in (content.get("data") or {}).values())
            + len(str(content.get("evalue", ""))) + sum(len(str(t)) for t in content.get("traceback") or []))


def _cut(msg: dict[str, Any]) -> dict[str, Any]:
    c = dict(msg["content"])
    if "text" in c:
        c["text"] = str(c["text"])[:KEPT_CHARS]
    if "data" in c:
        c["data"] = {k: str(v)[:KEPT_CHARS] for k, v in c["data"].items()}
    if "evalue" in c:
        c["evalue"] = str(c["evalue"])[:KEPT_CHARS]
        c["traceback"] = [str(t)[:KEPT_CHARS] for t in (c.get("traceback") or [])[-5:]]
    return {**msg, "content": c}


def _timeout_error(evalue: str) -> dict[str, Any]:
    return {"ename": TIMEOUT_ENAME, "evalue": evalue, "traceback": []}


class KernelStartError(LabInputError):
    """The kernel did not start (the message carries the end of its log)."""


@contextmanager
def _kernel(client: Any, launch: KernelLaunch, log: IO[str]) -> Iterator[None]:
    try:
        ctx = client.setup_kernel(cwd=str(launch.cwd), env=launch.env, stdout=log, stderr=log,
                                  cleanup_kc=True, **launch.popen)
        ctx.__enter__()
    except (RuntimeError, TimeoutError) as exc:
        log.flush()
        tail = " | ".join(launch.log.read_text(errors="replace").strip().splitlines()[-5:])
        cause = launch.death_cause()
        raise KernelStartError(f"could not start a Python kernel ({exc}); "
                               + (f"{cause}; " if cause else "")
                               + f"its log: {tail or '(empty)'}") from None
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

"""A fork server for lab kernels: ipykernel and the lab's modules imported once a batch,
a fresh sandboxed kernel forked from that template for each student.

A lab kernel started from nothing spends most of a short lab's CPU time before the first
student line runs: the interpreter, ipykernel and IPython, agentos_kernel and what the lab
imports. The template (`_template.py`) pays that once. It never runs student code and never
holds a request: each kernel is a fresh fork of a process in the state it had after its
imports, so nothing one student's code did (a module global, a patched function, a thread, a
file) can be in the next student's kernel; docs/labs.md "The fork server" has the argument.

Every layer of the ordinary launcher (run.py) is applied in each forked kernel, by the same
code (`_confine.confine`): namespaces of its own (network and pid, entered right after the
fork, inside the batch's), limits, its cgroups, capabilities, no_new_privs, seccomp and a
Landlock ruleset naming only its box. The kernel manager runs `_forkclient.py` where it would
run `_confine.py`, so interrupts, kills and the exit status go through as before.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import signal
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

from . import run as sandbox

_HERE = Path(__file__).resolve().parent
# What a course lab's cells import besides the kernel itself (pandas alone is ~0.25 s of CPU).
PRELOAD = ("IPython", "agentos_kernel", "agentos_kernel.kernel", "agentos_kernel.testing",
           "agentos_kernel.jupyter.magics", "agentos_kernel.jupyter.api", "agentos_kernel.jupyter.display",
           "agentos_kernel.tools.dispatch", "agentos_kernel.tools.builtin", "agentos_kernel.providers.faults",
           "agentos_kernel.providers.scripted", "agentos_kernel.store.replay.snapshot", "agentos_kernel.runs",
           "agentos_kernel.hooks.loader", "agentos_kernel.validate", "jsonschema_rs", "yaml", "pandas",
           "sqlite3")
START_SECONDS = 60


class ForkServerError(RuntimeError):
    """The template process did not start (the message carries the end of its log)."""


class ForkServer:
    """One template process for a batch (a context manager: it is killed on exit)."""

    def __init__(self, preload: tuple[str, ...] = PRELOAD) -> None:
        self._dir = tempfile.TemporaryDirectory(prefix="agentos-forkserver-")
        os.chmod(self._dir.name, 0o700)  # only the grader may reach the socket
        self.socket = os.path.join(self._dir.name, "s")
        self._log = Path(self._dir.name) / "template.log"
        self._preload = preload
        self._lock = threading.Lock()
        self.restarts = 0
        """How many times a dead template was started again during the batch."""
        try:
            self._start()
        except ForkServerError:
            self._dir.cleanup()
            raise

    def _start(self) -> None:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.socket)  # a dead template's socket: the new one binds the same path
        # BLAS libraries start their threads when loaded: one thread each (a kernel's numpy
        # computes on one core) keeps the template single-threaded, as fork needs.
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8", "HOME": self._dir.name,
               "MALLOC_ARENA_MAX": "2", "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1",
               "MKL_NUM_THREADS": "1"}
        argv = [*sandbox.probe().unshare, sys.executable, "-E", "-s", str(_HERE / "_template.py"),
                self.socket, *self._preload]
        with self._log.open("wb") as log:
            # the grader's environment (API keys and all) never reaches the template: built from nothing
            # stdin: a pipe the template watches; it exits when the grader goes, however it goes
            self._proc = subprocess.Popen(argv, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                          stderr=log, start_new_session=True, cwd=self._dir.name)
        self._wait_ready()

    def _wait_ready(self) -> None:
        assert self._proc.stdout is not None
        with selectors.DefaultSelector() as sel:
            sel.register(self._proc.stdout, selectors.EVENT_READ)
            ready = sel.select(START_SECONDS) and self._proc.stdout.readline() == b"ready\n"
        if not ready:
            tail = " | ".join(self._log.read_text(errors="replace").strip().splitlines()[-2:])
            self._reap()
            raise ForkServerError(f"the lab kernels' fork server did not start: {tail or '(no output)'}; "
                                  "pass --no-fork-server to start each kernel from scratch")

    def prefix(self) -> list[str]:
        """The launcher argv for `run.launcher(via=...)`: the client that asks for a kernel.
        A template that died (the OOM killer, an operator's kill) is started again first, so
        one lost process does not turn every later student of the batch into an error row;
        ForkServerError if it cannot start."""
        with self._lock:  # the batch's threads ask at once; one of them restarts it
            if self._proc.poll() is not None:
                self._reap()
                self.restarts += 1
                self._start()
        return [sys.executable, "-I", "-S", str(_HERE / "_forkclient.py"), self.socket]

    def lost_since(self, restarts: int) -> bool:
        """Whether the template died (or was started again) since `self.restarts` was
        `restarts`: a kernel forked before then died with it, through no fault of its student."""
        return self.restarts != restarts or self._proc.poll() is not None

    def close(self) -> None:
        """Kill the template (and, as pid 1 of the batch's namespace, whatever is left in it)."""
        self._reap()
        self._dir.cleanup()

    def _reap(self) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self._proc.pid, signal.SIGKILL)
        self._proc.wait()
        for pipe in (self._proc.stdin, self._proc.stdout):
            if pipe is not None:
                pipe.close()

    def __enter__(self) -> ForkServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

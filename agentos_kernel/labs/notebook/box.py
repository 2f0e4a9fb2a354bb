"""The sandbox a lab check's kernel runs in: the grader's (sandbox/run.py) around ipykernel.

Only the kernel is confined; the client (nbclient, holding the notebook with the hidden
tests) stays in the grader and sends each cell when it runs, as nbgrader does. They talk
over ZMQ on Unix sockets in the box (`transport="ipc"`): the kernel has no network, and
Landlock lets it make sockets only in the box. The box (`sandbox.Box`):

- `sub/`: the kernel's working dir: the files of the student's folder (and the source
  folder's non-notebook files), the student's own notebook as submitted, nothing else;
- `run/`: the connection file and the kernel's sockets;
- `pylib/agentos_kernel`: a link to the package, so the kernel imports it without being
  able to read the directory it sits in (in a checkout: the repository, notebooks/ and all);
- `home/`, `tmp/`, `site/` as for `agentos grade`.

The kernel may read, besides the system and Python prefixes: the package and the parts of
the reference workspace it loads (schemas/, agents/, skills/, workflows/, agentos.yaml,
cassettes/, conformance/), never the directory holding them.
"""

from __future__ import annotations

import json
import os
import signal
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import zmq
from jupyter_client.manager import AsyncKernelManager
from traitlets import List, Type, Unicode

from ..sandbox import cgroups
from ..sandbox import run as sandbox
from .kernel_client import PromptKernelClient
from .nbgrader_format import LabInputError
from .run import KernelLaunch, RunResult, run_notebook

REFERENCE_PARTS = ("schemas", "agents", "skills", "workflows", "agentos.yaml", "cassettes", "conformance")
SYSTEM_CONFIG = ("/etc/ipython", "/etc/jupyter")  # what IPython and Jupyter look for at start
MAX_MESSAGE_BYTES = 64 << 20
MAX_SOCKET_PATH = 100  # sun_path holds 108 bytes; the kernel appends "-ipc-<n>"


class SandboxedKernelManager(AsyncKernelManager):
    """A kernel manager whose kernel command runs through the sandbox's launcher."""

    launcher = List(Unicode(), help="argv prefix (unshare ... _confine.py CONFIG --)")

    def format_kernel_cmd(self, extra_arguments: list[str] | None = None) -> list[str]:
        return [*self.launcher, *super().format_kernel_cmd(extra_arguments)]

    client_factory = Type(PromptKernelClient, klass="jupyter_client.asynchronous.AsyncKernelClient")

    async def _async_wait(self, pollinterval: float = 0.1) -> None:
        # after a kill, jupyter_client looks every 0.1 s whether the kernel is gone; a lab
        # kernel is gone in milliseconds, and a batch waits on each one
        await super()._async_wait(pollinterval=0.01)

    def client(self, **kwargs: Any) -> Any:
        kc = super().client(**kwargs)
        # A message larger than this (one giant output) is dropped unread (zmq resets that
        # connection) instead of being read whole into the grader's memory.
        kc.context.setsockopt(zmq.MAXMSGSIZE, MAX_MESSAGE_BYTES)
        return kc


@dataclass(frozen=True)
class Limits:
    """What the lab kernel may use."""

    memory_bytes: int
    """Address space of each process, and (with a memory cgroup) of all together."""
    max_processes: int
    """Processes at once (a pids cgroup, else RLIMIT_NPROC)."""
    wall_seconds: float
    """The whole run: the launcher kills everything past it (plus a grace period)."""


@dataclass(frozen=True)
class KernelBox:
    """A box ready for a kernel, and how to start it there."""

    box: sandbox.Box
    """The box (its `sub/` is the kernel's working dir)."""
    km: SandboxedKernelManager
    """The manager; its kernel command goes through the launcher."""
    env: dict[str, str]
    """The kernel's whole environment."""
    report: Path
    """The protection report, outside the box."""
    report_fd: int
    """Open on `report` for the launcher; passed to the kernel process only."""
    cgroups: cgroups.RunCgroups
    """The run's cgroups (for the OOM count and the cleanup)."""
    limits: Limits
    """The limits the launcher applies."""

    def popen_kwargs(self) -> dict[str, Any]:
        # independent: no JPY_PARENT_PID, whose poller would see the namespace's pid 1 as
        # the parent and stop the kernel at once; the launcher's wall limit ends it instead.
        return {"pass_fds": (self.report_fd,), "independent": True}

    def close(self) -> list[str]:
        """Close the report fd and remove the cgroups; returns what could not be cleaned up."""
        os.close(self.report_fd)
        return self.cgroups.remove()


def kernel_readonly() -> tuple[str, ...]:
    """What the kernel reads besides the system and Python prefixes (see the module doc)."""
    import agentos_kernel

    from ...workspace import reference_dir

    package = Path(agentos_kernel.__file__).resolve().parent
    ref = reference_dir().resolve()
    return (str(package), *(str(ref / p) for p in REFERENCE_PARTS if (ref / p).exists()), *SYSTEM_CONFIG)


def make_kernel_box(root: Path, outside: Path, *, limits: Limits, require: tuple[str, ...],
                    via: list[str] | None = None) -> KernelBox:
    """A new, empty kernel box at `root` (the caller fills `box.sub`); `outside` is a
    directory out of the box for the report. `require`: the layers without which the
    launcher must not start the kernel. `via`: a fork server's client (`ForkServer.prefix`)."""
    from jupyter_client.kernelspec import KernelSpecManager

    import agentos_kernel

    box = sandbox.empty_box(root)
    run, pylib = root / "run", root / "pylib"
    run.mkdir()
    pylib.mkdir()
    (pylib / "agentos_kernel").symlink_to(Path(agentos_kernel.__file__).resolve().parent)
    if len(str(run / "kernel-ipc-00")) > MAX_SOCKET_PATH:
        raise LabInputError(f"{run}: too long a path for the kernel's sockets (Unix sockets take "
                            f"{MAX_SOCKET_PATH} bytes); set TMPDIR to a shorter directory")
    report = outside / "report.jsonl"
    fd = os.open(report, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    groups = cgroups.make(root.parent.name, max_processes=limits.max_processes,
                          memory_bytes=limits.memory_bytes)
    try:
        config = {"max_memory_bytes": limits.memory_bytes, "max_processes": limits.max_processes,
                  "cgroups": [list(g) for g in groups.dirs], "require": list(require),
                  "wall_seconds": int(limits.wall_seconds) + 30}
        prefix, env = sandbox.launcher(box, fd, readonly=kernel_readonly(), config=config, via=via, env={
            "PYTHONPATH": os.pathsep.join([str(root / "site"), str(pylib)]),
            "IPYTHONDIR": str(root / "home" / ".ipython"), "MPLCONFIGDIR": str(root / "tmp" / "matplotlib"),
            # Address space is what the memory limit counts: glibc's arena per thread reserves
            # 64 MiB each (a lab kernel: ~900 MiB reserved, 390 MiB with two arenas, ~115 MiB
            # resident), and BLAS libraries start a thread (stack and buffers) per core.
            "MALLOC_ARENA_MAX": "2", "OPENBLAS_NUM_THREADS": "2", "OMP_NUM_THREADS": "2",
            "MKL_NUM_THREADS": "2",
        })
        # the ipykernel of this Python, whatever `python3` kernelspec a user installed
        specs = KernelSpecManager(kernel_dirs=[])
        km = SandboxedKernelManager(kernel_name="python3", kernel_spec_manager=specs, transport="ipc",
                                    connection_file=str(run / "kernel.json"), launcher=prefix)
    except BaseException:
        os.close(fd)
        groups.remove()
        raise
    return KernelBox(box, km, env, report, fd, groups, limits)


@dataclass(frozen=True)
class Confinement:
    """What the sandbox held, lacked and denied during one check."""

    held: tuple[str, ...]
    """Each protection that held: 'name: what it enforced'."""
    missing: tuple[str, ...]
    """Each one that could not be applied, with its consequence."""
    attempts: tuple[str, ...]
    """What the notebook tried outside its box, by cell ('cell 3 tried to read ...')."""


def run_in_box(nb: Any, kb: KernelBox, *, timeout: int, wall: float,
               cancelled: Callable[[], bool] = lambda: False) -> tuple[RunResult, Confinement]:
    """Run `nb`'s cells in the kernel box (filled by the caller) and read what its sandbox saw;
    `cancelled` is asked before each cell (True: the cells left are not run)."""
    marks: list[tuple[int, int]] = []  # (cell index, report size after it)

    def after_cell(i: int) -> None:  # -1: the kernel is ready, no cell has run yet
        marks.append((i, kb.report.stat().st_size))

    launch = KernelLaunch(kb.km, kb.box.sub, kb.env, kb.popen_kwargs(), kb.report.parent / "kernel.log",
                          after_cell=after_cell, death_cause=lambda: _death_cause(kb), cancelled=cancelled)
    result = run_notebook(nb, launch, timeout=timeout, wall=wall)
    return result, confinement(kb, marks)


def confinement(kb: KernelBox, marks: list[tuple[int, int]]) -> Confinement:
    """The layers the launcher reported and the attempts the audit hook recorded, each
    attempt under the cell during which it was written (mark -1: the kernel's start)."""
    layers, attempts = sandbox.read_report(kb.report, sandbox.probe())
    held = tuple(dict.fromkeys(f"{x.name}: {x.what}" for x in layers if x.ok))
    missing = (*(f"{x.name}: {x.what}" for x in layers if not x.ok), *kb.cgroups.missing)
    landlock = any(x.name == "landlock" and x.ok for x in layers)
    denied = ": denied" if landlock else ": NOT denied (no Landlock)"
    found: list[str] = []
    offset = 0
    with kb.report.open("rb") as f:
        for line in f.read(1 << 20).splitlines(keepends=True):
            offset += len(line)
            attempt = _attempt(line)
            if attempt is None or attempt not in attempts:
                continue
            cell = next((i for i, size in marks if offset <= size), None)
            where = ("at the kernel's start" if cell == -1 else f"cell {cell}" if cell is not None
                     else "after the last cell")
            found.append(f"{where}: {attempt.describe()}{denied}")
    return Confinement(held, tuple(dict.fromkeys(missing)), tuple(dict.fromkeys(found)))


def _attempt(line: bytes) -> sandbox.Attempt | None:
    try:
        item = json.loads(line)
    except ValueError:
        return None
    a = item.get("attempt") if isinstance(item, dict) else None
    return sandbox.Attempt(str(a.get("kind")), str(a.get("target"))) if isinstance(a, dict) else None


def _death_cause(kb: KernelBox) -> str | None:
    """Why the kernel process ended: a limit of the sandbox, its refusal to start, a signal."""
    if kb.cgroups.oom_kills():
        return f"killed by the memory limit ({kb.limits.memory_bytes >> 20} MiB)"
    layers, _ = sandbox.read_report(kb.report, sandbox.probe())
    refused = [x.what for x in layers if x.name == "launcher" and not x.ok and "refused" in x.what]
    if refused:
        return f"the sandbox {refused[0]} (pass --unconfined to run without it)"
    process = getattr(kb.km.provisioner, "process", None)
    code = process.poll() if process is not None else None
    if code is None:
        return None
    sig = -code if code < 0 else code - 128 if 128 < code <= 128 + 64 else 0
    if sig == signal.SIGALRM:
        return f"killed at the run's total time limit ({kb.limits.wall_seconds:g} s)"
    if sig:
        return f"killed by {signal.Signals(sig).name}" if sig in signal.Signals._value2member_map_ else None
    return None

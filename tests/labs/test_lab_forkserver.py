"""The fork server (labs/sandbox/forkserver.py): each student's kernel is a fresh fork of a
template that never ran student code, so nothing one student's code did reaches the next
one's kernel, and every layer of the sandbox holds in a forked kernel as in a fresh one.

(test_lab_sandbox.py runs the attacks of its `run` fixture against a forked kernel too.)
"""

from __future__ import annotations

import os
import shutil
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentos_kernel.labs.notebook import batch
from agentos_kernel.labs.notebook.batch import find_students
from agentos_kernel.labs.notebook.check import check_notebook
from agentos_kernel.labs.sandbox import run as sandbox
from agentos_kernel.labs.sandbox.forkserver import ForkServer, ForkServerError

from ._lab_fixtures import SOURCE, cell, submission_copy
from .test_lab_grade import make_class, rows, run_cli
from .test_lab_sandbox import checking, probe

TIMEOUT = 20
pytestmark = pytest.mark.skipif(bool(sandbox.probe().missing),
                                reason=f"this machine cannot sandbox: {sandbox.probe().missing}")

# Student A leaves everything it can behind: a module global, a patched grading helper, a
# builtin, a thread, a module, an environment variable, a file in its folder, a handler.
LEAVE = '''
import agentos_kernel, agentos_kernel.testing, builtins, os, signal, sys, threading, time, types
agentos_kernel.LEAKED = "student A"
agentos_kernel.testing.check = lambda *a, **k: None
builtins.LEAKED = "student A"
threading.Thread(target=time.sleep, args=(300,), name="left-by-A", daemon=True).start()
sys.modules["left_by_a"] = types.ModuleType("left_by_a")
os.environ["LEFT_BY_A"] = "1"
open("left-by-A.txt", "w").write("A")
signal.signal(signal.SIGUSR1, lambda *a: None)
print("PROBE " + json.dumps({"left": True}))
'''
LOOK = '''
import agentos_kernel, agentos_kernel.testing, builtins, os, signal, sys, threading
print("PROBE " + json.dumps({
    "global": hasattr(agentos_kernel, "LEAKED"),
    "patched": agentos_kernel.testing.check.__module__ != "agentos_kernel.testing",
    "builtin": hasattr(builtins, "LEAKED"),
    "thread": any(t.name == "left-by-A" for t in threading.enumerate()),
    "module": "left_by_a" in sys.modules,
    "env": "LEFT_BY_A" in os.environ,
    "file": any(p.endswith("left-by-A.txt") for p in os.listdir(".")),
    "handler": signal.getsignal(signal.SIGUSR1) is not signal.SIG_DFL,
    "grader_env": "AGENTOS_GRADER_SECRET" in os.environ,
    "template_socket": TEMPLATE in sockets(),
}))
'''
# Every socket name among the kernel's fds (the template's listening socket must not be one).
SOCKETS = '''
import socket as _socket
def sockets():
    names = []
    for fd in range(3, 1024):
        try:
            s = _socket.socket(fileno=os.dup(fd))
        except OSError:
            continue
        try:
            names.append(str(s.getsockname()))
        except OSError:
            pass
        s.close()
    return names
'''


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[ForkServer]:
    monkeypatch.setenv("AGENTOS_GRADER_SECRET", "sk-not-for-students")  # the grader's environment
    with ForkServer() as fs:
        yield fs


def _run(path: Path, server: ForkServer | None, monkeypatch: pytest.MonkeyPatch) -> tuple[Any, Any]:
    score, executed = checking(monkeypatch, server)(path, timeout=TIMEOUT)
    return score, probe(executed)


def _student(tmp_path: Path, name: str, code: str, grade_id: str = "add") -> Path:
    def edit(nb: Any) -> None:
        cell(nb, grade_id).source = "import json\n" + code + "\n" + cell(nb, grade_id).source
    return submission_copy("all_correct", tmp_path / name, edit)


def test_nothing_a_student_leaves_reaches_the_next_students_kernel(server: ForkServer, tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    a = _student(tmp_path, "a", LEAVE)
    b = _student(tmp_path, "b", f"import os\nTEMPLATE = {server.socket!r}\n" + SOCKETS + LOOK)
    _, left = _run(a, server, monkeypatch)
    assert left == {"left": True}
    score, seen = _run(b, server, monkeypatch)
    assert seen == dict.fromkeys(seen, False) and len(seen) == 10
    assert not score.points_lost  # B's own answers, graded by the real check()


def test_a_forked_kernel_holds_every_layer_a_fresh_one_does(server: ForkServer, tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    ids_code = 'import os\nprint("PROBE " + json.dumps({"pid": os.getpid(), "ppid": os.getppid()}))'
    path = _student(tmp_path, "s", ids_code)
    fresh, _ = _run(path, None, monkeypatch)
    forked, ids = _run(path, server, monkeypatch)
    assert forked.protections == fresh.protections and not forked.unprotected
    assert {p.split(":")[0] for p in forked.protections} >= {"namespaces", "limits", "landlock", "seccomp"}
    assert ids == {"pid": 2, "ppid": 1}  # its own pid namespace, under its own launcher
    assert [r.points for r in forked.rows] == [r.points for r in fresh.rows]


def test_the_template_dies_with_the_grader_and_its_kernels_with_it(tmp_path: Path) -> None:
    fs = ForkServer()
    pid = fs._proc.pid
    fs.close()
    time.sleep(0.2)
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    assert not os.path.exists(fs.socket)


def test_the_template_exits_when_the_grader_is_gone() -> None:
    """However the grader ends (SIGKILL included), its end of the template's stdin closes."""
    fs = ForkServer()
    try:
        assert fs._proc.stdin is not None and fs._proc.poll() is None
        fs._proc.stdin.close()
        assert fs._proc.wait(timeout=20) == 0
    finally:
        fs.close()


def test_a_template_that_cannot_start_says_why() -> None:
    with pytest.raises(ForkServerError, match=r"No module named 'no_such_module_here'.*--no-fork-server"):
        ForkServer(preload=("no_such_module_here",))


def test_a_kernel_is_interrupted_and_killed_through_the_client(server: ForkServer, tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """A hanging cell is interrupted (SIGINT reaches the forked kernel) and the run goes on in
    the same kernel; killing the client kills the kernel."""
    path = _student(tmp_path, "h", "import time\ntime.sleep(60)", grade_id="total")
    started = time.monotonic()
    score = check_notebook(path, timeout=2, forkserver=server)
    assert time.monotonic() - started < 30
    assert {r.grade_id: r.points for r in score.rows} == {"test_add": 1, "test_total": 0, "explain": None,
                                                          "test_add_floats": 1}


def test_lab_grade_says_in_one_line_when_the_fork_server_cannot_start(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken() -> ForkServer:
        raise ForkServerError("the lab kernels' fork server did not start: boom; pass --no-fork-server ...")

    monkeypatch.setattr(batch, "ForkServer", broken)
    submitted = make_class(tmp_path)
    code, out, err = run_cli("lab", "grade", submitted, "--source", SOURCE, "--out", tmp_path / "out",
                             "--timeout", TIMEOUT, "--no-progress")
    assert code == 2 and out == "" and err.count("\n") == 1 and "--no-fork-server" in err
    assert rows(tmp_path / "out" / "gradebook.csv") == []
    code, out, err = run_cli("lab", "grade", submitted, "--source", SOURCE, "--out", tmp_path / "out2",
                             "--timeout", TIMEOUT, "--no-progress", "--no-fork-server")
    assert code == 0 and len(rows(tmp_path / "out2" / "gradebook.csv")) == len(find_students(submitted))


def _kill_template(fs: ForkServer) -> None:
    os.killpg(fs._proc.pid, signal.SIGKILL)  # as the OOM killer or an operator would
    fs._proc.wait()


def test_a_dead_template_is_started_again_for_the_next_kernel(tmp_path: Path) -> None:
    path = _student(tmp_path, "s", "pass")
    with ForkServer() as fs:
        _kill_template(fs)
        score = check_notebook(path, timeout=TIMEOUT, forkserver=fs)
        assert fs.restarts == 1 and not score.points_lost and not score.unprotected


def test_a_student_whose_kernel_died_with_the_template_is_graded_again(tmp_path: Path) -> None:
    """The template dies while a student's cell runs (its kernel dies with it, as the batch's
    pid 1 goes): the student is graded again in a kernel of the new template, in full."""
    submitted = tmp_path / "submitted"
    folder = submitted / "slow" / SOURCE.stem
    folder.mkdir(parents=True)
    slow = _student(tmp_path, "slow_src", "import time\ntime.sleep(3)")
    shutil.copy(slow, folder / SOURCE.name)
    lab = batch.load_criteria(SOURCE)
    with ForkServer() as fs:
        killer = threading.Timer(1.5, _kill_template, (fs,))
        killer.start()
        try:
            grade = batch.grade_student(lab, submitted, "slow", batch.Limits(timeout=TIMEOUT), forkserver=fs)
        finally:
            killer.cancel()
        assert fs.restarts == 1
    assert grade.status == batch.GRADED and grade.reason == "to grade by hand: explain", grade
    assert all(r.points == r.max_points for r in grade.rows if r.points is not None), grade.rows

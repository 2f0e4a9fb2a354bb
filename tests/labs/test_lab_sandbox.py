"""`agentos lab check` runs the notebook's kernel in the grader's sandbox (issue 20).

The attack as filed: an answer cell that globs the disk for the instructor notebook, reads
it and execs its solution cells, and writes files outside its folder. Now it finds and
reads nothing of the instructor's, scores what its own code earns, and writes nothing
outside its box. Also: no network (TCP, a Unix socket outside the box), processes, memory,
total time and output bounded, and a machine without the sandbox refused unless
`unconfined`. Each check starts a kernel (about 3-5 s).

Probe cells print one line `PROBE <json>`; the tests read it from the executed notebook
(captured from `labcheck.run_in_box`), so a probe says what it found, not only a score.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from agentos_kernel.labs.notebook import box as labbox
from agentos_kernel.labs.notebook import check as labcheck
from agentos_kernel.labs.notebook.check import SandboxUnavailable, check_notebook
from agentos_kernel.labs.notebook.release import release
from agentos_kernel.labs.notebook.run import LOST, KernelStartError
from agentos_kernel.labs.notebook.score import LabScore
from agentos_kernel.labs.sandbox import cgroups
from agentos_kernel.labs.sandbox import run as sandbox
from agentos_kernel.labs.sandbox.forkserver import ForkServer

from ..helpers import REPO, Cli
from ._lab_fixtures import SOURCE, cell, submission_copy

LAB01 = REPO / "notebooks" / "labs" / "lab-01-tools"
TIMEOUT = 20
requires_sandbox = pytest.mark.skipif(bool(sandbox.probe().missing),
                                      reason=f"this machine cannot sandbox: {sandbox.probe().missing}")
pytestmark = requires_sandbox

# The answer cell of the filed attack: glob the disk for notebooks, exec every solution cell
# found, then write outside the folder. It reports what it got as one PROBE line.
ATTACK = '''
import glob, json, os
stolen, written = [], []
candidates = list(DIRECT)
for root in ROOTS:
    candidates += glob.glob(os.path.join(root, "**", "*.ipynb"), recursive=True)
for path in dict.fromkeys(candidates):
    try:
        with open(path) as f:
            cells = json.load(f)["cells"]
    except (OSError, ValueError, KeyError):
        continue
    for c in cells:
        src = "".join(c["source"])
        if "BEGIN SOLUTION" in src or "BEGIN HIDDEN TESTS" in src:
            stolen.append(path)
            if c.get("metadata", {}).get("nbgrader", {}).get("solution"):
                try:
                    exec(src, globals())
                except Exception:
                    pass
for target in WRITES:
    try:
        with open(target, "w") as f:
            f.write("pwned")
        written.append(target)
    except OSError:
        pass
print("PROBE " + json.dumps({"stolen": sorted(set(stolen)), "written": written}))
'''


def _listing(root: Path) -> dict[str, bytes | None]:
    return {p.relative_to(root).as_posix(): p.read_bytes() if p.is_file() else None
            for p in sorted(root.rglob("*"))}


@pytest.fixture(scope="module")
def server() -> Iterator[ForkServer]:
    with ForkServer() as fs:
        yield fs


@pytest.fixture(params=["fresh", "forked"])
def run(monkeypatch: pytest.MonkeyPatch,
        request: pytest.FixtureRequest) -> Callable[..., tuple[LabScore, Any]]:
    """check_notebook, also returning the executed notebook (to read the probes' outputs);
    each test runs twice: a kernel started from scratch, and one forked from the fork server
    (which must hold every property the fresh one does)."""
    forked = request.getfixturevalue("server") if request.param == "forked" else None
    return checking(monkeypatch, forked)


def checking(monkeypatch: pytest.MonkeyPatch,
             forked: ForkServer | None) -> Callable[..., tuple[LabScore, Any]]:
    """check_notebook (its kernel forked from `forked` when given), also returning the
    executed notebook."""
    executed: list[Any] = []
    real = labcheck.run_in_box

    def keep(nb: Any, kb: Any, **kw: Any) -> Any:
        executed.append(nb)
        return real(nb, kb, **kw)

    monkeypatch.setattr(labcheck, "run_in_box", keep)

    def check(path: Path, **kw: Any) -> tuple[LabScore, Any]:
        executed.clear()
        score = check_notebook(path, **{"timeout": TIMEOUT, "forkserver": forked, **kw})
        return score, executed[0]
    return check


def probe(nb: Any) -> dict[str, Any]:
    """The PROBE line a cell of the executed notebook printed."""
    for c in nb.cells:
        for out in c.get("outputs", []):
            for line in out.get("text", "").splitlines():
                if line.startswith("PROBE "):
                    return json.loads(line[6:])
    raise AssertionError("no PROBE line in the outputs: " + repr([c.get("outputs") for c in nb.cells]))


def _fixture_probe(tmp_path: Path, code: str, grade_id: str = "add") -> Path:
    """The all-correct fixture submission with `code` run first in the cell `grade_id`."""
    def edit(nb: Any) -> None:
        cell(nb, grade_id).source = code + "\n" + cell(nb, grade_id).source
    return submission_copy("all_correct", tmp_path / "student", edit)


@pytest.mark.parametrize("with_source", [True, False], ids=["with-source", "self-check"])
def test_the_filed_attack_steals_nothing_and_writes_nothing(run: Any, tmp_path: Path,
                                                            with_source: bool) -> None:
    source = LAB01 / "lab-01-tools.ipynb"
    student = tmp_path / "student"
    release(LAB01, student)
    token = uuid.uuid4().hex
    writes = [LAB01 / f"pwned-{token}", Path("/tmp") / f"pwned-{token}", Path.home() / f"pwned-{token}",
              REPO / "notebooks" / f"pwned-{token}", student / f"pwned-{token}"]
    roots = [str(LAB01), str(LAB01.parent), str(REPO / "notebooks"), str(REPO), "/tmp", str(Path.home()),
             str(student), ".."]
    direct = [str(source.resolve()), *map(str, sorted(LAB01.parent.glob("*/*.ipynb")))]
    import nbformat

    nb = nbformat.read(student / source.name, as_version=4)
    cell(nb, "answer-a-schemas").source = (f"DIRECT, ROOTS = {direct!r}, {roots!r}\n"
                                           f"WRITES = {list(map(str, writes))!r}\n" + ATTACK)
    nbformat.write(nb, student / source.name)
    before = {d: _listing(d) for d in (LAB01, REPO / "notebooks", student)}
    score, executed = run(student / source.name, source=source if with_source else None, timeout=60)
    got = probe(executed)
    assert got == {"stolen": [], "written": []}
    assert score.total == 0 and score.max_total == 15  # what its own code earns (before: 9)
    assert all(not p.exists() for p in writes)
    assert {d: _listing(d) for d in before} == before
    denied = "\n".join(score.attempts)
    assert f"tried to read {source.resolve()}, outside the submission: denied" in denied
    assert f"tried to write {writes[0]}, outside the submission: denied" in denied
    assert f"tried to list {REPO / 'notebooks'}" in denied


def test_the_box_holds_neither_the_source_nor_the_hidden_tests(run: Any, tmp_path: Path) -> None:
    """Even with the source notebook next to the student's in one folder."""
    folder = tmp_path / "lab"
    submission_copy("all_correct", folder)
    (folder / "fixture.ipynb").rename(folder / "ada.ipynb")
    (folder / SOURCE.name).write_bytes(SOURCE.read_bytes())
    (folder / "notes.ipynb").write_text("{}")
    code = '''
import errno, json, os
found, names = [], []
for root, dirs, files in os.walk(".."):
    for name in files:
        names.append(name)
        try:
            data = open(os.path.join(root, name), "rb").read()
        except OSError:
            continue
        if b"49" + b"50" in data or b"BEGIN " + b"SOLUTION" in data:  # not found in this cell's own text
            found.append(os.path.join(root, name))
links = []
for make in (os.symlink, os.link):
    try:
        make(SRC, "stolen.ipynb")
        open("stolen.ipynb").read()
        links.append("read")
    except OSError as exc:
        links.append(errno.errorcode.get(exc.errno, str(exc)))
    if os.path.lexists("stolen.ipynb"):
        os.unlink("stolen.ipynb")
print("PROBE " + json.dumps({"found": found, "links": links,
                             "notebooks": sorted(n for n in names if n.endswith(".ipynb"))}))
'''
    import nbformat

    nb = nbformat.read(folder / "ada.ipynb", as_version=4)
    cell(nb, "add").source = f"SRC = {str(folder / SOURCE.name)!r}\n" + code + cell(nb, "add").source
    nbformat.write(nb, folder / "ada.ipynb")
    score, executed = run(folder / "ada.ipynb", source=folder / SOURCE.name)
    got = probe(executed)
    assert got["found"] == [] and got["notebooks"] == ["ada.ipynb"]
    assert got["links"] == ["EACCES", "EXDEV"]  # nor through a link made in the box (sym, hard)
    assert score.total == 4  # the hidden tests ran all the same (its own answers are right)


def test_no_network_not_even_loopback_or_a_unix_socket_outside(run: Any, tmp_path: Path) -> None:
    tcp = socket.create_server(("127.0.0.1", 0))
    unix = socket.socket(socket.AF_UNIX)
    unix.bind(str(tmp_path / "db.sock"))
    unix.listen()
    port = tcp.getsockname()[1]
    code = f'''
import ctypes, json, os, socket
got = {{}}
def attempt(name, fn):
    try:
        fn(); got[name] = "connected"
    except OSError as exc:
        got[name] = type(exc).__name__
attempt("tcp", lambda: socket.create_connection(("127.0.0.1", {port}), timeout=3))
attempt("unix", lambda: socket.socket(socket.AF_UNIX).connect({str(tmp_path / "db.sock")!r}))
attempt("bind", lambda: socket.create_server(("127.0.0.1", 0)))
s = socket.socket(socket.AF_UNIX)
libc = ctypes.CDLL(None, use_errno=True)
addr = b"\\x01\\x00" + {str(tmp_path / "db.sock")!r}.encode() + b"\\x00"
got["x32"] = libc.syscall(42 | 0x40000000, s.fileno(), addr, len(addr))  # connect, x32 ABI
attempt("kill", lambda: os.kill({os.getpid()}, 15))  # the grader: not even visible
print("PROBE " + json.dumps(got))
'''
    score, executed = run(_fixture_probe(tmp_path, code))
    got = probe(executed)
    assert got["tcp"] in ("OSError", "PermissionError") and got["unix"] == "PermissionError"
    assert got["bind"] != "connected" and got["x32"] == -1
    assert got["kill"] in ("ProcessLookupError", "PermissionError")
    for server in (tcp, unix):
        server.setblocking(False)
        with pytest.raises(BlockingIOError):
            server.accept()  # nobody came
        server.close()
    assert f"cell 2: tried to connect to 127.0.0.1:{port} (no network): denied" in score.attempts
    assert any(f"connect to {tmp_path / 'db.sock'}" in a for a in score.attempts)
    assert not score.points_lost


def _processes_with(marker: str) -> list[int]:
    found = []
    for proc in Path("/proc").iterdir():
        with contextlib.suppress(OSError):
            if proc.name.isdigit() and marker.encode() in (proc / "cmdline").read_bytes():
                found.append(int(proc.name))
    return found


@pytest.fixture
def marker() -> Iterator[str]:
    mark = f"agentos-lab-bomb-{uuid.uuid4().hex}"
    yield mark
    for pid in _processes_with(mark):  # never leave them running, whatever the test saw
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)


def test_a_fork_bomb_stops_at_the_process_limit_and_dies_with_the_run(run: Any, tmp_path: Path,
                                                                     marker: str) -> None:
    code = f'''
import json, subprocess
started, error = 0, None
for _ in range(1000):
    try:
        subprocess.Popen(["/bin/sh", "-c", "sleep 120 # {marker}"])
        started += 1
    except OSError as exc:
        error = type(exc).__name__
        break
print("PROBE " + json.dumps({{"started": started, "error": error}}))
'''
    score, executed = run(_fixture_probe(tmp_path, code))
    got = probe(executed)
    assert 50 < got["started"] < labcheck.MAX_PROCESSES and got["error"] == "BlockingIOError"
    assert any(p.startswith("cgroup: cgroup pids") for p in score.protections)
    assert _processes_with(marker) == []  # gone with the kernel's pid namespace


def test_a_memory_hog_gets_a_memory_error_naming_the_limit(tmp_path: Path) -> None:
    def hog(nb: Any) -> None:
        cell(nb, "test_add").source = "hog = bytearray(3 << 30)"
    path = submission_copy("all_correct", tmp_path / "s", hog)
    score = check_notebook(path, timeout=TIMEOUT, memory_mb=1024)
    (row,) = [r for r in score.rows if r.grade_id == "test_add"]
    assert row.status == "failed" and row.message.startswith("MemoryError")
    assert row.message.endswith("(the kernel's memory limit is 1024 MiB)")
    assert [r.status for r in score.rows if r.grade_id != "test_add"] == ["passed", "manual", "passed"]


def _memory_cgroup_here() -> bool:
    groups = cgroups.make(f"agentos-lab-probe-{os.getpid()}", max_processes=8, memory_bytes=1 << 30)
    groups.remove()
    return groups.memory is not None


@pytest.mark.skipif(not _memory_cgroup_here(), reason="no memory cgroup can be made here")
def test_memory_spread_over_processes_is_bounded_in_all(run: Any, tmp_path: Path) -> None:
    code = '''
import json, os
pids = []
for _ in range(3):
    pid = os.fork()
    if pid == 0:
        block = bytearray(600 << 20)
        for i in range(0, len(block), 4096):
            block[i] = 1  # resident, not just reserved
        os._exit(0)
    pids.append(pid)
print("PROBE " + json.dumps({"statuses": [os.waitstatus_to_exitcode(os.waitpid(p, 0)[1]) for p in pids]}))
'''
    _, executed = run(_fixture_probe(tmp_path, code), memory_mb=1024)
    assert -signal.SIGKILL in probe(executed)["statuses"]  # 1800 MiB in all: the OOM killer took one


def test_the_total_time_limit_cuts_the_run_and_says_so(tmp_path: Path) -> None:
    def slow(nb: Any) -> None:
        cell(nb, "test_add").source = "import time\ntime.sleep(60)"
    score = check_notebook(submission_copy("all_correct", tmp_path / "s", slow), timeout=TIMEOUT, wall=5)
    rows = {r.grade_id: r for r in score.rows}
    assert rows["test_add"].status == "timeout"
    assert rows["test_add"].message == "the run reached its total time limit of 5 s; the cell was interrupted"
    assert [(rows[g].status, rows[g].message) for g in ("test_total", "test_add_floats")] == \
        [("not run", "the run reached its total time limit of 5 s")] * 2


def test_a_kernel_killed_says_by_what(tmp_path: Path) -> None:
    def dies(nb: Any) -> None:
        cell(nb, "total").source = "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)"
    score = check_notebook(submission_copy("all_correct", tmp_path / "s", dies), timeout=TIMEOUT)
    assert [r.message for r in score.rows if r.status == "not run"] == \
        ["the kernel died in cell 4 (killed by SIGKILL)"] * 2


def test_output_without_end_is_cut_but_still_scored(run: Any, tmp_path: Path) -> None:
    def floods(nb: Any) -> None:
        cell(nb, "test_add").source = ("import sys\nfor _ in range(600):\n    print('x' * 10_000)\n"
                                       "print('late', file=sys.stderr)")
    score, executed = run(submission_copy("all_correct", tmp_path / "s", floods))
    outputs = cell(executed, "test_add").outputs
    assert sum(len(o.get("text", "")) for o in outputs) < 2.1 * 2**20
    assert any("were dropped" in o.get("text", "") for o in outputs)
    (row,) = [r for r in score.rows if r.grade_id == "test_add"]
    assert (row.status, row.message) == ("failed", "wrote to stderr: late")


def test_one_giant_message_is_dropped_unread_and_ends_the_run(tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """Unread, it never fills the grader's memory; the run cannot trust later outputs, so it stops."""
    monkeypatch.setattr(labbox, "MAX_MESSAGE_BYTES", 1 << 20)

    def giant(nb: Any) -> None:  # one message of 1.5 MiB: under the output cap, over this limit
        cell(nb, "test_add").source = "import sys\nsys.stdout.write('x' * (3 << 19))\nsys.stdout.flush()"
    score = check_notebook(submission_copy("all_correct", tmp_path / "s", giant), timeout=TIMEOUT)
    rows = {r.grade_id: (r.status, r.message) for r in score.rows}
    assert rows["test_add"] == ("failed", f"OutputLost: {LOST}; the cell's outputs are incomplete")
    assert rows["test_total"] == rows["test_add_floats"] == ("not run", f"{LOST} in cell 3")


def test_without_a_sandbox_it_refuses_unless_unconfined(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                                        cli: Cli) -> None:
    monkeypatch.setattr(sandbox, "probe", lambda: sandbox.Protections((), 0))
    path = submission_copy("all_correct", tmp_path / "s")
    with pytest.raises(SandboxUnavailable, match="pass --unconfined"):
        check_notebook(path, timeout=TIMEOUT)
    code, out, err = cli("lab", "check", path)
    assert code == 2 and out == "" and err.count("\n") == 1
    assert "cannot sandbox the notebook's kernel on this machine (namespaces" in err and "--unconfined" in err
    code, out, err = cli("lab", "check", path, "--unconfined", "--timeout", TIMEOUT)
    assert code == 0 and "MISSING: namespaces" in out and "Landlock is not available" in out
    assert err.startswith("agentos: warning: the notebook ran without: namespaces")


def test_the_launcher_ends_the_run_at_its_own_wall_limit(tmp_path: Path) -> None:
    """The backstop for a grader that died: SIGALRM ends the launcher, and with it the namespace."""
    import subprocess
    import time

    box = sandbox.empty_box(tmp_path / "box")
    fd = os.open(tmp_path / "report.jsonl", os.O_WRONLY | os.O_CREAT, 0o600)
    prefix, env = sandbox.launcher(box, fd, config={"wall_seconds": 1})
    started = time.monotonic()
    done = subprocess.run([*prefix, "/bin/sleep", "60"], env=env, cwd=box.sub, pass_fds=(fd,), timeout=30)
    os.close(fd)
    assert time.monotonic() - started < 15 and done.returncode in (-signal.SIGALRM, 128 + signal.SIGALRM)


def test_the_launcher_refuses_to_start_without_a_required_layer(monkeypatch: pytest.MonkeyPatch,
                                                                 tmp_path: Path) -> None:
    broken = cgroups.RunCgroups(((str(tmp_path / "no-such-cgroup"), "cgroup pids: <= 8"),), None, ())
    monkeypatch.setattr(cgroups, "make", lambda *a, **k: broken)
    (tmp_path / "out").mkdir()
    kb = labbox.make_kernel_box(tmp_path / "box", tmp_path / "out", require=("cgroup",),
                                limits=labbox.Limits(1 << 30, 64, 60))
    from nbformat.v4 import new_code_cell, new_notebook

    nb = new_notebook(cells=[new_code_cell("open('ran', 'w').write('x')")])
    try:
        with pytest.raises(KernelStartError, match="refused to start the command: cgroup could not be"):
            labbox.run_in_box(nb, kb, timeout=10, wall=60)
    finally:
        kb.close()
    assert not (kb.box.sub / "ran").exists()


def test_cli_prints_what_held_and_json_carries_it(cli: Cli) -> None:
    from ._lab_fixtures import submission

    code, out, _ = cli("lab", "check", submission("all_correct"), "--timeout", TIMEOUT)
    assert code == 0
    (line,) = [ln for ln in out.splitlines() if ln.startswith("sandbox held:")]
    assert line == "sandbox held: namespaces, limits, cgroup, capabilities, seccomp, landlock"
    code, out, _ = cli("lab", "check", submission("all_correct"), "--json", "--memory-mb", 1024,
                       "--total-timeout", 120)
    data = json.loads(out)["sandbox"]
    assert data["missing"] == [] and data["attempts"] == []
    assert any("address space <= 1024 MiB" in p for p in data["held"])

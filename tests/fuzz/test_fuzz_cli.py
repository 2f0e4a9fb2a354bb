"""CLI and magic arguments: random argv for every `agentos` subcommand (hostile ids, paths —
missing, a file, a FIFO, a symlink out, NUL, over-long —, numbers and stray tokens) and random
magic lines. `agentos` exits 0, 1 or 2, never with a traceback; an error is one line
(`agentos: error: ...`, or argparse's usage then one error line); the magics raise only
IPython's UsageError, in one line. Nothing outside the scratch tree is written, and the
session already logged in the workspace is unchanged and still verifies."""

from __future__ import annotations

import contextlib
import io
import os
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from agentos_kernel.cli.main import main as cli_main
from agentos_kernel.store.events import read_log, verify_chain

from . import fuzz, one_line
from .strategies import nasty_text

ARGPARSE_ERROR = re.compile(r"^agentos( [\w-]+)*: error: ")


class Box:
    """The scratch tree the CLI is fuzzed in: a workspace with one logged session, hostile
    paths beside it, and a canary outside it."""

    def __init__(self, root: Path) -> None:
        self.root, self.ws = root / "box", root / "box" / "ws"
        self.outside = root / "outside"
        self.outside.mkdir()
        (self.outside / "canary.txt").write_text("canary")
        self.root.mkdir()
        with contextlib.redirect_stdout(io.StringIO()):
            assert cli_main(["init", str(self.ws)]) == 0
            assert cli_main(["--workspace", str(self.ws), "run", "hello, greet Ada"]) == 0
        self.log = self.ws / "sessions" / "s0001" / ".events.jsonl"
        self.log_bytes = self.log.read_bytes()
        (self.root / "file.txt").write_text("not a notebook")
        (self.root / "link_out").symlink_to(self.outside)
        (self.root / "canary_link").symlink_to(self.outside / "canary.txt")
        os.mkfifo(self.root / "fifo")
        (self.root / "empty").mkdir()

    def __repr__(self) -> str:
        return "<box>"

    def outside_listing(self) -> dict[str, bytes]:
        return {p.name: p.read_bytes() for p in self.outside.iterdir()}


@pytest.fixture(scope="module")
def box(tmp_path_factory: pytest.TempPathFactory) -> Box:
    return Box(tmp_path_factory.mktemp("clifuzz"))


@pytest.fixture
def in_box(box: Box, monkeypatch: pytest.MonkeyPatch) -> Box:
    """The box as the cwd (after conftest's per-test scratch cwd), so relative paths in argv
    land in it; monkeypatch puts the cwd back."""
    monkeypatch.chdir(box.root)
    return box


# Relative to the box (the cwd while fuzzing); "ws" is the workspace.
PATHS = ("ws", "ws/sessions", "ws/sessions/s0001", "ws/sessions/s0001/.events.jsonl", "ws/agentos.yaml",
         "ws/skills", "file.txt", "fifo", "link_out", "canary_link", "empty", "missing", "missing/deeper",
         "", ".", "..", "/", "/etc/passwd", "/dev/null", "a\0b", "x" * 300, "/".join(["y" * 200] * 25),
         "-", "--", "~", "ws/sessions/new", "link_out/x", "../outside/canary.txt")
FILE_PATHS = tuple(p for p in PATHS if p not in ("ws", "ws/sessions", "ws/sessions/s0001", "ws/skills",
                                                 "empty", ".", "..", "/", "link_out"))
SESSIONS = ("s0001", "ghost", "../s0001", "s0001/..", "", "a\0b", "-rf", "nl\n", "x" * 65, "..", ".",
            "S0001", "s0001 ")
NUMBERS = ("0", "1", "-1", "999999999999999999999", "abc", "1e3", "", "nan", "inf")

paths = st.sampled_from(PATHS) | nasty_text
# Arguments a command writes to (init's target, release's DEST, --csv) stay inside the box: an
# absolute or climbing one would let a regression write into / (a fuzzed `init /...` once did).
_inside = [p for p in PATHS if p and not p.startswith(("/", "..", "~")) and "/.." not in p]
targets = st.sampled_from(_inside) | nasty_text.map(lambda s: "t_" + s.replace("/", "_").replace("\0", "_"))
# A folder the lab commands fill (fetch's DEST, collect's SUBMITTED, grade's --out) is followed
# through a symlink the user made, as `cp -r` does: link_out/x would write outside the box.
folders = targets.filter(lambda p: not p.startswith("link_out"))
sessions = st.sampled_from(SESSIONS) | nasty_text
numbers = st.sampled_from(NUMBERS)
# --faults names over NAME_MAX bytes crash faults.py (test_an_over_long_fault_plan_name_is_one_line)
short_text = nasty_text.filter(lambda s: len(s.encode("utf-8", "surrogatepass")) <= 255)
flags = st.sampled_from(["--json", "--verify", "--force", "--help", "-h", "--version", "--nope", "-x"])


def _opt(name: str, values: st.SearchStrategy[str]) -> st.SearchStrategy[list[str]]:
    return st.one_of(st.just([]), values.map(lambda v: [name, v]), values.map(lambda v: [f"{name}={v}"]))


def _cmd(*parts: st.SearchStrategy[list[str]]) -> st.SearchStrategy[list[str]]:
    return st.tuples(*parts).map(lambda xs: [a for x in xs for a in x])


one = st.just
COMMANDS = st.one_of(
    _cmd(one(["run"]), st.lists(nasty_text, min_size=0, max_size=2), _opt("--session", sessions),
         _opt("--profile", nasty_text | st.just("scripted-alt")), _opt("--faults", st.sampled_from(
             ["malformed_worker", "gremlins", "fifo", "file.txt", "ws/agentos.yaml", "a,b,,"]) | short_text),
         _opt("--cycle", st.sampled_from(["code-review", "nope", "../x"]) | nasty_text),
         _opt("--mode", st.sampled_from(["headless", "autofix", "x"]))),
    _cmd(one(["demo"]), _opt("--profile", nasty_text), _opt("--faults", short_text)),
    _cmd(st.sampled_from([["replay"], ["events"], ["rerun"]]), sessions.map(lambda s: [s]),
         _opt("--at", numbers), _opt("--type", nasty_text), _opt("--layer", nasty_text)),
    _cmd(one(["export", "otel"]), sessions.map(lambda s: [s]), _opt("--out", targets)),
    _cmd(one(["validate"]), st.lists(paths, max_size=1)),
    _cmd(one(["init"]), targets.map(lambda p: [p])),
    _cmd(one(["audit"]), paths.map(lambda p: [p])),
    _cmd(one(["conform"]), paths.map(lambda p: [p]), _opt("--scenarios", paths), _opt("--only", nasty_text)),
    _cmd(one(["run-scenarios"]), st.sampled_from(FILE_PATHS).map(lambda p: [p]),
         _opt("--scenarios", paths), _opt("--only", st.sampled_from(["nope", "", ","]))),
    _cmd(one(["lab", "check"]), st.sampled_from(FILE_PATHS).map(lambda p: [p]),
         _opt("--source", st.sampled_from(FILE_PATHS)), _opt("--timeout", numbers)),
    _cmd(one(["lab", "release"]), st.lists(targets, min_size=0, max_size=2)),
    _cmd(one(["lab", "validate"]), st.lists(st.sampled_from(FILE_PATHS), max_size=3)),
    _cmd(one(["grade"]), st.sampled_from(FILE_PATHS).map(lambda p: [p]), _opt("--jobs", numbers),
         _opt("--timeout", numbers), _opt("--csv", targets)),
    _cmd(one(["lab", "grade"]), paths.map(lambda p: [p]), _opt("--source", st.sampled_from(FILE_PATHS)),
         _opt("--out", folders), _opt("--jobs", numbers), _opt("--timeout", numbers)),
    _cmd(one(["lab", "fetch"]), st.lists(folders, max_size=1), _opt("--exchange", paths)),
    _cmd(one(["lab", "submit"]), st.sampled_from(FILE_PATHS).map(lambda p: [p]), _opt("--exchange", targets),
         _opt("--student", sessions), _opt("--lab", sessions)),
    _cmd(one(["lab", "collect"]), folders.map(lambda p: [p]), _opt("--exchange", paths),
         _opt("--lab", sessions)),
    _cmd(one(["lab"]), st.lists(nasty_text, max_size=2)),
    st.lists(nasty_text | flags, max_size=4),
)


@st.composite
def argvs(draw: st.DrawFn) -> list[str]:
    argv = draw(COMMANDS)
    if draw(st.booleans()):
        where = draw(st.sampled_from(["ws", "ws", "missing", "file.txt", "fifo", "a\0b"]))
        argv = ["--workspace", where, *argv]
    if draw(st.integers(0, 4)) == 0:
        argv.insert(draw(st.integers(0, len(argv))), draw(flags | nasty_text))
    return argv


def _run(argv: list[str]) -> tuple[int, str, str, bool]:
    out, err = io.StringIO(), io.StringIO()
    exited = False
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = cli_main(argv)
        except SystemExit as exc:  # argparse: --help/--version (0) or a usage error (2)
            code, exited = (exc.code if isinstance(exc.code, int) else 2), True
    return code, out.getvalue(), err.getvalue(), exited


LONG = "x" * 300
# Each crashed before it was fixed (found by this property with AGENTOS_FUZZ=long).
FOUND = (["run-scenarios", LONG], ["run-scenarios", "/etc/passwd"], ["run-scenarios", "a\0b"],
         ["lab", "check", LONG], ["audit", LONG], ["grade", LONG, "--csv", "file.txt"], ["validate", LONG],
         ["--workspace", "fifo", "lab", "release", "\r\n", "{{x}}"], ["run-scenarios", "missing2", "--only=,",
         "--scenarios=--"], ["init", "file.txt"], ["init", "link_out"], ["init", "ws/sessions/x"],
         ["init", "a\0b"], ["init", LONG], ["--workspace", "ws", "run", "hi", "--session", "../x"],
         ["grade", "empty", "--csv", "empty"], ["grade", "empty", "--csv", "ws/sessions/s0001/.events.jsonl"],
         ["grade", "empty", "--csv", "missing/grades.csv"])


def _found(test: Any) -> Any:
    for argv in FOUND:
        test = example(argv=argv)(test)
    return test


@fuzz(250)
@given(argv=argvs())
@_found
def test_any_argv_exits_0_1_or_2_with_one_line_errors(in_box: Box, argv: list[str]) -> None:
    box = in_box
    code, out, err, exited = _run(argv)
    assert code in (0, 1, 2), (code, err[-500:])
    assert "Traceback" not in err and "Traceback" not in out
    if code == 2 and exited:
        errors = [ln for ln in err.splitlines() if "error:" in ln]
        assert len(errors) == 1 and ARGPARSE_ERROR.match(errors[0]), err
    elif code == 2:
        assert one_line(err).startswith("agentos: error: ")
    assert box.outside_listing() == {"canary.txt": b"canary"}
    assert box.log.read_bytes() == box.log_bytes
    assert verify_chain(read_log(box.log)) is None


def test_an_over_long_fault_plan_name_is_one_line(in_box: Box) -> None:
    code, out, err, _ = _run(["--workspace", "ws", "run", "hello", "--faults", "x" * 300])
    assert code == 2 and out == "" and one_line(err).startswith("agentos: error: ")


MAGICS = ("agent", "replay", "events")


@pytest.fixture(scope="module")
def magics(box: Box) -> Any:
    from IPython.testing.globalipapp import start_ipython

    from agentos_kernel.jupyter.magics import AgentMagics

    shell = start_ipython()
    return AgentMagics(shell=shell)


lines = st.lists(st.sampled_from(["--session", "--at", "--faults", "--profile", "--workspace", "--cycle",
                                  "--mode", "--type", "--layer", "--verify", "--help", "--dry-run", "'",
                                  '"', "s0001", "ws", "hello", "-1", "L1"]) | nasty_text,
                 max_size=5).map(" ".join)


@fuzz(120)
@given(magic=st.sampled_from([*MAGICS, "skill"]), line=lines, cell=nasty_text)
def test_any_magic_line_is_a_result_or_a_one_line_usage_error(in_box: Box, magics: Any, magic: str,
                                                              line: str, cell: str) -> None:
    box = in_box
    from IPython.core.error import UsageError

    if "--workspace" not in line:
        line += " --workspace ws"
    if magic == "skill" and "--dry-run" not in line:
        line += " --dry-run"  # a valid cell would be written into the workspace's skills/
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            if magic == "skill":
                magics.skill(line, f"---\nname: fuzzed\ndescription: {cell}\n---\n")
            else:
                getattr(magics, magic)(line)
    except UsageError as exc:
        one_line(str(exc))
        assert str(exc).startswith(("%", "%%"))
    assert box.outside_listing() == {"canary.txt": b"canary"}
    assert box.log.read_bytes() == box.log_bytes

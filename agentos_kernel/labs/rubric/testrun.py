"""Run a student's test suite once, in a fresh sandbox, and collect what it left: the runner's
per-test outcomes and every event log it wrote.

Python runs `python -m pytest tests` with the grading interpreter (third-party pytest plugins
off, so the result does not depend on what the grading machine has installed), Go `go test
-json ./...`, TypeScript `node --test` with its junit reporter; a toolchain missing here is a
stated problem, never a pass.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from ..sandbox import run as sandbox
from .submission import SubmissionFileError, read_bytes
from .suite import go_outcomes, junit_outcomes

LOG_SUFFIX = ".events.jsonl"


@dataclass(frozen=True)
class SuiteRun:
    """One run of a submission's test suite."""

    problem: str | None
    """Why its outcomes cannot be used (toolchain missing, timeout, crash, escape attempt,
    no report), else None."""
    run: sandbox.RunResult | None = None
    """The sandboxed process (None when nothing was started)."""
    outcomes: dict[str, str] = field(default_factory=dict)
    """Test key -> passed / failed / skipped."""
    logs: dict[str, bytes] = field(default_factory=dict)
    """Each event log the run wrote or changed: path relative to the box -> bytes."""
    log_problems: tuple[str, ...] = ()
    """Logs found but not readable (a symlink, too large ...)."""


@functools.cache
def _goroot(go: str) -> str | None:
    try:
        out = subprocess.run([go, "env", "GOROOT"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip() or None


Command = tuple[list[str], dict[str, str], tuple[str, ...]]


def _command(lang: str, box: sandbox.Box, seed: int) -> Command | str:
    """(argv, env, extra read-only roots) for the language, or why it cannot run here."""
    if lang == "python":
        argv = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o", "junit_family=xunit2",
                f"--junitxml={box.grade / 'junit.xml'}", f"--basetemp={box.tmp / 'pytest'}",
                f"--rootdir={box.sub}", "tests"]
        # Two runs get two hash seeds: a log that depends on set or str-dict order shows up.
        env = {"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1", "PYTHONHASHSEED": str(seed),
               "PYTHONPATH": os.pathsep.join([str(box.root / "site"), str(box.sub)])}
        return argv, env, ()
    if lang == "go":
        go = shutil.which("go")
        if go is None:
            return ("the Go toolchain (go) is not installed on the grading machine, so `go test ./...` "
                    "could not run; grade this submission where Go is installed")
        gopath = box.tmp / "go"
        env = {"GOCACHE": str(gopath / "cache"), "GOPATH": str(gopath), "GOPROXY": "off",
               "GOTOOLCHAIN": "local", "GOFLAGS": "-mod=mod", "CGO_ENABLED": "0"}
        root = _goroot(go)
        return [go, "test", "-json", "./..."], env, (root,) if root else ()
    if lang == "typescript":
        node = shutil.which("node")
        if node is None:
            return ("Node.js (node) is not installed on the grading machine, so `node --test` could "
                    "not run; grade this submission where Node is installed")
        return [node, "--test", "--test-reporter=junit",
                f"--test-reporter-destination={box.grade / 'junit.xml'}"], {}, ()
    return "no runtime/ sources (Python, Go or TypeScript) to test"


def run_suite(submission: Path, work: Path, name: str, lang: str, *, timeout: float, seed: int) -> SuiteRun:
    """Copy `submission` into `work/name`, run its tests there once, collect outcomes and logs."""
    if lang == "python" and not (submission / "tests").is_dir():
        return SuiteRun("no tests/ folder: put the e2e and fail-closed tests in tests/test_*.py")
    box = sandbox.make_box(submission, work / name)
    made = _command(lang, box, seed)
    if isinstance(made, str):
        return SuiteRun(made)
    argv, env, readonly = made
    out = work / f"{name}-out"
    run = sandbox.run(argv, box, out, timeout=timeout, env=env, readonly=readonly)
    logs, log_problems = _logs(box, submission)
    problem = run.problem(timeout)
    outcomes: dict[str, str] = {}
    if problem is None:
        try:
            if lang == "go":
                outcomes = go_outcomes(read_bytes(out, "stdout"))
            else:
                outcomes = junit_outcomes(read_bytes(box.root, "grade/junit.xml"), lang)
        except SubmissionFileError:
            problem = (f"the test runner wrote no report (exit status {run.returncode}): "
                       f"{_last_line(run.stderr or run.stdout)}")
        except Exception as exc:  # a malformed report is the run's problem, not the grader's
            problem = f"the test report could not be read: {exc}"
    return SuiteRun(problem, run, outcomes, logs, tuple(log_problems))


def _last_line(text: str) -> str:
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    return lines[-1][:200] if lines else "(no output)"


def _logs(box: sandbox.Box, submission: Path) -> tuple[dict[str, bytes], list[str]]:
    """Every `*.events.jsonl` in the box that the run created or changed (an unchanged copy of
    the submitted sessions/example log is not the run's)."""
    logs: dict[str, bytes] = {}
    problems: list[str] = []
    for dirpath, dirnames, filenames in os.walk(box.root):
        rel_dir = Path(dirpath).relative_to(box.root)
        if rel_dir == Path("."):
            dirnames[:] = [d for d in dirnames if d not in ("site", "grade")]
        dirnames.sort()
        for fname in sorted(filenames):
            if not fname.endswith(LOG_SUFFIX) and fname != LOG_SUFFIX.lstrip("."):
                continue
            rel = (rel_dir / fname).as_posix()
            try:
                data = read_bytes(box.root, rel)
            except SubmissionFileError as exc:
                problems.append(f"log {exc}")
                continue
            if rel.startswith("sub/"):
                try:
                    if read_bytes(submission, rel[4:]) == data:
                        continue
                except SubmissionFileError:
                    pass  # new in the run
            logs[rel] = data
    return logs, problems

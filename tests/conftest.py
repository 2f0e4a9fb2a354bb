"""Shared fixtures for the core runtime tests.

Every test gets its own workspace (made by `agentos init`) under pytest's tmp dir and runs
with the current directory in a scratch dir, so nothing is ever written into the
repository; a session-wide guard fails the run if anything appears in the repo's sessions/.
"""

from __future__ import annotations

import contextlib
import io
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentos_kernel import Runtime
from agentos_kernel.cli.main import main as cli_main
from agentos_kernel.providers.faults import load_fault_plan

from .helpers import CANONICAL, REPO, Cli, Run, RunRequest, finish

TESTS = Path(__file__).resolve().parent
OTHER_TEAMS = (TESTS / "workflows", TESTS / "jupyter")  # their fixtures, their rules
# Student submissions graded by tests/labs/test_grade*.py: their tests run inside the grader's
# sandbox, never as part of this suite.
collect_ignore_glob = ["labs/submissions/*"]
# A throwaway PostgreSQL server (pg_server, pg_db, pg_admin_dsn) for the event store's tests.
pytest_plugins = ["tests.pg_server"]


def _stray_workspaces() -> list[Path]:
    """agentos.yaml files above the temp dir: workspace discovery walks up to /, so one of these
    turns every "no workspace here" test into a run inside it (and writes sessions there)."""
    tmp = Path(tempfile.gettempdir()).resolve()
    return [d / "agentos.yaml" for d in (tmp, *tmp.parents) if (d / "agentos.yaml").exists()]


def pytest_sessionstart(session: pytest.Session) -> None:
    if stray := _stray_workspaces():
        pytest.exit(f"a workspace config above the temp dir would capture the tests: "
                    f"{', '.join(map(str, stray))}; remove it and run again", returncode=3)


def _listing(root: Path) -> set[str]:
    return {p.relative_to(root).as_posix() for p in root.rglob("*")} if root.is_dir() else set()


@pytest.fixture(scope="session", autouse=True)
def _repo_sessions_untouched() -> Iterator[None]:
    """Fail the run if any test leaves a session (or anything else) in the repo's sessions/."""
    before = _listing(REPO / "sessions")
    yield
    new = sorted(_listing(REPO / "sessions") - before)
    assert not new, f"tests wrote into {REPO / 'sessions'}: {new[:5]}"
    assert not (stray := _stray_workspaces()), f"a test wrote a workspace above the temp dir: {stray}"


@pytest.fixture(autouse=True)
def _loads_afresh() -> None:
    """Each test loads its workspaces as a new process would: without the schema registries
    and YAML documents an earlier test read (their reuse is tests/test_reload_memo.py's)."""
    from agentos_kernel import yamlload
    from agentos_kernel.schemas import loading

    loading.forget_loaded()
    yamlload.forget_read()


@pytest.fixture(autouse=True)
def _scratch_cwd(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory,
                 monkeypatch: pytest.MonkeyPatch) -> None:
    """Run each core test from an empty directory: a command that falls back to the bundled
    workspace writes ./sessions there, never into the checkout."""
    path = Path(str(request.node.path)).resolve()
    if any(path.is_relative_to(d) for d in OTHER_TEAMS):
        return
    monkeypatch.chdir(tmp_path_factory.mktemp("cwd"))


@pytest.fixture(scope="session")
def _initialised(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One workspace made by `agentos init`; each test gets a copy of it."""
    dest = tmp_path_factory.mktemp("template") / "ws"
    with contextlib.redirect_stdout(io.StringIO()):
        assert cli_main(["init", str(dest)]) == 0
    return dest


@pytest.fixture
def workspace(_initialised: Path, tmp_path: Path) -> Path:
    """A fresh workspace (reference contracts and agentos.yaml, as `agentos init` makes it)."""
    dest = tmp_path / "ws"
    shutil.copytree(_initialised, dest)
    return dest


@pytest.fixture
def runtime(workspace: Path) -> Runtime:
    """The workspace's runtime on its default (scripted, deterministic) profile."""
    return Runtime.from_workspace(workspace)


@pytest.fixture
def run_request(workspace: Path) -> RunRequest:
    """Run one request in the workspace: `run_request(prompt, faults=..., profile=...)`.

    `faults` is a preset name (or names joined by commas) for `load_fault_plan`, e.g.
    `run_request(faults="malformed_worker")`."""

    def run(prompt: str = CANONICAL, *, faults: str | None = None, profile: str | None = None,
            session_id: str | None = None) -> Run:
        rt = Runtime.from_workspace(workspace, profile=profile,
                                    faults=load_fault_plan(faults) if faults else None)
        return finish(rt, rt.handle_user_request(prompt, session_id=session_id))

    return run


@pytest.fixture
def canonical_run(run_request: RunRequest) -> Run:
    """The spec's canonical request, 'hello, greet Ada', completed ok."""
    run = run_request()
    assert run.ok, run.result
    return run


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str]) -> Cli:
    """`cli("--workspace", ws, "run", ...)` -> (exit code, stdout, stderr)."""

    def call(*argv: object) -> tuple[int, str, str]:
        capsys.readouterr()
        code = cli_main([str(a) for a in argv])
        out, err = capsys.readouterr()
        return code, out, err

    return call

"""Issue 20: a workspace's `sessions/` that is a symbolic link leading out of the workspace made
every run write outside it, silently. The JSONL store refuses it (and reads no session whose
folder leads out) unless the profile says `event_store: {kind: jsonl, sessions_may_link_out:
true}`, an optional property of runtime_profile_v1. A link that stays inside is fine."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from agentos_kernel import ContractError, Runtime
from agentos_kernel.config import EventStoreConfig, load_config
from agentos_kernel.schemas.registry import SchemaRegistry
from agentos_kernel.store.events import LOG_NAME
from agentos_kernel.store.integrity import verify_log

from .helpers import REPO, Cli, RunRequest


def _event_store(workspace: Path, **store: object) -> None:
    doc = yaml.safe_load((workspace / "agentos.yaml").read_text())
    doc["profiles"]["scripted"]["event_store"] = store
    (workspace / "agentos.yaml").write_text(yaml.safe_dump(doc))


def test_the_opt_in_is_an_optional_property_of_a_jsonl_store(workspace: Path) -> None:
    _event_store(workspace, kind="jsonl", sessions_may_link_out=True)
    config = load_config(workspace / "agentos.yaml", SchemaRegistry.load(workspace / "schemas"))
    assert config.profile("scripted").event_store == EventStoreConfig("jsonl", None, 4, True)
    assert EventStoreConfig().sessions_may_link_out is False


@pytest.mark.parametrize("store", [{"kind": "jsonl", "sessions_may_link_out": "yes"},
                                   {"kind": "postgres", "dsn_env": "AGENTOS_PG_DSN",
                                    "sessions_may_link_out": True}], ids=["not-a-boolean", "postgres"])
def test_a_bad_opt_in_is_refused_naming_the_field(workspace: Path, store: dict[str, object]) -> None:
    _event_store(workspace, **store)
    with pytest.raises(ContractError) as err:
        Runtime.from_workspace(workspace)
    assert any(p.field.startswith("profiles.scripted.event_store") for p in err.value.problems), err.value


def _link_out(workspace: Path, tmp_path: Path) -> Path:
    """Replace the workspace's sessions/ by a link to a folder outside it; the folder."""
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    sessions = workspace / "sessions"
    if sessions.exists():
        sessions.rmdir()
    sessions.symlink_to(outside, target_is_directory=True)
    return outside


def test_a_sessions_link_out_of_the_workspace_is_refused_in_one_line(workspace: Path, tmp_path: Path,
                                                                     cli: Cli) -> None:
    outside = _link_out(workspace, tmp_path)
    with pytest.raises(ContractError) as err:
        Runtime.from_workspace(workspace)
    message = str(err.value)
    assert f"{workspace / 'sessions'}: -: is a symbolic link to {outside}" in message
    assert "rm " in message and "sessions_may_link_out: true" in message
    code, out, err_text = cli("--workspace", workspace, "run", "hello, greet Ada")
    assert (code, out) == (2, "") and err_text.startswith("agentos: error: ") and err_text.count("\n") == 1
    assert "outside the workspace" in err_text
    assert list(outside.iterdir()) == []  # nothing written there


def test_a_dangling_link_out_is_refused_and_not_created(workspace: Path, tmp_path: Path, cli: Cli) -> None:
    (workspace / "sessions").symlink_to(tmp_path / "nowhere")  # a new workspace has no sessions/ yet
    code, _, err = cli("--workspace", workspace, "run", "hello, greet Ada")
    assert code == 2 and "outside the workspace" in err and not (tmp_path / "nowhere").exists()


def test_a_link_that_stays_inside_the_workspace_is_fine(workspace: Path, cli: Cli) -> None:
    (workspace / "data" / "logs").mkdir(parents=True)
    (workspace / "sessions").symlink_to(workspace / "data" / "logs")
    code, _, err = cli("--workspace", workspace, "run", "hello, greet Ada")
    assert code == 0, err
    assert (workspace / "data" / "logs" / "s0001" / LOG_NAME).is_file()


def test_the_profile_may_allow_a_link_out(workspace: Path, tmp_path: Path, cli: Cli) -> None:
    outside = _link_out(workspace, tmp_path)
    _event_store(workspace, kind="jsonl", sessions_may_link_out=True)
    code, _, err = cli("--workspace", workspace, "run", "hello, greet Ada")
    assert code == 0, err
    assert verify_log(outside / "s0001" / LOG_NAME).ok


def test_a_link_swapped_in_after_the_runtime_started_is_refused_at_the_claim(workspace: Path,
                                                                             tmp_path: Path) -> None:
    rt = Runtime.from_workspace(workspace)  # notebooks keep one Runtime (runtime_cache)
    outside = _link_out(workspace, tmp_path)
    with pytest.raises(ContractError, match="outside the workspace"):
        rt.open_session()
    assert list(outside.iterdir()) == []


def test_a_session_folder_that_leads_out_is_not_read_nor_written(workspace: Path, tmp_path: Path,
                                                                 run_request: RunRequest, cli: Cli) -> None:
    run = run_request()
    away = tmp_path / "away" / "s0009"
    away.mkdir(parents=True)
    (away / LOG_NAME).write_bytes(run.log_path.read_bytes().replace(b'"s0001', b'"s0009'))
    (workspace / "sessions" / "s0009").symlink_to(away)
    before = (away / LOG_NAME).read_bytes()
    for cmd in ("replay", "events"):
        code, out, err = cli("--workspace", workspace, cmd, "s0009")
        assert (code, out) == (2, "") and "is not read" in err and str(away) in err, cmd
    rt = Runtime.from_workspace(workspace)
    with pytest.raises(KeyError, match="leads outside"):
        list(rt.store.read("s0009"))
    with pytest.raises(KeyError, match="leads outside"):
        rt.store.tail("s0009")
    code, _, err = cli("--workspace", workspace, "run", "--session", "s0009", "hello, greet Ada")
    assert code == 2 and "symbolic link" in err  # SESSION_EXISTS naming the link, as before
    assert (away / LOG_NAME).read_bytes() == before
    inside = workspace / "kept" / "s0010"  # a session folder linked within the workspace is read
    inside.mkdir(parents=True)
    (inside / LOG_NAME).write_bytes(run.log_path.read_bytes().replace(b'"s0001', b'"s0010'))
    (workspace / "sessions" / "s0010").symlink_to(inside)
    assert len(list(rt.store.read("s0010"))) == len(run.events)


def test_a_dangling_sessions_link_inside_is_refused_not_looped_on(workspace: Path, tmp_path: Path,
                                                                  cli: Cli) -> None:
    (workspace / "sessions").symlink_to(workspace / "no-such-folder")
    code, _, err = cli("--workspace", workspace, "run", "hello, greet Ada")
    assert code == 2 and "which is not a folder" in err
    # Under the store, the lock itself raised nothing and retried forever: now it raises.
    probe = ("import sys; from pathlib import Path; from agentos_kernel.store.lock import SessionLock\n"
             "SessionLock.acquire(Path(sys.argv[1]), 's0001')")
    done = subprocess.run([sys.executable, "-c", probe, str(workspace / "sessions" / "s0001")],
                          capture_output=True, text=True, timeout=60, cwd=REPO,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    assert done.returncode == 1 and "FileExistsError" in done.stderr
    assert not (workspace / "no-such-folder").exists()

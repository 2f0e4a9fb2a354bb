"""Class-day defects (issue 22): `replay` and `events` take a log's path as `verify` does, and
`audit` takes a session id as the others do; a bad target is one line and exit 2."""

from __future__ import annotations

from pathlib import Path

import pytest

from .helpers import Cli, Run


def test_replay_and_events_read_a_log_path_as_verify_does(workspace: Path, canonical_run: Run,
                                                          cli: Cli) -> None:
    log = canonical_run.log_path
    by_id = cli("--workspace", workspace, "replay", "s0001")
    assert by_id[0] == 0 and 'output: "Hello, Ada!"' in by_id[1]
    for path in (log, log.parent):  # the file, and the session directory
        assert cli("verify", path)[0] == 0
        assert cli("replay", path) == by_id  # no workspace needed: the path is the log
        assert cli("replay", path, "--at", 6, "--json") == cli("--workspace", workspace, "replay", "s0001",
                                                              "--at", 6, "--json")
        assert cli("replay", path, "--summary", "--recent", 2) == \
            cli("--workspace", workspace, "replay", "s0001", "--summary", "--recent", 2)
        assert cli("events", path, "--type", "hook") == \
            cli("--workspace", workspace, "events", "s0001", "--type", "hook")
    code, out, _ = cli("events", log, "--json")
    assert code == 0 and len(out.splitlines()) == 32


def test_a_log_path_that_does_not_verify_warns_like_a_session_id(canonical_run: Run, cli: Cli) -> None:
    log = canonical_run.log_path
    log.write_text(log.read_text().replace("Hello, Ada!", "Hello, Bob!", 1))
    code, out, err = cli("replay", log)
    assert code == 0 and f"agentos: warning: {log} does not verify: line " in err
    assert f"(details: agentos verify {log})" in err
    code, out, err = cli("events", log, "--strict")
    assert code == 1 and out == ""


@pytest.mark.parametrize("command", ["replay", "events"])
def test_a_path_that_is_not_one_log_is_one_line(workspace: Path, canonical_run: Run, cli: Cli,
                                               command: str) -> None:
    code, out, err = cli(command, workspace / "sessions")
    assert (code, out) == (2, "")
    assert err.startswith(f"agentos: error: invalid session id '{workspace / 'sessions'}'") and \
        err.endswith(f"; and {workspace / 'sessions'} is a directory with no .events.jsonl: give one "
                     "session's log file or directory\n")
    code, _, err = cli(command, canonical_run.log_path, "--profile", "scripted")
    assert code == 2 and err.startswith("agentos: error: --profile picks the store a session id is read")
    code, _, err = cli("--workspace", workspace, command, "s0099")
    assert code == 2 and err.startswith("agentos: error: no session 's0099'") and err.count("\n") == 1


def test_audit_takes_a_session_id_like_the_others(workspace: Path, canonical_run: Run, cli: Cli) -> None:
    code, out, err = cli("--workspace", workspace, "audit", "s0001")
    assert (code, err) == (0, "")
    assert out == f"{canonical_run.log_path}: 32 events, clean\n"
    assert cli("audit", canonical_run.log_path) == (code, out, err)  # the same log by path
    code, out, err = cli("--workspace", workspace, "audit", "s0001", "--profile", "scripted", "--json")
    assert code == 0 and '"ok": true' in out
    code, out, err = cli("--workspace", workspace, "audit", "s0099")
    assert (code, out) == (2, "")
    assert err == (f"agentos: error: no session 's0099' in {workspace / 'sessions'} and no such file or "
                   "directory\n")
    code, _, err = cli("audit", canonical_run.log_path, "--profile", "scripted")
    assert code == 2 and "--profile picks the store a session id is read from" in err
    code, _, err = cli("--workspace", workspace, "audit", "no/such/path")
    assert code == 2 and err == "agentos: error: no/such/path: no such file or directory\n"

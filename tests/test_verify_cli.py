"""`agentos verify`, and the readers around a torn or tampered log: `replay`/`events` warn
(or fail with --strict), a torn final line is set aside and reported (never raised, never
dropped silently), `--repair` moves it to `.events.jsonl.torn`, `%replay --verify` shows
the chain verdict."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest

from agentos_kernel import Runtime
from agentos_kernel.jupyter import api
from agentos_kernel.store.events import LogError, TornTail, TornTailWarning, read_log
from agentos_kernel.store.integrity import verify_log
from agentos_kernel.store.repair import repair_torn
from agentos_kernel.store.replay.fold import replay_path

from .helpers import Cli, Run, RunRequest


def tamper(run: Run, edit: str) -> Path:
    """Edit the canonical run's own log in place: `byte` (line 19), `torn` (cut line 21),
    `empty`."""
    path = run.log_path
    lines = path.read_bytes().splitlines(keepends=True)
    if edit == "byte":
        lines[18] = lines[18].replace(b"Ada", b"Adb", 1)
    elif edit == "torn":
        lines = [*lines[:20], lines[20][:57]]
    else:
        lines = []
    path.write_bytes(b"".join(lines))
    return path


def test_verify_passes_an_untouched_session_and_prints_its_head(canonical_run: Run, workspace: Path,
                                                                cli: Cli) -> None:
    code, out, err = cli("--workspace", workspace, "verify", canonical_run.session_id)
    head = canonical_run.events[-1].chain
    assert (code, err) == (0, "") and out.startswith("ok ") and f"32 events, chain intact, head {head}" in out
    code, out, _ = cli("verify", canonical_run.log_path.parent, "--head", head, "--json")
    assert code == 0 and json.loads(out)["logs"][0]["head"] == head


def test_verify_names_the_line_and_exits_one(canonical_run: Run, workspace: Path, cli: Cli) -> None:
    tamper(canonical_run, "byte")
    code, out, _ = cli("--workspace", workspace, "verify", canonical_run.session_id)
    assert code == 1 and f"{canonical_run.log_path}:19: altered: line 19 (tool.invoke)" in out
    code, out, _ = cli("verify", canonical_run.log_path, "--json")
    finding = json.loads(out)["logs"][0]["findings"][0]
    assert code == 1 and (finding["kind"], finding["seq"], finding["line"]) == ("altered", 19, 19)


def test_verify_a_directory_of_sessions_checks_each(canonical_run: Run, run_request: RunRequest,
                                                    workspace: Path, cli: Cli) -> None:
    run_request()
    tamper(canonical_run, "byte")
    code, out, _ = cli("verify", workspace / "sessions")
    assert code == 1 and "1 of 2 logs verify" in out and out.count("\nok ") + out.startswith("ok ") == 1


@pytest.mark.parametrize("target", ["no-such-session", "a/../b", "."])
def test_verify_bad_input_exits_two(workspace: Path, cli: Cli, target: str) -> None:
    code, _, err = cli("--workspace", workspace, "verify", target)
    assert code == 2 and err.startswith("agentos: error: ")


def test_replay_and_events_warn_on_a_tampered_log_and_strict_fails(canonical_run: Run, workspace: Path,
                                                                   cli: Cli) -> None:
    tamper(canonical_run, "byte")
    sid = canonical_run.session_id
    for cmd in ("replay", "events"):
        code, out, err = cli("--workspace", workspace, cmd, sid)
        assert code == 0 and out, cmd
        assert err == (f"agentos: warning: {sid} does not verify: line 19: altered: line 19 (tool.invoke) "
                       "does not hash to its recorded chain: it was edited after it was written (or "
                       "the line before it was, and that line's chain recomputed) (details: agentos "
                       f"verify {sid})\n")
        code, out, err = cli("--workspace", workspace, cmd, sid, "--strict")
        assert (code, out) == (1, "") and "altered" in err


def test_an_empty_log_is_reported_not_replayed(canonical_run: Run, workspace: Path, cli: Cli) -> None:
    tamper(canonical_run, "empty")
    for cmd in ("replay", "events"):
        code, out, err = cli("--workspace", workspace, cmd, canonical_run.session_id)
        assert (code, out) == (1, "") and "empty-log: the log holds no complete event" in err
    code, out, _ = cli("--workspace", workspace, "verify", canonical_run.session_id)
    assert code == 1 and "empty-log" in out
    with pytest.raises(api.WorkbenchError, match="no complete event"):
        api.replay_session(canonical_run.session_id, workspace=workspace)


def test_readers_set_a_torn_tail_aside_and_report_it(canonical_run: Run, workspace: Path) -> None:
    path = tamper(canonical_run, "torn")
    torn: list[TornTail] = []
    events = list(read_log(path, on_torn=torn.append))
    assert [e.seq for e in events] == list(range(1, 21))
    assert [(t.line, t.size) for t in torn] == [(21, 57)] and f"{path}:21: torn final line" in str(torn[0])
    with pytest.warns(TornTailWarning, match=r":21: torn final line \(57 bytes"):
        assert len(list(read_log(path))) == 20
    with pytest.warns(TornTailWarning):
        assert replay_path(path).events == 20
    with pytest.warns(TornTailWarning):
        assert Runtime.from_workspace(workspace).replay(canonical_run.session_id).events == 20


def test_a_bad_line_mid_file_is_corruption_not_a_torn_tail(canonical_run: Run) -> None:
    path = canonical_run.log_path
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join([*lines[:5], lines[5][:40] + b"\n", *lines[6:]]))
    with pytest.raises(LogError, match=r":6: -: not JSON"):
        list(read_log(path))
    with pytest.raises(LogError, match=r":6: -: not JSON"):
        replay_path(path)
    assert (verify_log(path).problem.kind, verify_log(path).problem.line) == ("bad-envelope", 6)


def test_replay_of_a_torn_log_warns_once_and_works(canonical_run: Run, workspace: Path, cli: Cli) -> None:
    tamper(canonical_run, "torn")
    with warnings.catch_warnings():
        warnings.simplefilter("error", TornTailWarning)  # the CLI reports it itself, once
        code, out, err = cli("--workspace", workspace, "replay", canonical_run.session_id)
    assert code == 0 and "events: 20" in out
    assert err.count("\n") == 1 and "line 21: torn-tail: torn final line (57 bytes" in err


def test_repair_sets_the_torn_line_aside_then_amend_works(canonical_run: Run, workspace: Path,
                                                          cli: Cli) -> None:
    path = tamper(canonical_run, "torn")
    torn_bytes = path.read_bytes()[verify_log(path).torn.offset:]
    rt = Runtime.from_workspace(workspace)
    target = canonical_run.events[0].id
    with pytest.raises(LogError, match="torn or unterminated line; set it aside first: agentos verify"):
        rt.amend(canonical_run.session_id, target, "prompt", "x", "test")
    code, out, err = cli("--workspace", workspace, "verify", canonical_run.session_id, "--repair")
    assert code == 0 and out.startswith("ok ") and "moved to" in err
    assert (path.parent / ".events.jsonl.torn").read_bytes() == torn_bytes + b"\n"
    assert verify_log(path).ok and verify_log(path).events == 20
    rt.amend(canonical_run.session_id, target, "prompt", "x", "test")
    assert verify_log(path).ok and verify_log(path).events == 21


def test_repair_never_touches_a_broken_chain(canonical_run: Run, cli: Cli) -> None:
    path = canonical_run.log_path
    lines = path.read_bytes().splitlines(keepends=True)
    lines[18] = lines[18].replace(b"Ada", b"Adb")
    path.write_bytes(b"".join([*lines[:-1], lines[-1][:30]]))
    before = path.read_bytes()
    with pytest.raises(ValueError, match="not repaired: altered at line 19"):
        repair_torn(verify_log(path))
    code, _, err = cli("verify", path, "--repair")
    assert code == 1 and "not repaired" in err and path.read_bytes() == before
    assert not (path.parent / ".events.jsonl.torn").exists()


def test_repair_gives_a_complete_last_line_its_newline(canonical_run: Run, cli: Cli) -> None:
    path = canonical_run.log_path
    path.write_bytes(path.read_bytes().rstrip(b"\n"))
    code, out, _ = cli("verify", path, "--repair")
    assert code == 0 and out.startswith("ok ") and path.read_bytes().endswith(b"}\n")
    assert not verify_log(path).unterminated


def test_replay_verify_in_the_workbench_shows_the_chain_verdict(canonical_run: Run, workspace: Path) -> None:
    sid = canonical_run.session_id
    view = api.verify_session(sid, workspace)
    assert view.verified and repr(view).splitlines()[1].startswith("chain: intact (32 events, head ")
    tamper(canonical_run, "byte")
    view = api.verify_session(sid, workspace)
    assert not view.verified and "✗" in view._repr_html_()
    assert repr(view).splitlines()[1].startswith("chain: line 19: altered: ")
    snap = api.replay_session(sid, workspace=workspace)
    assert repr(snap).startswith("WARNING: the log does not verify: line 19: altered")

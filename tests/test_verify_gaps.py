"""Issue 20: what `agentos verify` let through. A key held twice in one object (a first-wins
reader sees another event than the chain covers), a blank line, and a valid log of session A
placed in `sessions/B/` each verified as ok; each is now a finding naming its line, and the
readers (`agentos replay/events`, `agentos audit`) do not take them silently either."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import orjson
import pytest

from agentos_kernel.labs.audit.log import audit_log
from agentos_kernel.store.events import LOG_NAME, Event, TornTail, canonical, chain_of, read_log
from agentos_kernel.store.integrity import verify_log
from agentos_kernel.store.repair import repair_torn
from agentos_kernel.store.replay.fold import replay_path

from .helpers import Cli, Run, RunRequest

CLOSE = 31  # index of line 32, the canonical run's session.close: {"ok":true,"output":"Hello, Ada!"}
K = 18  # index of line 19, its tool.invoke: {"args":{"text":"Hello, Ada!"},...}
Lines = list[bytes]


def lines_of(run: Run) -> Lines:
    return run.log_path.read_bytes().splitlines(keepends=True)


def put(path: Path, lines: Lines) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"".join(lines))
    return path


def first_wins(line: bytes) -> dict:
    """What a reader that keeps a repeated key's first value reads."""
    return json.loads(line, object_pairs_hook=lambda pairs: dict(reversed(pairs)))


def the_issues_duplicate(lines: Lines) -> Lines:
    """The red team's edit, as written: `{"ok":false,"ok":true,...}` in session.close."""
    out = list(lines)
    out[CLOSE] = out[CLOSE].replace(b'"payload":{"ok":true', b'"payload":{"ok":false,"ok":true', 1)
    return out


def test_the_issues_duplicate_key_is_named_though_the_chain_covers_it(canonical_run: Run,
                                                                      tmp_path: Path) -> None:
    tampered = the_issues_duplicate(lines_of(canonical_run))
    assert first_wins(tampered[CLOSE])["payload"]["ok"] is False  # what the attack shows someone
    obj = orjson.loads(tampered[CLOSE])  # orjson (and so the chain check) reads the last value
    assert obj["payload"]["ok"] is True
    prev = orjson.loads(tampered[CLOSE - 1])["chain"]
    assert chain_of(prev, Event.from_dict(obj)) == obj["chain"]  # the chain alone passes it
    report = verify_log(put(tmp_path / "copy.jsonl", tampered))
    assert not report.ok and report.problem is not None
    assert (report.problem.kind, report.problem.line, report.problem.seq) == ("duplicate-key", 32, 32)
    assert "payload.ok twice" in report.problem.message


def test_a_duplicate_key_at_any_depth_even_chained_over_its_own_bytes(canonical_run: Run,
                                                                      tmp_path: Path) -> None:
    lines = lines_of(canonical_run)
    line = lines[K].replace(b'"args":{"text":"Hello, Ada!"}',
                            b'"args":{"text":"Hello, Eve!","text":"Hello, Ada!"}', 1)
    # A forger who hashes the line's own bytes (its chain member cut out) and rewrites the tail:
    prev = orjson.loads(lines[K - 1])["chain"]
    at = line.index(b',"chain":"')
    chain = hashlib.sha256(prev.encode() + line[:at] + line[at + 75:-1]).hexdigest()
    line = line[:at + 10] + chain.encode() + line[at + 74:]
    report = verify_log(put(tmp_path / "copy.jsonl", [*lines[:K], line, *lines[K + 1:]]))
    assert (report.problem.kind, report.problem.line) == ("duplicate-key", 19)
    assert "payload.args.text twice" in report.problem.message


def test_a_respelled_line_without_a_repeated_key_verifies_and_is_noted(canonical_run: Run,
                                                                       tmp_path: Path) -> None:
    lines = lines_of(canonical_run)
    lines[K] = lines[K].replace(b'"Hello, Ada!"', b'"Hello, \\u0041da!"', 1)  # the same value
    report = verify_log(put(tmp_path / "copy.jsonl", lines))
    assert report.ok, report.verdict()
    assert any("another spelling" in n and "line 19" in n for n in report.notes)


def test_a_blank_line_is_named_and_the_checks_go_on_past_it(canonical_run: Run, tmp_path: Path) -> None:
    lines = lines_of(canonical_run)
    report = verify_log(put(tmp_path / "copy.jsonl", [*lines[:K], b"\n", *lines[K:]]))
    assert not report.ok and report.problem is None and report.torn is None
    assert (report.blank.kind, report.blank.line) == ("blank-line", 19)
    assert [f.kind for f in report.findings] == ["blank-line"]
    assert report.head == orjson.loads(lines[-1])["chain"]  # every event still verified
    at_end = verify_log(put(tmp_path / "copy.jsonl", [*lines, b"  \n"]))
    assert (at_end.blank.line, at_end.ok) == (33, False)
    edited = [*lines[:K], lines[K].replace(b"Ada", b"Adb", 1), *lines[K + 1:]]
    both = verify_log(put(tmp_path / "copy.jsonl", [*edited[:3], b"\n", *edited[3:]]))
    assert [(f.kind, f.line) for f in both.findings] == [("blank-line", 4), ("altered", 20)]


def test_whitespace_as_the_last_segment_is_a_torn_line_repair_sets_aside(canonical_run: Run,
                                                                         cli: Cli) -> None:
    path = canonical_run.log_path
    whole = path.read_bytes()
    path.write_bytes(whole + b"  ")
    report = verify_log(path)
    assert report.blank is None and (report.torn.line, report.torn.size) == (33, 2)
    torn: list[TornTail] = []  # the readers set it aside as verify does, never silently
    assert len(list(read_log(path, on_torn=torn.append))) == 32
    assert replay_path(path, on_torn=torn.append).events == 32
    assert [(t.line, t.size) for t in torn] == [(33, 2), (33, 2)]
    code, _, err = cli("verify", path, "--repair")
    assert code == 0 and "moved to" in err
    assert path.read_bytes() == whole and path.with_name(LOG_NAME + ".torn").read_bytes() == b"  \n"


def test_repair_never_touches_a_log_with_a_blank_line(canonical_run: Run, cli: Cli) -> None:
    path = canonical_run.log_path
    lines = lines_of(canonical_run)
    before = b"".join([*lines[:K], b"\n", *lines[K:-1], lines[-1][:40]])
    path.write_bytes(before)
    code, _, err = cli("verify", path, "--repair")
    assert code == 1 and "not repaired" in err and "blank-line at line 19" in err
    with pytest.raises(ValueError, match="not repaired: blank-line at line 19"):
        repair_torn(verify_log(path))
    assert path.read_bytes() == before and not path.with_name(LOG_NAME + ".torn").exists()


def test_a_log_in_another_sessions_folder_is_misplaced(canonical_run: Run, workspace: Path,
                                                       cli: Cli) -> None:
    a = canonical_run.session_id
    b = workspace / "sessions" / "s0099"
    b.mkdir()
    shutil.copy(canonical_run.log_path, b / LOG_NAME)
    report = verify_log(b / LOG_NAME)
    assert not report.ok and report.problem is None and report.broken is report.misplaced
    assert (report.misplaced.kind, report.misplaced.line, report.misplaced.seq) == ("misplaced", 1, 1)
    assert repr(a) in report.misplaced.message and "'s0099'" in report.misplaced.message
    lines = lines_of(canonical_run)  # reported beside the problem: the lines are checked on
    put(b / LOG_NAME, [*lines[:K], lines[K].replace(b"Ada", b"Adb", 1), *lines[K + 1:]])
    both = verify_log(b / LOG_NAME)
    assert [(f.kind, f.line) for f in both.findings] == [("misplaced", 1), ("altered", 19)]
    put(b / LOG_NAME, [*lines[:-1], lines[-1][:40]])  # with a torn tail: never repaired
    with pytest.raises(ValueError, match="not repaired: misplaced at line 1"):
        repair_torn(verify_log(b / LOG_NAME))
    shutil.copy(canonical_run.log_path, b / LOG_NAME)
    code, out, _ = cli("--workspace", workspace, "verify", "s0099")
    assert code == 1 and f"{b / LOG_NAME}:1: misplaced: " in out
    code, out, _ = cli("verify", workspace / "sessions")
    assert code == 1 and "1 of 2 logs verify" in out
    assert verify_log(canonical_run.log_path).ok  # in its own folder it is fine


def test_a_log_given_by_another_file_name_is_not_held_to_a_folder(canonical_run: Run,
                                                                  tmp_path: Path) -> None:
    copy = tmp_path / "s0099" / "exported.jsonl"  # not the store's layout: no folder to match
    assert verify_log(put(copy, lines_of(canonical_run))).ok


@pytest.mark.parametrize("attack", ["duplicate key", "blank line", "misplaced"])
def test_replay_and_events_warn_strict_refuses_and_nothing_is_written(canonical_run: Run, workspace: Path,
                                                                       cli: Cli, attack: str) -> None:
    sid = canonical_run.session_id
    lines = lines_of(canonical_run)
    if attack == "duplicate key":
        path, kind = put(canonical_run.log_path, the_issues_duplicate(lines)), "duplicate-key"
    elif attack == "blank line":
        path, kind = put(canonical_run.log_path, [*lines[:K], b"\n", *lines[K:]]), "blank-line"
    else:
        sid, kind = "s0099", "misplaced"
        path = put(workspace / "sessions" / sid / LOG_NAME, lines)
    before = sorted((p, p.read_bytes()) for p in (workspace / "sessions").rglob("*") if p.is_file())
    for cmd in ("replay", "events"):
        code, out, err = cli("--workspace", workspace, cmd, sid)
        assert code == 0 and out and f"agentos: warning: {sid} does not verify: " in err, cmd
        assert f": {kind}: " in err and err.count("\n") == 1
        code, out, err = cli("--workspace", workspace, cmd, sid, "--strict")
        assert (code, out) == (1, "") and kind in err
    after = sorted((p, p.read_bytes()) for p in (workspace / "sessions").rglob("*") if p.is_file())
    assert after == before and path.is_file()


def test_audit_names_a_key_held_twice(canonical_run: Run) -> None:
    put(canonical_run.log_path, the_issues_duplicate(lines_of(canonical_run)))
    report = audit_log(canonical_run.log_path)
    gaps = [g for g in report.gaps if g.check == "envelope"]
    assert [(g.line, "payload.ok twice" in g.what) for g in gaps] == [(32, True)]
    assert report.events == 32  # the line is still audited, as orjson reads it


def test_nesting_deeper_than_the_encoder_goes_is_a_finding_not_a_crash(canonical_run: Run,
                                                                       tmp_path: Path) -> None:
    lines = lines_of(canonical_run)
    obj = orjson.loads(lines[K])
    deep = b'"payload":' + b"[" * 300 + b"]" * 300
    line = canonical(obj).replace(b'"payload":{"args":{"text":"Hello, Ada!"},"id":"t1","name":"echo"}', deep)
    path = put(tmp_path / "copy.jsonl", [*lines[:K], line + b"\n", *lines[K + 1:]])
    report = verify_log(path)
    assert (report.problem.kind, report.problem.line) == ("bad-envelope", 19)
    assert [g.line for g in audit_log(path).gaps if g.check == "envelope"] == [19]


def test_a_log_of_ours_is_parsed_once(run_request: RunRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """Only a line that is not our writer's canonical bytes is parsed a second time."""
    from agentos_kernel.store import integrity_scan

    calls: list[bytes] = []
    monkeypatch.setattr(integrity_scan, "duplicate_key", lambda raw: calls.append(raw))
    run = run_request()
    assert verify_log(run.log_path).ok and calls == []

"""Replay in bounded memory (issue 12): snapshot_v2 holds what snapshot_v1 holds, but the
growing lists as counts, tallies and their last items; its memory does not grow with the log.
The memory guard counts traced bytes (tracemalloc), never seconds."""

from __future__ import annotations

import json
import tracemalloc
from collections import Counter
from pathlib import Path

import pytest

from agentos_kernel.errors import Ok
from agentos_kernel.store.events import LogError, read_log
from agentos_kernel.store.replay.fold import LISTS, replay_path
from agentos_kernel.store.replay.summary import RECENT, SnapshotSummary, summarize, summarize_path
from agentos_kernel.testing import write_long_session

from .helpers import Cli, RunRequest

FAULTS = (None, "reviewer_fail_once", "hook_deny", "schema_violation", "malformed_worker", "provider_flaky")


def _agrees(summary: SnapshotSummary, full: object, recent: int) -> None:
    """Every v1 scalar equal; each list as its length, its tally and its last `recent` items."""
    v1, v2 = full.to_dict(), summary.to_dict()
    for key in v1:
        if key in LISTS or key == "schema_version":
            continue
        assert v2[key] == v1[key], key
    for key in LISTS:
        assert v2["counts"][key] == len(v1[key]), key
        assert v2["recent"][key] == (v1[key][-recent:] if recent else []), key
    assert v2["hook_decision_counts"] == dict(Counter(h["decision"] for h in v1["hook_decisions"]))
    assert v2["tool_counts"] == dict(Counter(t["name"] for t in v1["tools_invoked"]))


@pytest.mark.parametrize("faults", FAULTS)
def test_a_summary_agrees_with_the_full_snapshot(run_request: RunRequest, faults: str | None) -> None:
    run = run_request(faults=faults)
    path = run.rt.store.path(run.session_id)
    full = run.rt.replay(run.session_id)
    for recent in (0, 2, RECENT):
        _agrees(summarize_path(path, recent=recent), full, recent)
        _agrees(summarize(read_log(path), recent=recent), full, recent)
    d = run.rt.replay_summary(run.session_id).to_dict()
    assert isinstance(run.rt.schemas.validate(d, "snapshot_v2"), Ok)
    assert d["schema_version"] == "v2" and json.loads(json.dumps(d)) == d


def test_a_summary_at_every_prefix_agrees(canonical_run) -> None:
    path = canonical_run.rt.store.path(canonical_run.session_id)
    for at in range(0, 34):  # every cut, including one landing on a line only counted from its bytes
        _agrees(summarize_path(path, at=at, recent=3), replay_path(path, at=at), 3)


def test_a_long_log_keeps_counts_and_the_last_items(tmp_path: Path) -> None:
    path = write_long_session(tmp_path, "long", 5000)
    summary, full = summarize_path(path, recent=5), replay_path(path)
    _agrees(summary, full, 5)
    assert summary.counts["hook_decisions"] > 1000
    assert all(len(items) <= 5 for items in summary.recent.values())


def _peak(fn) -> int:
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_summary_memory_does_not_grow_with_the_log(tmp_path: Path) -> None:
    short, long = write_long_session(tmp_path, "a", 1000), write_long_session(tmp_path, "b", 8000)
    summarize_path(short)  # warm: imports, interned strings
    grows = _peak(lambda: replay_path(long)) - _peak(lambda: replay_path(short))
    flat = _peak(lambda: summarize_path(long)) - _peak(lambda: summarize_path(short))
    assert grows > 500_000  # the full snapshot holds every tool call and hook decision
    assert flat < 20_000  # the summary: the same few kB at 1k and at 8k events


def test_a_bad_line_the_summary_reads_still_names_its_line(tmp_path: Path) -> None:
    path = write_long_session(tmp_path, "long", 40)
    lines = path.read_bytes().splitlines(keepends=True)
    hook = next(i for i, line in enumerate(lines) if b'"type":"hook.fired"' in line and i > 0)
    lines[hook] = b'{"actor":"x","type":"hook.fired"}\n'  # no id, no payload
    path.write_bytes(b"".join(lines))
    with pytest.raises(LogError, match=rf":{hook + 1}: id: required event field is missing"):
        summarize_path(path)


def test_cli_replay_summary(workspace: Path, cli: Cli, run_request: RunRequest) -> None:
    run = run_request(session_id="s1")
    code, out, _ = cli("--workspace", workspace, "replay", "s1", "--summary", "--json", "--recent", "1")
    assert code == 0
    d = json.loads(out)
    assert isinstance(run.rt.schemas.validate(d, "snapshot_v2"), Ok)
    assert d["counts"]["hook_decisions"] == 7 and len(d["recent"]["hook_decisions"]) == 1
    code, out, _ = cli("--workspace", workspace, "replay", "s1", "--summary")
    assert code == 0 and "hook_decision_counts:" in out and "recent_limit: 20" in out
    code, _, err = cli("--workspace", workspace, "replay", "s1", "--recent", "3")
    assert code == 2 and "add --summary" in err
    code, _, err = cli("--workspace", workspace, "replay", "s1", "--summary", "--recent", "-1")
    assert code == 2 and "negative" in err

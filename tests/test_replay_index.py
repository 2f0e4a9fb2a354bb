"""ReplayIndex and LogEvents: the snapshot at any position equals replay's, whatever order
positions are asked in, and the work per answer is bounded by the mark interval, not by the
session's length (counted, never timed)."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from agentos_kernel import replay
from agentos_kernel.jupyter.layers import GATED_BY, hook_decisions_for
from agentos_kernel.store.events import Event, LogError, TornTailWarning, read_log
from agentos_kernel.store.recorder import layer_of
from agentos_kernel.store.replay.index import CHECKPOINT_EVERY, ReplayIndex
from agentos_kernel.store.replay.logview import LogEvents
from agentos_kernel.testing import write_long_session

from .helpers import Run


def _amended(events: list[Event]) -> list[Event]:
    """The run plus an amendment of its worker output and a short L8 cycle, so every part of
    the fold (roles, workflow, amendments) is crossed by marks."""
    report = next(e for e in events if e.type == "worker.report")
    sid, n = events[0].session_id, len(events)

    def e(k: int, type_: str, payload: dict) -> Event:
        return Event(f"x{k}", sid, "2026-01-01T00:00:00Z", type_, "system", payload, seq=n + k)

    return [*events,
            e(1, "event.amended", {"target_id": report.id, "field": "output", "value": "Hi, Ada!"}),
            e(2, "workflow.started", {"cycle_id": "c1", "mode": "auto", "entry_phase": "a"}),
            e(3, "workflow.phase_advanced", {"cycle_id": "c1", "from_phase": "a", "to_phase": "b"}),
            e(4, "workflow.completed", {"cycle_id": "c1", "verdict": "done"})]


@pytest.mark.parametrize("every", [1, 3, 7, 64])
def test_every_position_in_any_order_is_what_replay_says(canonical_run: Run, every: int) -> None:
    events = _amended(canonical_run.events)
    index = ReplayIndex(events, every=every)
    order = list(range(len(events) + 1))
    random.Random(every).shuffle(order)
    for k in [*order, *range(len(events) + 1), *reversed(order)]:
        assert index.snapshot(k) == replay(events, at=k), k
    assert index.snapshot(len(events)).output == "Hi, Ada!"


def test_types_layers_and_hook_runs_match_a_scan(canonical_run: Run) -> None:
    events = canonical_run.events
    index = ReplayIndex(events, every=5)
    for i, ev in enumerate(events):
        assert (index.type(i), index.layer(i)) == (ev.type, layer_of(ev))
        counts = {}
        for prev in events[:i + 1]:
            counts[layer_of(prev)] = counts.get(layer_of(prev), 0) + 1
        assert index.layer_counts(i + 1) == counts
        hook = GATED_BY.get(ev.type)
        if hook and ev.type != "hook.fired":
            assert [events[p] for p in index.hook_run(i, hook)] == hook_decisions_for(events, i)
    tool = next(i for i, e in enumerate(events) if e.type == "tool.invoke")
    assert [events[p].payload["handler"] for p in index.hook_run(tool, "PreToolUse")] == \
        ["deny_dangerous_tools", "pre_tool_use_default"]


def test_stepping_a_5k_event_session_folds_each_event_about_once(tmp_path: Path) -> None:
    path = write_long_session(tmp_path, "long", 5000)
    events = LogEvents(path)
    index = ReplayIndex(events)
    assert (index.folded, index.built) == (0, 0)  # the pass keeps marks, not 5000 snapshots
    for k in range(1, 5001):  # Next, all the way
        index.snapshot(k)
    assert index.built == 5000 and index.folded <= 5000
    for k in range(5000, -1, -1):  # Prev, all the way back: each step resumes a mark
        before = index.folded
        index.snapshot(k)
        assert index.folded - before < CHECKPOINT_EVERY
    for k in random.Random(0).sample(range(5001), 200):  # jumps
        before = index.folded
        assert index.snapshot(k).events == k
        assert index.folded - before < CHECKPOINT_EVERY
    assert index.snapshot(5000) == replay(read_log(path))


def test_log_events_read_what_read_log_reads(canonical_run: Run, tmp_path: Path) -> None:
    events = LogEvents(canonical_run.log_path)
    assert len(events) == len(canonical_run.events)
    assert list(events) == canonical_run.events and events[-1] == canonical_run.events[-1]
    assert events[3:6] == canonical_run.events[3:6]
    with pytest.raises(IndexError):
        events[len(events)]
    torn = tmp_path / "torn.jsonl"
    torn.write_bytes(b"\n" + canonical_run.log_path.read_bytes() + b'{"id": "half')
    with pytest.warns(TornTailWarning, match=r"torn\.jsonl:34: torn final line"):
        assert list(LogEvents(torn)) == canonical_run.events
    bad = tmp_path / "bad.jsonl"
    lines = canonical_run.log_path.read_bytes().splitlines(keepends=True)
    bad.write_bytes(b"".join([*lines[:4], b"{not json\n", *lines[4:]]))
    with pytest.raises(LogError, match=r"bad\.jsonl:5: -: not JSON"):
        ReplayIndex(LogEvents(bad))
    missing = tmp_path / "missing.jsonl"
    missing.write_bytes(lines[0].replace(b'"actor":"user",', b""))
    with pytest.raises(LogError, match=r"missing\.jsonl:1: actor: required event field is missing"):
        ReplayIndex(LogEvents(missing))

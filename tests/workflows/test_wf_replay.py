"""Replay restores the current cycle, phase, verdict and visited phases from the log alone:
no runtime, no registry, no workspace — just the .events.jsonl file."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from agentos_kernel import SchemaRegistry, read_log, replay
from agentos_kernel.store.replay.fold import replay_path, replay_steps

from .conftest import RunCycle


@pytest.mark.parametrize(("cycle", "faults", "verdict"), [
    ("code-review", None, "done"), ("code-review", "p0_finding", "halted"),
    ("bugfix", "p0_manual", "abort"), ("ralph-loop", "grade_regression", "halted"),
    ("code-review", "phase_advance_denied", "abort"), ("code-review", "workflow_denied", "abort"),
])
def test_replay_restores_the_cycle_from_the_log_alone(run_cycle: RunCycle, tmp_path: Path, cycle: str,
                                                      faults: str | None, verdict: str) -> None:
    run = run_cycle(cycle, faults=faults)
    c = run.result
    alone = tmp_path / "copied.events.jsonl"
    shutil.copy(c.log_path, alone)  # away from its workspace: the log is all replay gets
    for snap in (replay(read_log(alone)), replay_path(alone)):
        w = snap.workflow
        assert w is not None
        assert (w["cycle_id"], w["phase"], w["verdict"], w["visited"]) == \
            (c.cycle_id, c.phase, verdict, list(c.visited))
        assert w["reason"] == c.reason
        assert w["policy_decisions"] == len(run.of("workflow.policy_gated"))
        assert snap.closed and snap.ok is (verdict == "done")


def test_replay_at_each_event_follows_the_phases(run_cycle: RunCycle) -> None:
    run = run_cycle("code-review", faults="p0_finding_once")
    phases, verdicts = [], []
    for ev, snap in replay_steps(read_log(run.result.log_path)):
        if ev.type in ("workflow.started", "workflow.phase_advanced"):
            phases.append(snap.workflow["phase"])
        verdicts.append(snap.workflow["verdict"] if snap.workflow else None)
    assert phases == ["review", "fix", "review", "report"]
    assert verdicts[-3:] == [None, "done", "done"]  # WorkflowComplete hook, completed, session.close
    assert set(verdicts[:-2]) == {None}
    first = replay(read_log(run.result.log_path), at=run.types().index("workflow.phase_advanced") + 1)
    assert (first.workflow["phase"], first.workflow["visited"]) == ("fix", ["review", "fix"])


def test_snapshot_with_a_workflow_is_a_valid_snapshot(run_cycle: RunCycle, ws: Path) -> None:
    run = run_cycle("bugfix", "fix the login bug in auth.py")
    snap = replay(read_log(run.result.log_path)).to_dict()
    assert SchemaRegistry.load(ws / "schemas").violations(snap, "snapshot_v1") == []


def test_replay_writes_nothing(run_cycle: RunCycle, ws: Path) -> None:
    run = run_cycle("ralph-loop", "make the tests pass")
    before = sorted(p.as_posix() for p in ws.rglob("*")) + sorted(p.as_posix() for p in Path.cwd().rglob("*"))
    data = run.result.log_path.read_bytes()
    run.rt.replay(run.result.session_id)
    after = sorted(p.as_posix() for p in ws.rglob("*")) + sorted(p.as_posix() for p in Path.cwd().rglob("*"))
    assert before == after and run.result.log_path.read_bytes() == data

"""L4 replay (I-1): the snapshot is a pure fold of the log; nothing is re-run or written."""

from __future__ import annotations

import json
import os
import uuid
from pathlib import Path

import pytest

from agentos_kernel import Ok, Runtime, ToolRegistry, replay, verify_chain
from agentos_kernel.store.events import Event, read_log
from agentos_kernel.store.replay.fold import replay_path, replay_steps

from .helpers import CANONICAL, Cli, Run, RunRequest


def test_replay_of_the_log_alone_reproduces_the_closed_snapshot(canonical_run: Run,
                                                                workspace: Path) -> None:
    snap = Runtime.from_workspace(workspace).replay(canonical_run.session_id)
    assert snap.closed and snap.ok and snap.state == "DONE"
    assert snap.output == canonical_run.result.value.output == "Hello, Ada!"
    assert snap.skill == "greet"
    assert snap.events == len(canonical_run.events)
    assert snap.last_event_id == canonical_run.events[-1].id
    assert snap.llm_calls == len(canonical_run.of("llm.response")) == 5
    assert [t["name"] for t in snap.tools_invoked] == ["echo"]
    usage = [e.payload["usage"] for e in canonical_run.of("llm.response")]
    assert snap.cost.input_tokens == sum(u["input_tokens"] for u in usage)
    assert snap.cost.output_tokens == sum(u["output_tokens"] for u in usage)
    assert snap.cost.cost_usd == pytest.approx(sum(u["cost_usd"] for u in usage))


def test_replay_touches_nothing(canonical_run: Run, workspace: Path) -> None:
    path = canonical_run.log_path
    before = (path.read_bytes(), path.stat().st_mtime_ns, sorted(os.listdir(path.parent)))
    tree = sorted(p.relative_to(workspace).as_posix() for p in workspace.rglob("*"))
    rt = Runtime.from_workspace(workspace)
    for at in (None, 0, 5):
        rt.replay(canonical_run.session_id, at)
    replay(read_log(path))
    assert (path.read_bytes(), path.stat().st_mtime_ns, sorted(os.listdir(path.parent))) == before
    assert sorted(p.relative_to(workspace).as_posix() for p in workspace.rglob("*")) == tree


def test_replay_runs_no_provider_tool_or_hook(canonical_run: Run, workspace: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    rt = Runtime.from_workspace(workspace)

    def boom(*_a: object, **_k: object) -> None:
        raise AssertionError("replay re-ran or wrote something")

    monkeypatch.setattr(rt.hooks, "fire", boom)
    monkeypatch.setattr(rt.store, "append", boom)
    monkeypatch.setattr("agentos_kernel.kernel.PROVIDERS", {})
    rt.tools = ToolRegistry()
    assert rt.replay(canonical_run.session_id).output == "Hello, Ada!"


def test_at_n_is_the_state_after_the_first_n_events(canonical_run: Run) -> None:
    events, path = canonical_run.events, canonical_run.log_path
    n = len(events)
    empty = replay(events, at=0)
    assert empty.events == 0 and empty.session_id is None and not empty.closed
    for k in range(n + 2):
        snap = replay(events, at=k)
        assert snap == replay(events[:k])
        assert snap == replay_path(path, at=k)
        assert snap.events == min(k, n)
        if k:
            assert snap.last_event_id == events[min(k, n) - 1].id
    assert not replay(events, at=n - 1).closed
    assert replay(events, at=n).closed and replay(events, at=n + 5) == replay(events)
    report = next(i for i, e in enumerate(events, 1) if e.type == "worker.report")
    assert replay(events, at=report - 1).output is None
    assert replay(events, at=report).output == "Hello, Ada!"


def test_replay_steps_yields_the_snapshot_after_each_event(canonical_run: Run) -> None:
    steps = list(replay_steps(canonical_run.events))
    assert [e for e, _ in steps] == canonical_run.events
    for k, (_, snap) in enumerate(steps, 1):
        assert snap == replay(canonical_run.events, at=k)


@pytest.mark.parametrize("faults", [None, "reviewer_fail", "hook_error", "provider_down",
                                    "schema_violation"])
def test_replay_path_and_replay_agree(run_request: RunRequest, faults: str | None) -> None:
    run = run_request(faults=faults)
    assert replay_path(run.log_path) == replay(read_log(run.log_path)) == run.rt.replay(run.session_id)


def test_snapshot_to_dict_validates_against_snapshot_v1(run_request: RunRequest) -> None:
    for faults in (None, "reviewer_fail", "hook_timeout", "schema_violation"):
        run = run_request(faults=faults)
        snap = run.rt.replay(run.session_id).to_dict()
        assert isinstance(run.rt.schemas.validate(snap, "snapshot_v1"), Ok), faults
        json.dumps(snap)  # plain JSON


def test_cli_replay_json_is_the_snapshot(canonical_run: Run, workspace: Path, cli: Cli) -> None:
    code, out, err = cli("--workspace", workspace, "replay", canonical_run.session_id, "--json")
    assert code == 0 and err == ""
    assert json.loads(out) == canonical_run.rt.replay(canonical_run.session_id).to_dict()
    code, out, _ = cli("--workspace", workspace, "replay", canonical_run.session_id, "--at", "3",
                       "--json")
    assert code == 0 and json.loads(out)["events"] == 3


def _spec_line(session_id: str, ts: float, type: str, actor: str, payload: dict,
               parent_id: str | None = None) -> tuple[str, str]:
    """One line as the spec's Python EventStore writes it: eight fields, numeric ts."""
    eid = str(uuid.UUID(int=int(ts * 1000)))
    return eid, json.dumps({"id": eid, "session_id": session_id, "ts": ts, "type": type,
                            "actor": actor, "payload": payload, "schema_version": "v1",
                            "parent_id": parent_id}, ensure_ascii=False)


def test_log_with_only_the_spec_eight_fields_replays(workspace: Path) -> None:
    sid = "student-01"
    t = 1767225600.0
    lines = []
    for i, (type_, actor, payload) in enumerate([
        ("session.start", "user", {"prompt": "hello"}),
        ("agent.transition", "lead", {"from": "INTAKE", "to": "LEAD"}),
        ("llm.response", "lead", {"usage": {"input_tokens": 10, "output_tokens": 4}}),
        ("tool.invoke", "worker", {"name": "echo", "args": {"text": "Hello!"}}),
        ("worker.report", "worker", {"output": "Hello!", "steps_completed": ["s1"]}),
        ("session.close", "system", {"ok": True}),
    ]):
        lines.append(_spec_line(sid, t + i * 0.25, type_, actor, payload)[1])
    log = workspace / "sessions" / sid / ".events.jsonl"
    log.parent.mkdir(parents=True)
    log.write_text("\n".join(lines) + "\n", encoding="utf-8")

    events = list(read_log(log))
    assert [e.seq for e in events] == [None] * 6 and events[0].ts.startswith("2026-01-01T00:00:00")
    snap = Runtime.from_workspace(workspace).replay(sid)
    assert snap.closed and snap.ok and snap.output == "Hello!"
    assert snap.cost.input_tokens == 10 and snap.cost.output_tokens == 4
    assert snap.roles == {"lead": "LEAD"}
    assert replay(events) == snap
    assert verify_chain(events) is None  # nothing to verify, nothing to reject


def test_amendment_changes_the_replayed_output_without_editing_the_line(canonical_run: Run,
                                                                        workspace: Path) -> None:
    path = canonical_run.log_path
    original = path.read_bytes()
    report = canonical_run.of("worker.report")[0]
    rt = Runtime.from_workspace(workspace)
    amended = rt.amend(canonical_run.session_id, report.id, "output", "Hello, Ada Lovelace!",
                       "the user gave the full name")
    assert amended.type == "event.amended" and amended.parent_id == report.id
    after = path.read_bytes()
    assert after.startswith(original), "earlier lines must stay byte-identical"
    assert after.count(b"\n") == original.count(b"\n") + 1
    snap = rt.replay(canonical_run.session_id)
    assert snap.output == "Hello, Ada Lovelace!" and snap.amendments == 1
    assert replay(read_log(path), at=len(canonical_run.events)).output == "Hello, Ada!"
    events = list(read_log(path))
    assert verify_chain(events) is None
    assert events[-1].seq == len(events)
    assert isinstance(rt.schemas.validate(events[-1].payload, "event_amended_v1"), Ok)


def test_amending_an_unknown_event_is_refused(canonical_run: Run, workspace: Path) -> None:
    before = canonical_run.log_path.read_bytes()
    with pytest.raises(KeyError, match="nope"):
        Runtime.from_workspace(workspace).amend(canonical_run.session_id, "nope", "output", "x", "y")
    assert canonical_run.log_path.read_bytes() == before


def test_deterministic_mode_gives_byte_identical_logs(tmp_path: Path, cli: Cli) -> None:
    logs = []
    for name in ("one", "elsewhere/two"):
        ws = tmp_path / name
        assert cli("init", ws)[0] == 0
        rt = Runtime.from_workspace(ws)
        result = rt.handle_user_request(CANONICAL)
        logs.append(result.value.log_path.read_bytes())
    assert logs[0] == logs[1]
    assert str(tmp_path).encode() not in logs[0], "a log must not depend on where the workspace is"


def test_snapshots_handed_out_by_replay_steps_never_change_afterwards() -> None:
    def e(n: int, type_: str, actor: str, payload: dict) -> Event:
        return Event(f"e{n}", "s", f"2026-01-01T00:00:00.{n:03d}Z", type_, actor, payload, seq=n)

    events = [
        e(1, "agent.transition", "lead", {"from": "INTAKE", "to": "LEAD"}),
        e(2, "workflow.started", "system", {"cycle_id": "c1"}),
        e(3, "workflow.phase_advanced", "system", {"cycle_id": "c1", "from_phase": "a", "to_phase": "b"}),
        e(4, "agent.transition", "planner", {"from": "LEAD", "to": "PLAN"}),
        e(5, "workflow.phase_advanced", "system", {"cycle_id": "c1", "from_phase": "b", "to_phase": "c"}),
        e(6, "workflow.completed", "system", {"cycle_id": "c1", "verdict": "done"}),
    ]
    steps = [snap for _, snap in replay_steps(events)]
    assert steps[0].roles == {"lead": "LEAD"}
    w = steps[2].workflow
    assert (w["cycle_id"], w["phase"], w["verdict"], w["visited"]) == ("c1", "b", None, ["a", "b"])
    assert steps[5].workflow["visited"] == ["a", "b", "c"] and steps[5].workflow["verdict"] == "done"
    assert steps[5].roles == {"lead": "LEAD", "planner": "PLAN"}
    assert [s == replay(events, at=k) for k, s in enumerate(steps, 1)] == [True] * 6


def test_each_replay_folds_into_its_own_containers(canonical_run: Run) -> None:
    """The fold starts from a blank made once (not asdict per replay): two replays, and the
    blank itself, must share no list or dict, or one replay would leak into the next."""
    from dataclasses import asdict

    from agentos_kernel.store.replay.fold import _BLANK
    from agentos_kernel.store.replay.snapshot import Snapshot

    first = replay(canonical_run.events)
    assert first.tools_invoked and first.roles and first.cost.input_tokens
    assert asdict(Snapshot()) == _BLANK
    assert replay([]) == Snapshot()
    assert replay(canonical_run.events) == first

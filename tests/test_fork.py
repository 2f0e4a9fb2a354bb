"""Fork at event k (issue 11): a new session that begins with the parent's first k events,
then session.forked, then runs live; it verifies, audits, replays and re-runs like any log."""

from __future__ import annotations

import json
from pathlib import Path

import orjson
import pytest

from agentos_kernel import Err, Runtime
from agentos_kernel.errors import ErrorCode
from agentos_kernel.labs.audit.log import audit_log
from agentos_kernel.providers.faults import load_fault_plan
from agentos_kernel.runs.diff import diff_events
from agentos_kernel.runs.fork import fork, fork_points, parse_target
from agentos_kernel.runs.rerun import rerun
from agentos_kernel.schemas.jsondiff import rename_session
from agentos_kernel.store.events import Event, canonical
from agentos_kernel.store.integrity import verify_log

from .helpers import Cli, Run, RunRequest
from .test_verify import rechain

WORK, REVIEW = 14, 25
"""The canonical request's WORK and REVIEW transitions (README's trace)."""


def _fork(workspace: Path, parent: str, at: int, faults: str | None = None,
          profile: str | None = None) -> tuple[Runtime, list[Event], Err | object]:
    rt = Runtime.from_workspace(workspace, profile=profile,
                                faults=load_fault_plan(faults) if faults else None)
    result = fork(rt, parent, at, faults=faults)
    sid = result.error.session_id if isinstance(result, Err) else result.value.session_id
    return rt, rt.events(sid) if sid else [], result


def _view(e: Event, rename: tuple[str, str] | None = None) -> dict[str, object]:
    view = {"type": e.type, "actor": e.actor, "payload": e.payload}
    return rename_session(view, *rename) if rename else view


@pytest.fixture
def parent(canonical_run: Run) -> Run:
    return canonical_run


def test_fork_at_the_tool_call_with_a_hook_deny(workspace: Path, parent: Run) -> None:
    rt, events, result = _fork(workspace, parent.session_id, WORK, "hook_deny")
    assert isinstance(result, Err) and result.error.code == ErrorCode.HUMAN_ESCALATION
    sid = result.error.session_id
    assert sid != parent.session_id
    # the parent's first k events, re-stamped in the fork's own session
    assert [_view(e) for e in events[:WORK]] == \
        [_view(e, (parent.session_id, sid)) for e in parent.events[:WORK]]
    assert all(e.session_id == sid for e in events)
    forked = events[WORK]
    assert forked.type == "session.forked"
    assert forked.payload == {
        "parent_session": parent.session_id, "at": WORK, "parent_event_id": parent.events[WORK - 1].id,
        "parent_chain": parent.events[WORK - 1].chain, "resumes": "WORK", "attempt": 1,
        "profile": "scripted", "provider": "scripted", "model": "scripted-1", "faults": "hook_deny"}
    assert forked.parent_id == events[WORK - 1].id
    # then live: the worker's tool call is denied by the fork's hook
    denies = [e for e in events if e.type == "hook.fired" and e.payload["decision"] == "deny"
              and e.payload["hook"] == "PreToolUse"]
    assert denies and events.index(denies[0]) > WORK
    assert "echo" not in [e.payload["name"] for e in events if e.type == "tool.invoke"]
    # the lead and the planner were not asked again
    roles = [e.payload["role"] for e in events[WORK:] if e.type == "llm.request"]
    assert set(roles) == {"worker", "reviewer"}
    snap = rt.replay(sid)
    assert snap.closed and snap.ok is False
    assert snap.close_reason.endswith("(root cause: GATE_DENIED at event 19)")


def test_the_fork_verifies_audits_and_reruns(workspace: Path, parent: Run, cli: Cli) -> None:
    rt, events, _result = _fork(workspace, parent.session_id, WORK, "hook_deny")
    sid = events[0].session_id
    path = rt.store.path(sid)
    report = verify_log(path)
    assert report.ok and report.events == len(events), report.verdict()
    audit = audit_log(path)
    assert audit.gaps == (), audit.gaps
    code, out, _ = cli("--workspace", workspace, "verify", sid)
    assert code == 0 and out.startswith("ok ")
    code, out, _ = cli("--workspace", workspace, "audit", str(path))
    assert code == 0, out
    # re-run: the prefix copied again, the live part played back (the fork's hooks included)
    again = rerun(Runtime.from_workspace(workspace), sid)
    assert not isinstance(again, Err), again
    assert again.value.verified, again.value.verdict()
    assert again.value.events_compared == len(events)
    code, out, _ = cli("--workspace", workspace, "rerun", sid, "--verify")
    assert code == 0 and out.rstrip().endswith(f"matches {sid} ({len(events)} events)")


def test_the_fork_replays_like_any_log(workspace: Path, parent: Run, cli: Cli) -> None:
    rt, events, _ = _fork(workspace, parent.session_id, REVIEW, "reviewer_fail")
    sid = events[0].session_id
    snap = rt.replay(sid)
    assert snap.escalated and snap.rework_count == rt.profile.max_rework
    assert rt.replay(sid, at=REVIEW).to_dict() | {"session_id": None, "last_event_id": None} == \
        rt.replay(parent.session_id, at=REVIEW).to_dict() | {"session_id": None, "last_event_id": None}
    code, out, _ = cli("--workspace", workspace, "replay", sid, "--json")
    assert code == 0 and json.loads(out)["escalated"] is True
    code, out, err = cli("--workspace", workspace, "events", sid, "--type", "session.forked")
    assert code == 0 and err == ""
    assert f"fork of {parent.session_id} after event {REVIEW}: REVIEW runs live" in out
    # the reviewer's first verdict is the only thing run again before the rework
    assert next(e.payload["role"] for e in events[REVIEW:] if e.type == "llm.request") == "reviewer"


def test_a_fork_on_another_profile_runs_the_rest_on_its_model(workspace: Path, parent: Run) -> None:
    rt, events, result = _fork(workspace, parent.session_id, 10, profile="scripted-alt")
    assert not isinstance(result, Err), result
    models = [e.payload["model"] for e in events if e.type == "llm.request"]
    assert models[0] == "scripted-1" and set(models[1:]) == {rt.profile.model} != {"scripted-1"}
    assert events[10].payload["profile"] == "scripted-alt"
    again = rerun(Runtime.from_workspace(workspace), events[0].session_id)
    assert again.value.verified, again.value.verdict()


def test_a_k_that_is_no_resume_point_is_refused_with_the_valid_ones(workspace: Path, parent: Run,
                                                                   cli: Cli) -> None:
    assert [(p.at, p.stage) for p in fork_points(parent.events)] == \
        [(6, "LEAD"), (10, "PLAN"), (WORK, "WORK"), (REVIEW, "REVIEW")]
    rt, _, result = _fork(workspace, parent.session_id, 18)
    assert isinstance(result, Err) and result.error.session_id is None
    assert "event 18 is a hook.fired" in result.error.message
    assert "Valid K for s0001: 6 (LEAD), 10 (PLAN), 14 (WORK), 25 (REVIEW)" in result.error.message
    code, _, err = cli("--workspace", workspace, "fork", f"{parent.session_id}@999")
    assert code == 2 and f"it has events 1..{len(parent.events)}" in err
    code, _, err = cli("--workspace", workspace, "fork", parent.session_id)
    assert code == 2 and "is not ID@K" in err
    assert rt.store.sessions() == [parent.session_id]  # nothing was made


def test_a_parent_that_does_not_verify_is_refused(workspace: Path, parent: Run, cli: Cli) -> None:
    path = parent.log_path
    lines = path.read_text().splitlines(keepends=True)
    lines[2] = lines[2].replace("redact_pii", "redact_pij")  # an edit after the fact
    path.write_text("".join(lines))
    code, _, err = cli("--workspace", workspace, "fork", f"{parent.session_id}@{WORK}")
    assert code == 2
    assert f"{parent.session_id} does not verify (line 3" in err and "refused" in err
    assert Runtime.from_workspace(workspace).store.sessions() == [parent.session_id]


def test_the_cli_fork_prints_the_run(workspace: Path, parent: Run, cli: Cli) -> None:
    code, out, err = cli("--workspace", workspace, "fork", f"{parent.session_id}@{WORK}",
                         "--faults", "hook_deny", "--session", "what-if")
    assert code == 1 and err == ""
    assert "session.forked" in out and "fork of s0001 after event 14: WORK runs live" in out
    assert out.rstrip().splitlines()[-1].endswith("(root cause: GATE_DENIED at event 19)")
    code, out, _ = cli("--workspace", workspace, "fork", f"{parent.session_id}@{WORK}")
    assert code == 0 and out.rstrip().splitlines()[-1] == "ok: Hello, Ada!"


def test_a_cycle_cannot_be_forked(workspace: Path) -> None:
    rt = Runtime.from_workspace(workspace)
    ran = rt.run_cycle("code-review", "review the change in auth.py")
    result = fork(rt, ran.value.session_id, 6)
    assert isinstance(result, Err) and "it ran an L8 cycle" in result.error.message


def test_a_workspace_made_before_forks_still_loads_and_says_what_to_copy(
        workspace: Path, run_request: RunRequest) -> None:
    run = run_request()
    (workspace / "schemas" / "events" / "event_session_forked_v1.json").unlink()
    rt = Runtime.from_workspace(workspace)  # loads: the schema is needed only by fork
    result = fork(rt, run.session_id, WORK)
    assert isinstance(result, Err) and result.error.code == ErrorCode.SCHEMA_NOT_FOUND
    assert "event_session_forked_v1" in result.error.message and "copy it from" in result.error.message


def test_parse_target() -> None:
    assert parse_target("s0001@14") == ("s0001", 14)
    for bad in ("s0001", "s0001@", "@3", "../x@3", "s0001@-1"):
        with pytest.raises(ValueError):
            parse_target(bad)


def test_the_forked_schema_is_a_new_file_beside_the_shipped_ones(workspace: Path) -> None:
    shipped = workspace / "schemas" / "events"
    assert (shipped / "event_session_forked_v1.json").is_file()
    doc = json.loads((shipped / "event_session_forked_v1.json").read_text())
    assert doc["$id"] == "event_session_forked_v1" and doc["additionalProperties"] is False


def test_a_fork_without_a_change_does_what_the_parent_did(workspace: Path,
                                                          run_request: RunRequest) -> None:
    """At every resume point, including a rework attempt: the state read back from the log
    is what the live run had (a wrong feedback, plan or report would change a request)."""
    parent = run_request(faults="reviewer_fail_once")
    points = fork_points(parent.events)
    assert [(p.stage, p.attempt) for p in points] == [
        ("LEAD", 1), ("PLAN", 1), ("WORK", 1), ("REVIEW", 1), ("WORK", 2), ("REVIEW", 2)]
    for p in points:
        # the same fault while the failing first review is still ahead; none after it
        faults = "reviewer_fail_once" if p.attempt == 1 else None
        _rt, events, result = _fork(workspace, parent.session_id, p.at, faults)
        assert not isinstance(result, Err), result
        d = diff_events(parent.events, events, (parent.session_id, events[0].session_id))
        changed = [(r.kind, r.step) for r in d.rows if r.kind != "same"]
        assert changed == [("only_b", ("system", "session.forked"))], (p, changed)


def test_a_fork_of_a_fork_reruns(workspace: Path, parent: Run) -> None:
    _, first, _ = _fork(workspace, parent.session_id, WORK, "hook_deny")
    later = next(p for p in fork_points(first) if p.at > WORK + 1)
    _rt, second, _ = _fork(workspace, first[0].session_id, later.at, "reviewer_fail")
    assert [e.type for e in second].count("session.forked") == 2
    again = rerun(Runtime.from_workspace(workspace), second[0].session_id)
    assert not isinstance(again, Err), again
    assert again.value.verified, again.value.verdict()


def _without(lines: list[bytes], i: int) -> list[bytes]:
    """The log with line `i` cut out, the later events renumbered (seq, id, parent_id) and the
    chain recomputed: what anyone can do to a keyless chain."""
    objs = [orjson.loads(line) for line in lines]
    sid, gone = objs[i]["session_id"], objs.pop(i)["id"]
    renamed = {}
    for o in objs[i:]:
        o["seq"] -= 1
        renamed[o["id"]], o["id"] = f"{sid}-e{o['seq']:04d}", f"{sid}-e{o['seq']:04d}"
    for o in objs[i:]:
        assert o.get("parent_id") != gone
        o["parent_id"] = renamed.get(o.get("parent_id"), o.get("parent_id"))
    return rechain([canonical(o) + b"\n" for o in objs], i)


def test_a_resume_point_whose_log_lacks_what_it_hands_on_is_refused(workspace: Path, parent: Run,
                                                                    cli: Cli) -> None:
    """A log with no lead.directive before its PLAN transition, re-chained so it verifies: the
    fork says what is missing, it never runs the planner on a directive of None."""
    lines = parent.log_path.read_bytes().splitlines(keepends=True)
    i = next(n for n, line in enumerate(lines) if b'"type":"lead.directive"' in line)
    parent.log_path.write_bytes(b"".join(_without(lines, i)))
    assert verify_log(parent.log_path).ok  # the chain alone cannot tell
    plan = next(p.at for p in fork_points(Runtime.from_workspace(workspace).events(parent.session_id))
                if p.stage == "PLAN")
    rt, _, result = _fork(workspace, parent.session_id, plan)
    assert isinstance(result, Err) and result.error.code == ErrorCode.CONFIG_INVALID, result
    assert "no lead.directive before its PLAN transition" in result.error.message
    code, _, err = cli("--workspace", workspace, "fork", f"{parent.session_id}@{plan}")
    assert code == 2 and "no lead.directive" in err and "Traceback" not in err
    assert rt.store.sessions() == [parent.session_id]  # nothing was made

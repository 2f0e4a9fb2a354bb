"""`agentos diff A B`: two logs aligned by step (role + event type), the first divergence
marked, per-role token and cost deltas; the engine is the one `rerun --verify` uses."""

from __future__ import annotations

import json
from pathlib import Path

from agentos_kernel import Runtime
from agentos_kernel.providers.faults import load_fault_plan
from agentos_kernel.runs.diff import diff_events
from agentos_kernel.runs.difftext import diff_logs
from agentos_kernel.runs.fork import fork
from agentos_kernel.runs.rerun import compare

from .helpers import Cli, Run, RunRequest


def _fork(workspace: Path, parent: str, at: int, faults: str) -> str:
    rt = Runtime.from_workspace(workspace, faults=load_fault_plan(faults))
    result = fork(rt, parent, at, faults=faults)
    return result.error.session_id if hasattr(result, "error") else result.value.session_id


def test_a_fork_and_its_parent_align_by_step(workspace: Path, canonical_run: Run) -> None:
    child = _fork(workspace, canonical_run.session_id, 14, "hook_deny")
    rt = Runtime.from_workspace(workspace)
    d = diff_logs(rt.store.path(canonical_run.session_id), rt.store.path(child))
    assert (d.a, d.b) == (canonical_run.session_id, child)
    # lockstep up to k, then the fork's session.forked is one row only in B
    assert [r.kind for r in d.rows[:14]] == ["same"] * 14
    assert d.first is not None and d.first.index == 15
    first = d.rows[d.first_row]
    assert first.kind == "only_b" and first.b.type == "session.forked"
    # the worker's llm.request after the fork is aligned with the parent's, and the same
    pair = d.rows[d.first_row + 1]
    assert (pair.kind, pair.a.seq, pair.b.seq, pair.step) == ("same", 15, 16, ("worker", "llm.request"))
    # the gate: a different handler at the same step is a changed row, not two others
    gate = next(r for r in d.rows if r.kind == "changed" and r.step == ("hook", "hook.fired"))
    assert gate.path == "actor" and gate.b.payload["decision"] == "deny"
    # ... at the same hook point only: a Stop and a PreToolUse are never one changed step
    hooks = [r for r in d.rows if r.kind == "changed" and r.a.type == "hook.fired"]
    assert hooks and all(r.a.payload["hook"] == r.b.payload["hook"] for r in hooks)
    # both passes end at Stop (the fork's escalated): one changed row, the fork's says not ok
    stop = next(r for r in d.rows if r.a is not None and r.a.payload.get("hook") == "Stop")
    assert stop.kind == "changed" and stop.a.actor == stop.b.actor == "hook:stop_after_one"
    assert stop.b.payload["reason"].startswith("loop reached terminal state (not ok: HUMAN_ESCALATION")
    assert any(r.kind == "only_a" and r.a.type == "tool.invoke" for r in d.rows)
    # every event of both logs is in exactly one row, in order
    assert [r.a.seq for r in d.rows if r.a] == list(range(1, len(canonical_run.events) + 1))
    assert [r.b.seq for r in d.rows if r.b] == list(range(1, len(rt.events(child)) + 1))


def test_per_role_token_and_cost_deltas(workspace: Path, canonical_run: Run) -> None:
    child = _fork(workspace, canonical_run.session_id, 25, "reviewer_fail")
    rt = Runtime.from_workspace(workspace)
    d = diff_logs(rt.store.path(canonical_run.session_id), rt.store.path(child))
    roles = {u.role: u for u in d.roles}
    assert list(roles) == ["lead", "planner", "worker", "reviewer"]
    assert roles["lead"].calls == (1, 1) and roles["lead"].token_delta == 0 == roles["lead"].cost_delta
    assert roles["reviewer"].calls[1] == rt.profile.max_rework + 1
    for role, u in roles.items():  # each side is the log's own sum
        for side, sid in enumerate((canonical_run.session_id, child)):
            got = [e.payload["usage"] for e in rt.events(sid)
                   if e.type == "llm.response" and e.payload["role"] == role]
            assert u.tokens[side] == sum(x["input_tokens"] + x["output_tokens"] for x in got)
            assert abs(u.cost_usd[side] - sum(x["cost_usd"] for x in got)) < 1e-9
    assert roles["worker"].cost_delta > 0 and roles["reviewer"].token_delta > 0


def test_rerun_verify_uses_the_same_engine(canonical_run: Run, run_request: RunRequest) -> None:
    other = run_request(faults="hook_deny")
    rename = (canonical_run.session_id, other.session_id)
    count, divergence = compare(canonical_run.events, other.events, rename)
    d = diff_events(canonical_run.events, other.events, rename)
    assert divergence == d.first and count == d.compared == d.first.index
    assert compare(canonical_run.events, canonical_run.events, (canonical_run.session_id,) * 2) == \
        (len(canonical_run.events), None)


def test_diff_cli(workspace: Path, canonical_run: Run, cli: Cli) -> None:
    child = _fork(workspace, canonical_run.session_id, 14, "hook_deny")
    code, out, err = cli("--workspace", workspace, "diff", canonical_run.session_id, child)
    assert code == 1 and err == ""
    lines = out.splitlines()
    assert lines[0] == (f"{canonical_run.session_id} and {child} diverge at event 15: "
                        f"{canonical_run.session_id} has llm.request (worker), "
                        f"{child} has session.forked (system)")
    marked = [x for x in lines if x.startswith(">")]
    assert marked == [next(x for x in lines if "session.forked" in x and x.startswith(">"))]
    assert marked[0].split()[:4] == [">", "+", "-", "15"]
    assert any(x.startswith("reviewer ") for x in lines) and lines[-1].startswith("total")
    code, out, _ = cli("--workspace", workspace, "diff", canonical_run.session_id, child, "--changes")
    table = out.split("\n\n")[1].splitlines()[2:]  # after the header and the legend
    assert code == 1 and table and {x[2] for x in table} <= {"~", "-", "+"}
    assert len(table) < len(lines)
    code, out, _ = cli("--workspace", workspace, "diff", canonical_run.session_id, child, "--json")
    doc = json.loads(out)
    assert doc["first_divergence"]["index"] == 15 and doc["identical"] is False
    assert {r["role"] for r in doc["roles"]} == {"lead", "planner", "worker", "reviewer"}
    code, out, _ = cli("--workspace", workspace, "diff", canonical_run.session_id,
                       str(canonical_run.log_path))
    assert code == 0 and out.startswith(f"{canonical_run.session_id} and {canonical_run.session_id} "
                                        "do the same thing")
    code, _, err = cli("--workspace", workspace, "diff", canonical_run.session_id, "nosuch")
    assert code == 2 and "no session 'nosuch'" in err


def test_diff_warns_on_a_log_that_does_not_verify(workspace: Path, canonical_run: Run,
                                                  run_request: RunRequest, cli: Cli) -> None:
    other = run_request()
    path = other.log_path
    path.write_text(path.read_text().replace("Hello, Ada!", "Hello, Bob!", 1))
    code, out, err = cli("--workspace", workspace, "diff", canonical_run.session_id, other.session_id)
    assert code == 1 and f"warning: {other.session_id} does not verify" in err
    code, out, err = cli("--workspace", workspace, "diff", canonical_run.session_id,
                         other.session_id, "--strict")
    assert code == 1 and out == ""

"""Seven features the suite once let anyone delete unnoticed (issue 13), each pinned by the
behaviour the spec or DESIGN names. Each test here was seen to fail with its feature
commented out (docs/reliability.md lists them).

1. the runtime's SELF_REVIEW check (pwr.py), not only the profile loader's;
2. context compaction past `compact_after` (session.py), behind the PreCompact gate;
3. `Runtime.guarded` closing the session on a crash or Ctrl-C;
4. SkillStart may narrow a skill's tool scope, never widen it (kernel._narrowing);
5. the role LOOP_BOUND: a model asking for tools turn after turn is stopped (roles.py);
6. `Runtime.amend` continuing the logical clock after the log's last event;
7. the API key named by the profile redacted from the log (SessionLog secrets).
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from agentos_kernel import ErrorCode, HookDecision, HookHandler, Runtime
from agentos_kernel.store.events import read_log

from .fault_kit import LoopingWorker, Raising, add_profile, assert_closed_not_ok, use_provider
from .helpers import CANONICAL, Run, finish

NO_SKILL = "tell me the time"
"""A prompt no skill's trigger matches: the worker's output repeats the request."""


def _run(rt: Runtime, prompt: str = CANONICAL) -> Run:
    return finish(rt, rt.handle_user_request(prompt))


# -- 1. SELF_REVIEW at run time ------------------------------------------------------------------


def test_the_runtime_refuses_a_reviewer_that_is_the_worker(runtime: Runtime) -> None:
    # agentos.yaml cannot say this (the loader refuses it); a profile built in code can.
    runtime.profile = replace(runtime.profile, agents={"reviewer": "worker"})
    run = _run(runtime)
    assert run.code == ErrorCode.SELF_REVIEW
    assert run.error_codes() == [ErrorCode.SELF_REVIEW]
    assert not [e for e in run.of("llm.request") if e.payload["role"] == "reviewer"]
    assert [e.payload["to"] for e in run.of("agent.transition")][-1] == "FAILED"
    assert_closed_not_ok(run, "SELF_REVIEW")


# -- 2. context compaction -----------------------------------------------------------------------


def _worker_requests(provider: LoopingWorker) -> list[list[dict[str, str]]]:
    return [list(r.messages) for r in provider.requests
            if r.tools and "worker_report_v1" in r.messages[0]["content"]]


def test_a_long_worker_conversation_is_compacted_past_compact_after(workspace: Path) -> None:
    add_profile(workspace, "short", compact_after=6)
    provider = LoopingWorker(loops=6)
    run = _run(use_provider(Runtime.from_workspace(workspace, profile="short"), provider))
    assert run.ok, run.result
    sizes = [len(m) for m in _worker_requests(provider)]
    assert sizes[:3] == [2, 4, 6] and max(sizes) <= 6, sizes  # without compaction: 2, 4, ... 14
    compacted = run.of("context.compacted")
    assert compacted and all(e.payload["dropped"] > 0 for e in compacted)
    # each compaction was allowed by PreCompact first (the gate comes before the drop)
    for e in compacted:
        before = run.events[run.events.index(e) - 1]
        assert before.type == "hook.fired" and before.payload["hook"] == "PreCompact"
    for messages in _worker_requests(provider):
        assert [m["role"] for m in messages[:2]] == ["system", "user"]  # the task is kept
        # a tool result is never kept without the assistant turn that asked for it
        # (the chat APIs refuse a tool message whose call is missing)
        for i, m in enumerate(messages):
            if m["role"] == "tool":
                assert messages[i - 1]["role"] in ("assistant", "tool"), [x["role"] for x in messages]


def test_a_pre_compact_deny_keeps_the_whole_conversation(workspace: Path) -> None:
    add_profile(workspace, "short", compact_after=6)
    rt = Runtime.from_workspace(workspace, profile="short")
    rt.hooks.register("PreCompact", HookHandler("keep-all", lambda i: HookDecision(
        "deny", "this conversation must stay whole")))
    provider = LoopingWorker(loops=6)
    run = _run(use_provider(rt, provider))
    assert run.ok and not run.of("context.compacted")
    assert [len(m) for m in _worker_requests(provider)] == [2, 4, 6, 8, 10, 12, 14]
    assert {h["decision"] for h in run.hooks("PreCompact")} == {"deny"}


# -- 3. guarded: a crash or Ctrl-C still closes the session --------------------------------------


def _crashed(runtime: Runtime) -> Run:
    (sid,) = runtime.store.sessions()
    return Run(runtime, None, sid, list(read_log(runtime.store.path(sid))))


def test_ctrl_c_inside_a_model_call_closes_the_session(runtime: Runtime) -> None:
    use_provider(runtime, Raising(KeyboardInterrupt()))
    with pytest.raises(KeyboardInterrupt):
        runtime.handle_user_request(CANONICAL)
    run = _crashed(runtime)
    assert run.types()[-3:] == ["llm.request", "llm.error", "session.close"]
    assert run.of("llm.error")[0].payload["code"] == ErrorCode.INTERRUPTED
    assert_closed_not_ok(run, "interrupted (Ctrl-C)")
    runtime.provider_factory = None  # the log was released: the next session runs cleanly
    assert _run(runtime).ok


def test_a_crash_inside_a_run_closes_the_session_with_the_reason(
        runtime: Runtime, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken_pwr(session: Any, prompt: str, **kw: Any) -> Any:
        session.log.append("agent.transition", "lead",
                           {"from": "INTAKE", "to": "LEAD", "role": "lead", "attempt": 1})
        raise RuntimeError("a bug in the runtime")

    monkeypatch.setattr("agentos_kernel.roles.flow.run_pwr", broken_pwr)
    with pytest.raises(RuntimeError, match="a bug in the runtime"):
        runtime.handle_user_request(CANONICAL)
    run = _crashed(runtime)
    assert run.types()[-2:] == ["agent.transition", "session.close"]
    assert_closed_not_ok(run, "invariant violation: RuntimeError: a bug in the runtime")


# -- 4. SkillStart narrows, never widens ----------------------------------------------------------


def _scope(tools: list[str]) -> Any:
    return lambda i: HookDecision("transform", "scope set by policy", {"allowed_tools": tools})


def test_skill_start_may_narrow_the_tool_scope(runtime: Runtime) -> None:
    runtime.hooks.register("SkillStart", HookHandler("narrow", _scope([])))
    run = _run(runtime)
    assert run.ok
    assert run.of("skill.invoke")[0].payload["allowed_tools"] == []
    assert run.invoked() == []


def test_skill_start_may_not_widen_the_tool_scope(runtime: Runtime) -> None:
    runtime.hooks.register("SkillStart", HookHandler("widen", _scope(["echo", "write_file"])))
    run = _run(runtime)
    assert run.code == ErrorCode.GATE_DENIED
    assert run.error_codes() == [ErrorCode.TOOL_NOT_ALLOWED, ErrorCode.GATE_DENIED]
    assert "widen" in run.of("domain.error")[0].payload["message"]
    assert [h["decision"] for h in run.hooks("SkillStart")] == ["transform", "deny"]
    assert not run.of("skill.invoke") and run.invoked() == []
    assert_closed_not_ok(run, "GATE_DENIED")


# -- 5. the role LOOP_BOUND ------------------------------------------------------------------------


def test_a_worker_that_keeps_asking_for_tools_hits_the_loop_bound(runtime: Runtime) -> None:
    provider = LoopingWorker(loops=40)  # without the bound the run would end ok after 40 turns
    run = _run(use_provider(runtime, provider))
    assert run.code == ErrorCode.LOOP_BOUND
    turns = runtime.profile.max_tool_turns
    assert len(_worker_requests(provider)) == turns + 1
    assert len(run.invoked()) == turns + 1
    assert "max_tool_turns" in run.of("domain.error")[-1].payload["message"]
    assert_closed_not_ok(run, "LOOP_BOUND")


def test_the_loop_bound_follows_the_profile(workspace: Path) -> None:
    add_profile(workspace, "tight", max_tool_turns=2)
    provider = LoopingWorker(loops=40)
    run = _run(use_provider(Runtime.from_workspace(workspace, profile="tight"), provider))
    assert run.code == ErrorCode.LOOP_BOUND and len(_worker_requests(provider)) == 3


# -- 6. amend continues the logical clock ------------------------------------------------------------


def _ts(s: str) -> datetime:
    return datetime.fromisoformat(s.replace("Z", "+00:00"))


def test_an_amendment_is_stamped_after_the_last_event(canonical_run: Run, workspace: Path) -> None:
    rt = Runtime.from_workspace(workspace)
    report = canonical_run.of("worker.report")[0]
    first = rt.amend(canonical_run.session_id, report.id, "output", "Hello, Ada L.!", "full name")
    second = rt.amend(canonical_run.session_id, report.id, "output", "Hello, Ada!", "undo")
    events = list(read_log(canonical_run.log_path))
    stamps = [_ts(e.ts) for e in events]
    assert stamps == sorted(stamps) and len(set(stamps)) == len(stamps), "log time went back"
    last = _ts(canonical_run.events[-1].ts)
    assert (_ts(first.ts) - last).total_seconds() == 0.001  # the logical clock's next tick
    assert (_ts(second.ts) - _ts(first.ts)).total_seconds() == 0.001


# -- 7. the API key from the profile's env var never reaches the log ---------------------------------

CANARY = "canary-4c1f9e2d7b3a5860"
"""Matches none of the generic secret patterns: only the profile's api_key_env finds it."""


def test_the_profiles_api_key_is_redacted_from_the_log(workspace: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENTOS_PIN_KEY", CANARY)
    add_profile(workspace, "keyed", api_key_env="AGENTOS_PIN_KEY")
    rt = Runtime.from_workspace(workspace, profile="keyed")
    run = _run(rt, f"{NO_SKILL}; my key is {CANARY}")
    assert run.ok
    data = run.log_path.read_bytes()
    assert CANARY.encode() not in data
    assert b"[REDACTED-SECRET]" in data  # it was there to redact: in the prompt and the output

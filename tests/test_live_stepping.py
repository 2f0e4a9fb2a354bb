"""Live stepping (issue 11): a real request paused just before each event is appended, a
layer filter, and a HumanHook whose allow / deny / edit is logged with actor `human` and
whose silence is a deny (fail-closed)."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentos_kernel import Runtime
from agentos_kernel.errors import Err, ErrorCode
from agentos_kernel.hooks.human import HumanHook
from agentos_kernel.runs.live import LiveRun
from agentos_kernel.store.events import read_log
from agentos_kernel.store.integrity import verify_log

from .helpers import CANONICAL


def _on_disk(rt: Runtime, sid: str) -> int:
    path = rt.store.path(sid)
    return sum(1 for _ in read_log(path)) if path.is_file() else 0


def test_each_event_waits_for_its_step_and_the_log_is_the_one_stepped(runtime: Runtime) -> None:
    live = LiveRun(runtime, CANONICAL)
    pause = live.start()
    stepped = []
    while not pause.done:
        ev = pause.event
        assert ev is not None and pause.question is None
        # Paused before the append: the log holds exactly the events before this one.
        assert _on_disk(runtime, ev.session_id) == ev.seq - 1
        stepped.append(ev)
        pause = live.step()
    assert live.result.value.output == "Hello, Ada!"
    logged = runtime.events(live.session)
    assert logged == stepped and len(logged) == 32
    assert verify_log(runtime.store.path(live.session)).ok
    assert runtime.gates == []  # the gate is gone with the run


def test_a_layer_filter_pauses_only_at_those_layers(runtime: Runtime) -> None:
    live = LiveRun(runtime, CANONICAL, layers={"L1"})
    pauses = [live.start()]
    while not pauses[-1].done:
        pauses.append(live.step())
    assert [p.event.type for p in pauses if p.event] == ["tool.invoke", "tool.result"]
    assert live.result.value.output == "Hello, Ada!"


def test_close_lets_a_paused_run_finish_without_pausing(runtime: Runtime) -> None:
    live = LiveRun(runtime, CANONICAL)
    assert live.start().event.type == "session.start"
    end = live.close()
    assert end.done and live.result.value.output == "Hello, Ada!"


def _human(runtime: Runtime, timeout_s: float = 30.0) -> HumanHook:
    human = HumanHook("PreToolUse", timeout_s=timeout_s)
    runtime.hooks.register("PreToolUse", human.handler())
    return human


def test_a_deny_clicked_by_a_person_is_logged_with_actor_human(runtime: Runtime) -> None:
    human = _human(runtime)
    live = LiveRun(runtime, CANONICAL, layers={"L1"}, human=human)
    pause = live.start()
    assert pause.question is not None and pause.event is None  # asked before any tool runs
    assert pause.question.data == {"tool": "echo", "args": {"text": "Hello, Ada!"}}
    human.deny("not in class today")
    while not pause.done:
        if pause.question is not None:
            human.deny("not in class today")
        pause = live.step()
    assert isinstance(live.result, Err)
    events = runtime.events(live.session)
    mine = [e for e in events if e.type == "hook.fired" and e.actor == "human"]
    assert mine and mine[0].payload["decision"] == "deny"
    assert mine[0].payload["reason"] == "not in class today"
    first = next(e for e in events if e.type == "domain.error")
    assert first.payload["code"] == ErrorCode.GATE_DENIED and "not in class today" in first.payload["message"]
    assert not any(e.type == "tool.invoke" for e in events)
    assert verify_log(runtime.store.path(live.session)).ok


def test_no_answer_within_the_timeout_is_a_deny(runtime: Runtime) -> None:
    _human(runtime, timeout_s=0.2)
    result = runtime.handle_user_request(CANONICAL)  # nobody is there to answer
    events = runtime.events(result.error.session_id)
    mine = [e.payload for e in events if e.type == "hook.fired" and e.actor == "human"]
    assert mine and all(p["decision"] == "deny" for p in mine)
    assert mine[0]["reason"] == "no human answer within 0.2s (fail-closed)"
    assert not any(e.type == "tool.invoke" for e in events)


def test_edited_args_reach_the_tool_and_bad_ones_are_refused(runtime: Runtime, workspace: Path) -> None:
    human = _human(runtime)
    human.on_question = lambda q: human.edit({"text": "Hello, Grace!"})
    ok = runtime.handle_user_request(CANONICAL)
    events = runtime.events(ok.value.session_id)
    (invoke,) = [e for e in events if e.type == "tool.invoke"]
    assert invoke.payload["args"] == {"text": "Hello, Grace!"}
    edit = next(e for e in events if e.actor == "human")
    assert edit.payload["decision"] == "transform"
    assert edit.payload["output"] == {"args": {"text": "Hello, Grace!"}}

    human.on_question = lambda q: human.edit({"text": 42})  # breaks echo's input schema
    bad = runtime.handle_user_request(CANONICAL)
    events = runtime.events(bad.error.session_id)
    assert any(e.type == "schema.violation" for e in events)
    assert not any(e.type == "tool.invoke" for e in events)


def test_an_answer_with_nothing_pending_is_an_error() -> None:
    with pytest.raises(RuntimeError, match="no PreToolUse decision is pending"):
        HumanHook().allow()
    with pytest.raises(ValueError, match="timeout_s must be positive"):
        HumanHook(timeout_s=0)


def test_a_gate_that_raises_leaves_the_log_whole(runtime: Runtime) -> None:
    def gate(ev: object) -> None:
        if getattr(ev, "type", None) == "plan.created":
            raise RuntimeError("stepper crashed")

    with runtime.watching(gate, before=True), pytest.raises(RuntimeError, match="stepper crashed"):
        runtime.handle_user_request(CANONICAL)
    (sid,) = runtime.store.sessions()
    events = runtime.events(sid)
    assert [e.seq for e in events] == list(range(1, len(events) + 1))  # no seq skipped
    assert events[-1].type == "session.close" and not events[-1].payload["ok"]
    assert not any(e.type == "plan.created" for e in events)
    assert verify_log(runtime.store.path(sid)).ok

"""Bounded hook handlers run on the calling thread (no hand-off to a worker); every other
handler is still handed to a worker and abandoned at its timeout. Guards count hand-offs,
never time (issue 12)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from agentos_kernel import HookBus, HookDecision, HookHandler, Runtime
from agentos_kernel.hooks import builtin
from agentos_kernel.hooks.runner import HANDOFFS, bounded, is_bounded
from agentos_kernel.store.recorder import SessionLog

from .helpers import RunRequest


@pytest.fixture
def log(runtime: Runtime) -> Iterator[SessionLog]:
    session = runtime.open_session("inline")
    yield session.log
    session.log.close()


def test_the_canonical_request_hands_no_hook_handler_to_a_thread(run_request: RunRequest) -> None:
    before = HANDOFFS[0]
    run = run_request()
    handlers = [e.payload["handler"] for e in run.of("hook.fired") if e.payload["handler"] != "(none)"]
    assert handlers == ["redact_pii", "deny_dangerous_tools", "pre_tool_use_default", "stop_after_one"]
    assert HANDOFFS[0] - before == 0


def test_a_users_handler_is_still_handed_to_a_worker(log: SessionLog) -> None:
    bus = HookBus()
    bus.register("PreToolUse", HookHandler("mine", lambda i: HookDecision("allow")))
    before = HANDOFFS[0]
    decision, _ = bus.fire("PreToolUse", {"tool": "echo"}, log)
    assert decision.decision == "allow" and HANDOFFS[0] - before == 1
    assert not is_bounded(builtin.sleep_forever)


def test_only_the_runtimes_own_functions_can_be_marked_bounded() -> None:
    def mine(input: Any) -> HookDecision:
        return HookDecision("allow")

    with pytest.raises(ValueError, match="only the runtime's own handlers"):
        bounded(mine)
    assert not is_bounded(mine)


def test_a_bounded_handler_past_its_timeout_is_still_a_deny(runtime: Runtime, log: SessionLog) -> None:
    bus = HookBus()
    bus.register("PreToolUse", HookHandler("late", builtin.pre_tool_use_default, timeout_s=1e-12))
    decision, _ = bus.fire("PreToolUse", {"tool": "echo"}, log)
    assert decision.decision == "deny" and "timed out" in decision.reason
    fired = [e.payload for e in runtime.events("inline") if e.type == "hook.fired"]
    assert fired[0]["cause"] == "timeout"

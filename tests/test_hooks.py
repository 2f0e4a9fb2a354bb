"""L6 hooks are gates: priority order, deny stops the chain, transforms chain and are checked
against the next boundary's schema, handlers cannot mutate what they are given, a throw or
a timeout is a deny, and the caller (the bus) records every decision."""

from __future__ import annotations

import contextlib
import json
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from agentos_kernel import ErrorCode, HookBus, HookDecision, HookHandler, Runtime
from agentos_kernel.hooks import builtin
from agentos_kernel.hooks.loader import handler_from_entry
from agentos_kernel.store.recorder import SessionLog

from .helpers import CANONICAL, Run, RunRequest


@pytest.fixture
def log(runtime: Runtime) -> Iterator[SessionLog]:
    session = runtime.open_session("hooks")
    yield session.log
    session.log.close()


def fired(runtime: Runtime) -> list[dict[str, Any]]:
    return [e.payload for e in runtime.events("hooks") if e.type == "hook.fired"]


Handler = Callable[[Any], Any]


def recorder(calls: list[str], name: str, decision: HookDecision | None = None) -> Handler:
    """A handler that notes it ran and returns `decision` (allow by default)."""
    def fn(input: Any) -> Any:
        calls.append(name)
        return decision if decision is not None else HookDecision("allow")
    return fn


def prompt_check(log: SessionLog) -> Callable[[dict[str, Any]], Any]:
    """The UserPromptSubmit boundary check the kernel uses (hook_prompt_v1)."""
    return lambda d: log.check({"prompt": d["prompt"]}, "hook_prompt_v1", where="test transform",
                               actor="hook")


def test_handlers_run_in_priority_order_and_each_decision_is_recorded(runtime: Runtime,
                                                                      log: SessionLog) -> None:
    calls: list[str] = []
    bus = HookBus()
    for name, prio in (("low", 1), ("high", 100), ("mid-b", 50), ("mid-a", 50)):
        bus.register("PreToolUse", HookHandler(name, recorder(calls, name), priority=prio))
    decision, data = bus.fire("PreToolUse", {"tool": "echo", "args": {}}, log)
    assert decision.decision == "allow" and data == {"tool": "echo", "args": {}}
    assert calls == ["high", "mid-a", "mid-b", "low"]
    assert [h.id for h in bus.registered("PreToolUse")] == calls
    assert [(p["hook"], p["handler"], p["decision"]) for p in fired(runtime)] == [
        ("PreToolUse", name, "allow") for name in calls]


def test_deny_stops_the_chain(runtime: Runtime, log: SessionLog) -> None:
    calls: list[str] = []
    bus = HookBus()
    bus.register("Stop", HookHandler("first", recorder(calls, "first"), priority=9))
    bus.register("Stop", HookHandler("gate", recorder(calls, "gate", HookDecision("deny", "no")),
                                     priority=5))
    bus.register("Stop", HookHandler("never", recorder(calls, "never"), priority=1))
    decision, _ = bus.fire("Stop", {"ok": True}, log)
    assert decision == HookDecision("deny", "no")
    assert calls == ["first", "gate"]
    assert [p["handler"] for p in fired(runtime)] == ["first", "gate"]


def test_no_handler_is_recorded_as_allow(runtime: Runtime, log: SessionLog) -> None:
    decision, _ = HookBus().fire("PreCompact", {"messages": 3}, log)
    assert decision.decision == "allow"
    assert fired(runtime) == [{"hook": "PreCompact", "handler": "(none)", "decision": "allow",
                               "ms": 0.0, "reason": "no handler registered"}]


def test_transforms_chain_each_handler_sees_the_previous_output(runtime: Runtime,
                                                                log: SessionLog) -> None:
    seen: list[str] = []

    def add(word: str) -> Handler:
        def fn(input: Any) -> HookDecision:
            seen.append(input["prompt"])
            return HookDecision("transform", output={"prompt": f"{input['prompt']} {word}"})
        return fn

    bus = HookBus()
    bus.register("UserPromptSubmit", HookHandler("one", add("one"), priority=2))
    bus.register("UserPromptSubmit", HookHandler("two", add("two"), priority=1))
    decision, data = bus.fire("UserPromptSubmit", {"prompt": "start"}, log, validate=prompt_check(log))
    assert seen == ["start", "start one"]
    assert decision.decision == "transform" and data == {"prompt": "start one two"}
    assert [p["output"] for p in fired(runtime)] == [{"prompt": "start one"}, {"prompt": "start one two"}]


def test_a_transform_failing_the_next_boundary_schema_is_a_deny(runtime: Runtime,
                                                                log: SessionLog) -> None:
    calls: list[str] = []
    bus = HookBus()
    bus.register("UserPromptSubmit", HookHandler(
        "bad", lambda i: HookDecision("transform", output={"prompt": 42}), priority=2))
    bus.register("UserPromptSubmit", HookHandler("after", recorder(calls, "after"), priority=1))
    decision, data = bus.fire("UserPromptSubmit", {"prompt": "hi"}, log, validate=prompt_check(log))
    assert decision.decision == "deny" and "transform rejected" in decision.reason
    assert data == {"prompt": "hi"} and calls == []
    events = [e for e in runtime.events("hooks")]
    assert [e.type for e in events] == ["hook.fired", "schema.violation", "hook.fired"]
    assert events[0].payload["decision"] == "transform"
    assert events[1].payload["schema_id"] == "hook_prompt_v1"
    assert (events[2].payload["decision"], events[2].payload["cause"]) == ("deny", "invalid")


def test_a_transform_where_none_is_allowed_is_a_deny(log: SessionLog) -> None:
    bus = HookBus()
    bus.register("Stop", HookHandler("t", lambda i: HookDecision("transform", output={"ok": False})))
    decision, data = bus.fire("Stop", {"ok": True}, log)
    assert decision.decision == "deny" and data == {"ok": True}


def test_a_transform_output_failing_the_schema_ends_the_run_fail_closed(workspace: Path,
                                                                        run_request: RunRequest) -> None:
    script = _script(workspace, "bad_rewrite.py",
                     'print(json.dumps({"decision": "transform", "output": {"prompt": ["not", "text"]}}))')
    _add_hook(workspace, "UserPromptSubmit", script)
    run = run_request()
    assert run.code == ErrorCode.PROMPT_DENIED
    assert "hook_prompt_v1" in [e.payload["schema_id"] for e in run.of("schema.violation")]
    assert not run.of("llm.request")


@pytest.mark.parametrize("mutate", [
    lambda i: i.__setitem__("prompt", "changed"),
    lambda i: i["args"]["items"].append("x"),
    lambda i: i["args"].update(extra=1),
    lambda i: i.pop("prompt"),
])
def test_handlers_get_read_only_input(runtime: Runtime, log: SessionLog,
                                      mutate: Callable[[Any], object]) -> None:
    def handler(input: Any) -> HookDecision:
        mutate(input)
        return HookDecision("allow")

    data = {"prompt": "original", "args": {"items": ["a"], "n": 1}}
    bus = HookBus()
    bus.register("PreToolUse", HookHandler("mutator", handler))
    decision, out = bus.fire("PreToolUse", data, log)
    assert decision.decision == "deny"
    assert fired(runtime)[0]["cause"] == "exception"
    assert data == {"prompt": "original", "args": {"items": ["a"], "n": 1}}
    assert out == data


def test_a_swallowed_mutation_attempt_still_changes_nothing(log: SessionLog) -> None:
    def sneaky(input: Any) -> HookDecision:
        with contextlib.suppress(TypeError):
            input["args"]["n"] = 2
        return HookDecision("allow")

    data = {"args": {"n": 1}}
    bus = HookBus()
    bus.register("PreToolUse", HookHandler("sneaky", sneaky))
    assert bus.fire("PreToolUse", data, log) == (HookDecision("allow"), {"args": {"n": 1}})


@pytest.mark.parametrize("returned", [
    None, "allow", {"decision": "maybe"}, {"decision": "deny"}, {"decision": "deny", "reason": ""},
    {"decision": "transform"}, {"decision": "transform", "output": "text"},
    {"decision": "allow", "extra": 1}, HookDecision("deny"),
])
def test_an_invalid_decision_is_a_deny(runtime: Runtime, log: SessionLog, returned: Any) -> None:
    bus = HookBus()
    bus.register("Stop", HookHandler("odd", lambda i: returned))
    decision, _ = bus.fire("Stop", {"ok": True}, log, validate=lambda d: d)
    assert decision.decision == "deny" and decision.reason.startswith("invalid decision")
    assert fired(runtime)[0]["cause"] == "invalid"


def test_a_raising_handler_is_a_deny_with_cause_exception(runtime: Runtime, log: SessionLog) -> None:
    bus = HookBus()
    bus.register("PreToolUse", HookHandler("boom", builtin.raise_error))
    decision, _ = bus.fire("PreToolUse", {"tool": "echo"}, log)
    assert decision.decision == "deny" and "RuntimeError" in decision.reason
    assert fired(runtime)[0]["cause"] == "exception"


def test_a_handler_past_its_timeout_is_a_deny_and_is_not_waited_for(runtime: Runtime,
                                                                    log: SessionLog) -> None:
    release = threading.Event()
    bus = HookBus()
    bus.register("PreToolUse", HookHandler("stuck", lambda i: release.wait() and None, timeout_s=0.05))
    try:
        decision, _ = bus.fire("PreToolUse", {"tool": "echo"}, log)
        still_running = [t for t in threading.enumerate() if t.name == "agentos-hook" and t.is_alive()]
    finally:
        release.set()
    assert decision.decision == "deny" and "timed out" in decision.reason
    assert fired(runtime)[0]["cause"] == "timeout"
    assert still_running, "the bus returned while the handler was still blocked"


def test_register_refuses_an_unknown_hook_event() -> None:
    with pytest.raises(KeyError, match="'PreToolUze'"):
        HookBus().register("PreToolUze", HookHandler("x", builtin.pre_tool_use_default))


def test_spec_example_handlers() -> None:
    made = [builtin.make_pre_tool_use_handler(), builtin.make_deny_dangerous_tools_handler(),
            builtin.make_stop_handler(), builtin.make_user_prompt_submit_handler()]
    assert [(h.id, h.priority) for h in made] == [
        ("pre_tool_use_default", 10), ("deny_dangerous_tools", 100), ("stop_after_one", 10),
        ("redact_pii", 80)]
    assert builtin.deny_dangerous_tools({"tool": "rm"}).decision == "deny"
    assert builtin.deny_dangerous_tools({"tool": "echo"}).decision == "allow"
    assert builtin.redact_pii({"prompt": "no digits"}).decision == "allow"
    assert builtin.redact_pii({"prompt": "1234567812345678"}).output == {"prompt": "[REDACTED-CC]"}
    assert builtin.redact_pii({"prompt": "12345678123456789"}).decision == "allow"  # 17 digits


# -- Stop hook: deny ends the loop, allow continues -----------------------------------------------


def test_stop_allow_continues_the_loop_up_to_max_iterations(workspace: Path,
                                                            run_request: RunRequest) -> None:
    cfg = workspace / "agentos.yaml"
    cfg.write_text("\n".join(line for line in cfg.read_text().splitlines()
                             if "stop_after_one" not in line) + "\n")
    run = run_request()
    assert run.ok
    passes = [e for e in run.of("agent.transition") if e.payload["to"] == "LEAD"]
    assert len(passes) == run.rt.profile.max_iterations == 3
    assert [h["decision"] for h in run.hooks("Stop")] == ["allow"] * 3
    assert run.events[-1].payload["reason"] == "stopped at max_iterations (3)"


def test_stop_deny_ends_after_one_pass(canonical_run: Run) -> None:
    assert [h["decision"] for h in canonical_run.hooks("Stop")] == ["deny"]
    assert [e.payload["to"] for e in canonical_run.of("agent.transition")].count("LEAD") == 1


# -- command hooks: a process reads the input as JSON on stdin and prints a decision ------------


def _script(root: Path, name: str, body: str) -> Path:
    path = root / "hooks" / name
    path.parent.mkdir(exist_ok=True)
    path.write_text("import json, sys\nreq = json.load(sys.stdin)\n" + body + "\n")
    return path


def _add_hook(workspace: Path, event: str, script: Path, priority: int = 1000) -> None:
    entry = {"event": event, "command": [sys.executable, str(script)], "timeout_s": 30,
             "priority": priority}
    cfg = workspace / "agentos.yaml"
    cfg.write_text(cfg.read_text().replace("hooks:\n", f"hooks:\n  - {json.dumps(entry)}\n", 1))


def test_command_hook_reads_stdin_json_and_its_decision_counts(runtime: Runtime, log: SessionLog,
                                                               tmp_path: Path) -> None:
    script = _script(tmp_path, "gate.py", (
        'json.dump(req, open(sys.argv[1], "w"))\n'
        'tool = req["input"]["tool"]\n'
        'print(json.dumps({"decision": "deny", "reason": f"{tool} blocked"} if tool == "echo"'
        ' else {"decision": "allow"}))'))
    seen = tmp_path / "seen.json"
    handler = handler_from_entry({"event": "PreToolUse", "command": [sys.executable, str(script),
                                                                      str(seen)], "timeout_s": 30},
                                 tmp_path)
    bus = HookBus()
    bus.register("PreToolUse", handler)
    decision, _ = bus.fire("PreToolUse", {"tool": "echo", "args": {"text": "hi"}}, log)
    assert decision == HookDecision("deny", "echo blocked")
    assert json.loads(seen.read_text()) == {"hook": "PreToolUse",
                                            "input": {"tool": "echo", "args": {"text": "hi"}}}
    decision, _ = bus.fire("PreToolUse", {"tool": "list_dir", "args": {}}, log)
    assert decision.decision == "allow"


@pytest.mark.parametrize("body, why", [
    ('sys.exit(3)', "exited 3"),
    ('print("not json")', "no JSON decision"),
    ('sys.stderr.write("broken\\n"); sys.exit(1)', "broken"),
])
def test_command_hook_failure_is_a_deny(runtime: Runtime, log: SessionLog, tmp_path: Path, body: str,
                                        why: str) -> None:
    script = _script(tmp_path, "bad.py", body)
    bus = HookBus()
    bus.register("PreToolUse", handler_from_entry(
        {"event": "PreToolUse", "command": [sys.executable, str(script)], "timeout_s": 30}, tmp_path))
    decision, _ = bus.fire("PreToolUse", {"tool": "echo"}, log)
    assert decision.decision == "deny" and why in decision.reason
    assert fired(runtime)[0]["cause"] == "exception"


def test_command_hook_from_agentos_yaml_gates_a_run(workspace: Path, run_request: RunRequest) -> None:
    script = _script(workspace, "check.py",
                     'print(json.dumps({"decision": "deny", "reason": "echo is closed today"}))')
    _add_hook(workspace, "PreToolUse", script)
    run = run_request(CANONICAL)
    denies = [h for h in run.hooks("PreToolUse") if h["decision"] == "deny"]
    assert denies and denies[0]["reason"] == "echo is closed today"
    assert ErrorCode.GATE_DENIED in run.error_codes()
    assert "echo" not in run.invoked()

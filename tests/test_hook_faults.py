"""L6 under faults (issue 13): whatever a hook does wrong, the gate is a deny, recorded in
`hook.fired` with its `cause`, decided within the hook's timeout (+ 100 ms, checked here
with a margin for a loaded CI machine); and a command hook that hangs, floods its output
or leaves a child behind is killed with its whole process group, leaving no process.

The spec: "hook handler가 throw하거나 timeout이면 기본 decision은 deny다" (I-3)."""

from __future__ import annotations

import json
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from agentos_kernel import ErrorCode, HookBus, HookDecision, HookHandler, Runtime
from agentos_kernel.hooks.bus import MAX_REASON
from agentos_kernel.hooks.command_hooks import MAX_STDOUT
from agentos_kernel.hooks.loader import handler_from_entry
from agentos_kernel.store.recorder import SessionLog

from .fault_kit import add_profile, assert_closed_not_ok, process_gone
from .helpers import CANONICAL, RunRequest, finish

BOUND_S = 0.1
"""The issue's bound: a decision within timeout + 100 ms."""
SLACK_S = 0.4
"""Added to the bound in these tests only: CI runs the suite on 2 busy cores."""

INPUT = {"tool": "echo", "args": {"text": "hi", "tags": ["a"]}}


@pytest.fixture
def log(runtime: Runtime) -> Iterator[SessionLog]:
    session = runtime.open_session("faults")
    yield session.log
    session.log.close()


def fire(runtime: Runtime, log: SessionLog, handler: HookHandler,
         data: dict[str, Any] | None = None) -> tuple[HookDecision, dict[str, Any], float]:
    """Run one handler on PreToolUse; the decision, the hook.fired payload, seconds taken."""
    bus = HookBus()
    bus.register("PreToolUse", handler)
    start = time.monotonic()
    decision, _ = bus.fire("PreToolUse", dict(data or INPUT), log)
    took = time.monotonic() - start
    fired = [e.payload for e in runtime.events("faults") if e.type == "hook.fired"]
    return decision, fired[-1], took


def assert_denied(decision: HookDecision, fired: dict[str, Any], cause: str, why: str) -> None:
    assert decision.decision == "deny", decision
    assert fired["decision"] == "deny" and fired["cause"] == cause, fired
    assert why in fired["reason"] and fired["reason"] == decision.reason


# -- in-process handlers --------------------------------------------------------------------------


class HostileMapping(Mapping):  # type: ignore[type-arg]
    """Looks like a decision, fails when read."""

    def __getitem__(self, key: str) -> Any:
        raise RuntimeError("read me if you can")

    def __iter__(self) -> Iterator[str]:
        raise RuntimeError("read me if you can")

    def __len__(self) -> int:
        return 1


def _cycle() -> dict[str, Any]:
    d: dict[str, Any] = {"decision": "allow"}
    d["self"] = d
    return d


GARBAGE: dict[str, Any] = {
    "None": None, "int": 42, "str": "allow", "bytes": b'{"decision": "allow"}', "list": ["allow"],
    "object": object(), "unknown decision": {"decision": "maybe"},
    "upper-case decision": {"decision": "ALLOW"}, "deny without reason": {"decision": "deny"},
    "extra field": {"decision": "allow", "because": "x"},
    "reason not a string": {"decision": "allow", "reason": 5},
    "non-string key": {1: "allow"}, "a cycle": _cycle(), "hostile mapping": HostileMapping(),
    "set in output": {"decision": "transform", "output": {"args": {1, 2}}},
    "object in output": HookDecision("transform", output={"args": object()}),
    "NaN in output": {"decision": "transform", "output": {"args": {"n": float("nan")}}},
}


@pytest.mark.parametrize("returned", GARBAGE.values(), ids=GARBAGE.keys())
def test_a_handler_returning_garbage_is_denied_as_invalid(runtime: Runtime, log: SessionLog,
                                                          returned: Any) -> None:
    decision, fired, took = fire(runtime, log, HookHandler("garbage", lambda i: returned))
    assert_denied(decision, fired, "invalid", "invalid decision")
    assert took < 2.0 + BOUND_S


class Unprintable(Exception):
    def __str__(self) -> str:
        raise ValueError("no message for you")


def _raise(exc: BaseException) -> Callable[[Any], Any]:
    def fn(input: Any) -> Any:
        raise exc
    return fn


@pytest.mark.parametrize(("exc", "why"), [
    (RuntimeError("the policy store is down"), "RuntimeError: the policy store is down"),
    (Unprintable(), "Unprintable: (its message could not be read)"),
    (SystemExit(3), "SystemExit"),
    (KeyError("tool"), "KeyError"),
])
def test_a_raising_handler_is_denied_with_cause_exception(runtime: Runtime, log: SessionLog,
                                                          exc: BaseException, why: str) -> None:
    decision, fired, _ = fire(runtime, log, HookHandler("raises", _raise(exc)))
    assert_denied(decision, fired, "exception", why)


MUTATIONS: dict[str, Callable[[Any], object]] = {
    "set a key": lambda i: i.__setitem__("tool", "rm"),
    "delete a key": lambda i: i.__delitem__("tool"),
    "update nested": lambda i: i["args"].update(text="changed"),
    "append to a list": lambda i: i["args"]["tags"].append("x"),
    "clear": lambda i: i.clear(),
}


@pytest.mark.parametrize("mutate", MUTATIONS.values(), ids=MUTATIONS.keys())
def test_a_handler_mutating_its_input_is_denied_and_changes_nothing(
        runtime: Runtime, log: SessionLog, mutate: Callable[[Any], object]) -> None:
    def handler(input: Any) -> HookDecision:
        mutate(input)
        return HookDecision("allow")

    data = json.loads(json.dumps(INPUT))
    decision, fired, _ = fire(runtime, log, HookHandler("mutator", handler), data)
    assert_denied(decision, fired, "exception", "handler raised")
    assert data == INPUT


def test_a_huge_reason_is_cut_before_it_reaches_the_log(runtime: Runtime, log: SessionLog) -> None:
    decision, fired, _ = fire(runtime, log, HookHandler(
        "verbose", lambda i: {"decision": "deny", "reason": "x" * 5_000_000}))
    assert decision.decision == "deny" and "cause" not in fired  # a real deny, only shortened
    assert len(fired["reason"]) < MAX_REASON + 50 and fired["reason"].endswith("more characters)")


def _sleep_forever(input: Any) -> Any:
    threading.Event().wait()


_STOP_SPINNING = threading.Event()


def _spin(input: Any) -> Any:
    # Pure Python, so the interpreter still switches threads. It stops when the test ends:
    # an abandoned thread spinning for the rest of the suite would slow every later test.
    while not _STOP_SPINNING.is_set():
        pass


@pytest.mark.parametrize("fn", [_sleep_forever, _spin], ids=["sleeps", "spins"])
def test_a_hanging_handler_is_denied_within_its_timeout(runtime: Runtime, log: SessionLog,
                                                        fn: Callable[[Any], Any]) -> None:
    timeout = 0.2
    _STOP_SPINNING.clear()
    try:
        decision, fired, took = fire(runtime, log, HookHandler("hangs", fn, timeout_s=timeout))
    finally:
        _STOP_SPINNING.set()
    assert_denied(decision, fired, "timeout", "timed out after 0.2s")
    assert timeout <= took < timeout + BOUND_S + SLACK_S, took


def test_a_handler_raising_timeout_error_is_a_timeout(runtime: Runtime, log: SessionLog) -> None:
    decision, fired, _ = fire(runtime, log, HookHandler(
        "upstream", _raise(TimeoutError("policy server did not answer"))))
    assert_denied(decision, fired, "timeout", "policy server did not answer")


def test_a_hanging_gate_in_a_run_denies_the_tool_and_the_session_closes(
        runtime: Runtime) -> None:
    runtime.hooks.register("PreToolUse", HookHandler("hangs", _sleep_forever, priority=1000,
                                                     timeout_s=0.2))
    run = finish(runtime, runtime.handle_user_request(CANONICAL))
    denied = [h for h in run.hooks("PreToolUse") if h["decision"] == "deny"]
    assert denied and {h["cause"] for h in denied} == {"timeout"} and run.invoked() == []
    assert ErrorCode.GATE_DENIED in run.error_codes()
    assert_closed_not_ok(run, "")


# -- command hooks: separate processes, contained ----------------------------------------------


def _script(tmp: Path, body: str) -> Path:
    path = tmp / "hook.py"
    path.write_text("import json, os, subprocess, sys, time\n" + body + "\n")
    return path


def _command(tmp: Path, body: str, timeout_s: float, *args: str) -> HookHandler:
    entry = {"event": "PreToolUse", "command": [sys.executable, str(_script(tmp, body)), *args],
             "timeout_s": timeout_s, "id": "cmd"}
    return handler_from_entry(entry, tmp)


def _pids(tmp: Path) -> list[int]:
    return [int(p) for p in (tmp / "pids").read_text().split()]


def _all_gone(pids: list[int], within_s: float = 2.0) -> bool:
    # A killed child is reparented and reaped by init: give that a moment, no more.
    end = time.monotonic() + within_s
    while time.monotonic() < end:
        if all(process_gone(p) for p in pids):
            return True
        time.sleep(0.02)
    return False


RECORD_PID = 'open("pids", "a").write(f"{os.getpid()}\\n")\n'
SPAWN_SLEEPER = ('child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])\n'
                 'open("pids", "a").write(f"{child.pid}\\n")\n')


def test_a_hanging_command_hook_is_killed_at_its_timeout(runtime: Runtime, log: SessionLog,
                                                         tmp_path: Path) -> None:
    timeout = 0.6  # room for the interpreter to start on a busy machine
    handler = _command(tmp_path, RECORD_PID + SPAWN_SLEEPER + "time.sleep(120)", timeout)
    decision, fired, took = fire(runtime, log, handler)
    assert_denied(decision, fired, "timeout", "ran past its 0.6s timeout_s")
    assert timeout <= took < timeout + BOUND_S + SLACK_S, took
    pids = _pids(tmp_path)
    assert len(pids) == 2 and _all_gone(pids), "the hook or its child outlived the timeout"


def test_a_command_hook_that_never_reads_a_large_input_cannot_stall_the_runtime(
        runtime: Runtime, log: SessionLog, tmp_path: Path) -> None:
    big = {"tool": "echo", "args": {"text": "x" * 1_000_000}}  # far past a pipe's buffer
    handler = _command(tmp_path, RECORD_PID + "time.sleep(120)", 0.6)
    decision, fired, took = fire(runtime, log, handler, big)
    assert_denied(decision, fired, "timeout", "timeout_s")
    assert took < 0.6 + BOUND_S + SLACK_S and _all_gone(_pids(tmp_path))


def test_a_command_hook_flooding_stdout_is_cut_off_and_killed(runtime: Runtime, log: SessionLog,
                                                              tmp_path: Path) -> None:
    flood = RECORD_PID + ("chunk = b'x' * (1 << 20)\n"
                          "for _ in range(100):\n    sys.stdout.buffer.write(chunk)\n"
                          "sys.stdout.flush()\ntime.sleep(120)")
    decision, fired, took = fire(runtime, log, _command(tmp_path, flood, 30))
    assert_denied(decision, fired, "exception", f"more than {MAX_STDOUT} bytes on stdout")
    assert took < 10, "the flood should end the hook long before its 30 s timeout"
    assert _all_gone(_pids(tmp_path))


def test_a_command_hook_flooding_stderr_is_cut_off_and_killed(runtime: Runtime, log: SessionLog,
                                                              tmp_path: Path) -> None:
    flood = RECORD_PID + "sys.stderr.write('e' * (8 << 20))\ntime.sleep(120)"
    decision, fired, _ = fire(runtime, log, _command(tmp_path, flood, 30))
    assert_denied(decision, fired, "exception", "bytes on stderr")
    assert _all_gone(_pids(tmp_path))


@pytest.mark.parametrize("stdio", ["inherited", "closed"])
def test_a_command_hook_leaving_a_child_running_is_denied_and_the_child_killed(
        runtime: Runtime, log: SessionLog, tmp_path: Path, stdio: str) -> None:
    spawn = SPAWN_SLEEPER if stdio == "inherited" else SPAWN_SLEEPER.replace(
        '"])', '"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, '
               'stderr=subprocess.DEVNULL)')
    allow = 'print(json.dumps({"decision": "allow"}))'
    decision, fired, took = fire(runtime, log, _command(tmp_path, spawn + allow, 30))
    assert_denied(decision, fired, "exception", "left processes running")
    assert took < 5
    assert _all_gone(_pids(tmp_path)), "the hook's child outlived it"


def test_a_command_hook_whose_child_finishes_first_is_not_penalised(
        runtime: Runtime, log: SessionLog, tmp_path: Path) -> None:
    body = ('subprocess.run([sys.executable, "-c", "pass"], check=True)\n'
            'print(json.dumps({"decision": "allow", "reason": "checked"}))')
    decision, fired, _ = fire(runtime, log, _command(tmp_path, body, 30))
    assert decision.decision == "allow" and fired["reason"] == "checked" and "cause" not in fired


def test_a_hanging_command_hook_in_agentos_yaml_denies_the_run(
        workspace: Path, run_request: RunRequest) -> None:
    script = _script(workspace, 'open("pids", "a").write(f"{os.getpid()}\\n")\ntime.sleep(120)')
    entry = {"event": "PreToolUse", "command": ["python", str(script)], "timeout_s": 0.6,
             "priority": 1000}
    cfg = workspace / "agentos.yaml"
    cfg.write_text(cfg.read_text().replace("hooks:\n", f"hooks:\n  - {json.dumps(entry)}\n", 1))
    add_profile(workspace, "once", max_rework=0)  # one worker pass: one hook run, not three
    run = run_request(CANONICAL, profile="once")
    denied = [h for h in run.hooks("PreToolUse") if h["decision"] == "deny"]
    assert denied and {h["cause"] for h in denied} == {"timeout"} and run.invoked() == []
    assert ErrorCode.GATE_DENIED in run.error_codes()
    assert_closed_not_ok(run, "")
    assert _all_gone(_pids(workspace))

"""L2 and L1 under faults (issue 13): a model backend that rate-limits, fails, cuts its answer
short or never finishes, and tools that raise or break their schema_out. Each ends as the
spec's fail-closed code with its event in the log, the session closes (`session.close`
last, ok false, the reason named) and the log passes the spec's audit.

HTTP faults come from the loopback server (tests/providers/loopback.py, 127.0.0.1 only);
the adapters sleep through a recorder, so a storm of Retry-After costs no wall time."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentos_kernel import DomainError, Err, ErrorCode, Ok, Runtime, ToolDef
from agentos_kernel.providers.anthropic import AnthropicProvider
from agentos_kernel.providers.base import (
    MAX_RETRY_AFTER_S,
    CompletionRequest,
    CompletionResponse,
    Usage,
)
from agentos_kernel.providers.openai_compat import OpenAICompatProvider
from agentos_kernel.store.events import read_log

from .fault_kit import Raising, add_profile, assert_closed_not_ok, use_provider
from .helpers import CANONICAL, Run, finish
from .providers.loopback import Loopback, Reply, loopback_server

ADAPTERS = {"openai_compat": (OpenAICompatProvider, "/v1"), "anthropic": (AnthropicProvider, "")}


KEY_ENV = "AGENTOS_FAULTS_KEY"


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, "sk-faults-0123456789abcdefghij")


@pytest.fixture
def server() -> Iterator[Loopback]:
    with loopback_server() as srv:
        yield srv


class Wire:
    """A runtime whose profile talks HTTP to the loopback server, sleeping via a recorder."""

    def __init__(self, workspace: Path, server: Loopback, adapter: str, **profile: Any) -> None:
        cls, suffix = ADAPTERS[adapter]
        add_profile(workspace, "wire", provider=adapter, model="m", base_url=server.url + suffix,
                    **{"max_retries": 2, "timeout_s": 5, "api_key_env": KEY_ENV, **profile})
        self.server, self.sleeps = server, []
        self.rt = Runtime.from_workspace(workspace, profile="wire")
        self.rt.provider_factory = lambda p, f: cls(  # type: ignore[assignment]
            p.model, base_url=p.base_url, api_key_env=p.api_key_env, prices=p.prices,
            max_retries=p.max_retries, timeout_s=p.timeout_s, sleep=self.sleeps.append)

    def run(self, prompt: str = CANONICAL) -> Run:
        return finish(self.rt, self.rt.handle_user_request(prompt))


def assert_provider_error(run: Run, why: str) -> None:
    """PROVIDER_ERROR, its llm.error answering the request, the session closed, audit clean."""
    assert run.code == ErrorCode.PROVIDER_ERROR, run.result
    (error,) = run.of("llm.error")
    assert error.payload["code"] == ErrorCode.PROVIDER_ERROR and why in error.payload["message"]
    assert error.parent_id == run.of("llm.request")[-1].id
    assert run.error_codes() == [ErrorCode.PROVIDER_ERROR]
    assert_closed_not_ok(run, "PROVIDER_ERROR")


# -- the backend over HTTP -------------------------------------------------------------------------

OPENAI_OK = {"model": "m", "choices": [{"message": {"role": "assistant", "content": "{}"},
                                        "finish_reason": "stop"}]}
STORM = Reply(429, {"error": {"type": "rate_limit", "message": "slow down"}}, {"Retry-After": "2"})


@pytest.mark.parametrize("adapter", ADAPTERS)
def test_a_rate_limit_storm_honours_retry_after_then_fails_closed(
        workspace: Path, server: Loopback, adapter: str) -> None:
    wire = Wire(workspace, server, adapter)
    server.replies.extend([STORM] * 3)
    run = wire.run()
    assert_provider_error(run, "HTTP 429")
    assert wire.sleeps == [2.0, 2.0]  # the server's Retry-After, not the 0.5 s / 1 s backoff
    assert len(server.requests) == 3


def test_a_storm_that_passes_is_retried_and_the_run_succeeds(workspace: Path,
                                                             server: Loopback) -> None:
    wire = Wire(workspace, server, "openai_compat")
    server.replies.extend([STORM, STORM])  # then the loopback model answers
    run = wire.run()
    assert run.ok, run.result
    assert run.of("llm.response")[0].payload["attempts"] == 3 and wire.sleeps == [2.0, 2.0]


def test_a_retry_after_longer_than_an_adapter_waits_ends_the_call_at_once(
        workspace: Path, server: Loopback) -> None:
    wire = Wire(workspace, server, "openai_compat")
    server.replies.extend([Reply(429, {"error": "quota"}, {"Retry-After": "3600"})] * 3)
    run = wire.run()
    assert_provider_error(run, f"more than the {MAX_RETRY_AFTER_S:g}s")
    assert wire.sleeps == [] and len(server.requests) == 1


@pytest.mark.parametrize("status", [500, 502, 503, 529])
def test_server_errors_are_retried_then_fail_closed(workspace: Path, server: Loopback,
                                                    status: int) -> None:
    wire = Wire(workspace, server, "openai_compat")
    server.replies.extend([Reply(status, b"<html>upstream unavailable</html>")] * 3)
    run = wire.run()
    assert_provider_error(run, f"HTTP {status}")
    assert len(server.requests) == 3 and len(wire.sleeps) == 2
    # exponential backoff (0.5 s, 1 s), jittered over the upper half of each wait
    assert 0.25 <= wire.sleeps[0] <= 0.5 and 0.5 <= wire.sleeps[1] <= 1.0


BODY = json.dumps(OPENAI_OK).encode()
BROKEN_ANSWERS = {
    "cut mid-body": (Reply(200, BODY, truncate_to=20), "received 20 bytes, expected"),
    "truncated JSON": (Reply(200, BODY[:25]), "non-JSON answer"),
    "HTML instead of JSON": (Reply(200, b"<html>502 Bad Gateway</html>"), "non-JSON answer"),
    "garbled status line": (Reply(200, raw=b"HTTP/1.1 2OO 0K\r\n\r\n"), "broken answer"),
}


@pytest.mark.parametrize(("reply", "why"), BROKEN_ANSWERS.values(), ids=BROKEN_ANSWERS.keys())
@pytest.mark.parametrize("adapter", ADAPTERS)
def test_a_broken_answer_is_retried_then_fails_closed(
        workspace: Path, server: Loopback, adapter: str, reply: Reply, why: str) -> None:
    wire = Wire(workspace, server, adapter)
    server.replies.extend([reply] * 3)
    run = wire.run()
    assert_provider_error(run, "gave up after 3 attempt(s)")
    assert why in run.of("llm.error")[0].payload["message"]
    assert len(server.requests) == 3


def test_an_answer_that_is_json_but_no_completion_is_not_retried(workspace: Path,
                                                                 server: Loopback) -> None:
    wire = Wire(workspace, server, "openai_compat")
    server.replies.extend([Reply(200, {"object": "error", "detail": "model not loaded"})] * 3)
    run = wire.run()
    assert_provider_error(run, "no choices[0].message")
    assert len(server.requests) == 1


@pytest.mark.parametrize("reply", [Reply(200, OPENAI_OK, delay_s=0.5),
                                   Reply(200, OPENAI_OK, drip_s=0.01)],
                         ids=["silent", "dripping"])
def test_a_backend_that_does_not_answer_in_time_fails_closed(workspace: Path, server: Loopback,
                                                             reply: Reply) -> None:
    wire = Wire(workspace, server, "openai_compat", timeout_s=0.2, max_retries=1)
    server.replies.extend([reply] * 2)
    run = wire.run()
    assert_provider_error(run, "timed out")
    assert len(server.requests) == 2


# -- a provider that breaks its contract in-process -----------------------------------------------


class Answers:
    """A provider that answers every call with `value` (not necessarily a valid one)."""

    name = "answers"

    def __init__(self, value: Any) -> None:
        self.value = value

    def complete(self, request: CompletionRequest) -> Any:
        return self.value


BAD_PROVIDERS = {
    "raises": (Raising(ConnectionError("SDK socket closed")), "raised ConnectionError"),
    "returns None": (Answers(None), "returned NoneType"),
    "returns a bare response": (
        Answers(CompletionResponse("{}", (), "stop", Usage(1, 1), "m")), "returned CompletionResponse"),
    "returns Ok(text)": (Answers(Ok("hello")), "returned Ok"),
}


@pytest.mark.parametrize(("provider", "why"), BAD_PROVIDERS.values(), ids=BAD_PROVIDERS.keys())
def test_a_provider_breaking_its_contract_is_a_provider_error(runtime: Runtime, provider: Any,
                                                              why: str) -> None:
    run = finish(runtime, use_provider(runtime, provider).handle_user_request(CANONICAL))
    assert_provider_error(run, why)


def test_a_response_breaking_completion_response_v1_is_schema_invalid(runtime: Runtime) -> None:
    odd = CompletionResponse("{}", (), "finished-ish", Usage(1, 1), "m")
    run = finish(runtime, use_provider(runtime, Answers(Ok(odd))).handle_user_request(CANONICAL))
    assert run.code == ErrorCode.SCHEMA_INVALID
    (violation,) = run.of("schema.violation")
    assert violation.payload["schema_id"] == "completion_response_v1"
    request = run.of("llm.request")[0]
    assert violation.parent_id == request.id
    (error,) = run.of("llm.error")  # the failed call is answered, so the audit pairs it
    assert error.parent_id == request.id and error.payload["code"] == ErrorCode.SCHEMA_INVALID
    assert_closed_not_ok(run, "SCHEMA_INVALID")


# -- tools -----------------------------------------------------------------------------------------

FRAGILE_SKILL = """---
name: fragile
description: Calls the fragile tool, which misbehaves on purpose.
triggers:
  - fragile
allowed-tools:
  - fragile
version: 1
schema_version: v1
---

# Fragile skill

Worker calls the fragile tool once and reports what it returned.
"""


def _tool_runtime(workspace: Path, behaviour: Any) -> Runtime:
    skill = workspace / "skills" / "fragile" / "SKILL.md"
    skill.parent.mkdir(parents=True, exist_ok=True)
    skill.write_text(FRAGILE_SKILL, encoding="utf-8")
    add_profile(workspace, "once", max_rework=0)

    def invoke(args: dict[str, Any], ctx: Any) -> Any:
        if isinstance(behaviour, BaseException):
            raise behaviour
        return behaviour

    tool = ToolDef("fragile", "tool_echo_in_v1", "tool_echo_out_v1", invoke, "Misbehaves.")
    return Runtime.from_workspace(workspace, profile="once", tools=[tool])


BAD_TOOLS = {
    "raises": (RuntimeError("disk on fire"), ErrorCode.TOOL_ERROR, "raised RuntimeError: disk on fire"),
    "returns a dict, not a Result": ({"text": "hi"}, ErrorCode.TOOL_ERROR, "returned dict"),
    "returns Err(str)": (Err("nope"), ErrorCode.TOOL_ERROR, "returned Err"),
    "returns a set": (Ok({"text": {"a"}}), ErrorCode.TOOL_ERROR, "not JSON"),
    "returns NaN": (Ok({"text": float("nan")}), ErrorCode.TOOL_ERROR, "not JSON"),
}


@pytest.mark.parametrize(("behaviour", "code", "why"), BAD_TOOLS.values(), ids=BAD_TOOLS.keys())
def test_a_broken_tool_is_a_tool_error(workspace: Path, behaviour: Any, code: str, why: str) -> None:
    rt = _tool_runtime(workspace, behaviour)
    run = finish(rt, rt.handle_user_request("fragile please"))
    (result,) = run.of("tool.result")
    assert result.payload["ok"] is False and result.payload["error"]["code"] == code
    assert why in result.payload["error"]["message"]
    assert run.error_codes()[0] == code and run.of("domain.error")[0].parent_id == result.parent_id
    # the model is told, reports what it could not do, the reviewer fails it: escalation
    assert run.code == ErrorCode.HUMAN_ESCALATION
    assert_closed_not_ok(run, "HUMAN_ESCALATION")


def test_a_tool_output_breaking_its_schema_out_is_schema_invalid(workspace: Path) -> None:
    rt = _tool_runtime(workspace, Ok({"txt": 1}))
    run = finish(rt, rt.handle_user_request("fragile please"))
    (violation,) = run.of("schema.violation")
    assert violation.payload["schema_id"] == "tool_echo_out_v1"
    assert violation.parent_id == run.of("tool.invoke")[0].id
    assert run.code == ErrorCode.HUMAN_ESCALATION
    assert_closed_not_ok(run, "HUMAN_ESCALATION")


def test_ctrl_c_inside_a_tool_still_answers_its_invoke_and_closes(workspace: Path) -> None:
    rt = _tool_runtime(workspace, KeyboardInterrupt())
    with pytest.raises(KeyboardInterrupt):
        rt.handle_user_request("fragile please")
    (sid,) = rt.store.sessions()
    run = Run(rt, None, sid, list(read_log(rt.store.path(sid))))
    assert run.types()[-3:] == ["tool.invoke", "tool.result", "session.close"]
    assert run.of("tool.result")[0].payload["error"]["code"] == ErrorCode.INTERRUPTED
    assert_closed_not_ok(run, "interrupted (Ctrl-C)")


def test_a_tool_returning_a_domain_error_is_passed_through(workspace: Path) -> None:
    rt = _tool_runtime(workspace, Err(DomainError("tool", ErrorCode.PATH_DENIED, "not there")))
    run = finish(rt, rt.handle_user_request("fragile please"))
    assert run.error_codes()[0] == ErrorCode.PATH_DENIED

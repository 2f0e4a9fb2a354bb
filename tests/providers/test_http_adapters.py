"""The HTTP adapters at the wire: what they send, how they read answers, how they retry.
Every request goes to the loopback server on 127.0.0.1 (loopback.py)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from agentos_kernel import Err, ErrorCode, Ok, Runtime
from agentos_kernel.providers.anthropic import AnthropicProvider
from agentos_kernel.providers.base import CompletionRequest, Provider
from agentos_kernel.providers.openai_compat import OpenAICompatProvider

from ..helpers import finish
from .loopback import Loopback, loopback_server

KEY_ENV = "AGENTOS_TEST_PROVIDER_KEY"
TOOL = {"name": "echo", "description": "Return the given text.",
        "input_schema": {"type": "object", "properties": {"text": {"type": "string"}},
                         "required": ["text"]}}


@pytest.fixture
def server() -> Iterator[Loopback]:
    with loopback_server() as srv:
        yield srv


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, "sk-test-0123456789abcdefghij")


def openai(srv: Loopback, **kw: object) -> OpenAICompatProvider:
    return OpenAICompatProvider("m", base_url=srv.url + "/v1", api_key_env=KEY_ENV,
                                sleep=lambda s: None, **kw)  # type: ignore[arg-type]


def anthropic(srv: Loopback, **kw: object) -> AnthropicProvider:
    return AnthropicProvider("m", base_url=srv.url, api_key_env=KEY_ENV, sleep=lambda s: None,
                             **kw)  # type: ignore[arg-type]


def req(*messages: tuple[str, str], tools: tuple[dict, ...] | None = None) -> CompletionRequest:
    return CompletionRequest(tuple({"role": r, "content": c} for r, c in messages), "m", tools)


HELLO = req(("system", "Be brief.\n\nRespond with JSON matching the schema `lead_directive_v1`."),
            ("user", json.dumps({"prompt": "hello"})))
OPENAI_OK = {"model": "m", "choices": [{"message": {"role": "assistant", "content": "{}"},
                                        "finish_reason": "stop"}],
             "usage": {"prompt_tokens": 1_000_000, "completion_tokens": 2_000_000}}
ANTHROPIC_OK = {"model": "m", "content": [{"type": "text", "text": "{}"}], "stop_reason": "end_turn",
                "usage": {"input_tokens": 1_000_000, "output_tokens": 2_000_000}}
BOTH = [(openai, OPENAI_OK), (anthropic, ANTHROPIC_OK)]


# -- what goes on the wire -------------------------------------------------------------------------


def test_openai_request_shape_headers_and_cost(server: Loopback) -> None:
    server.replies.append((200, OPENAI_OK))
    got = openai(server, prices={"input_per_mtok": 1.0, "output_per_mtok": 2.0}).complete(
        CompletionRequest(HELLO.messages, "m", (TOOL,), max_tokens=50, temperature=0.0))
    assert isinstance(got, Ok) and got.value.usage.cost_usd == 5.0
    sent = server.requests[0]
    assert sent.path == "/v1/chat/completions"
    assert sent.headers["authorization"] == "Bearer sk-test-0123456789abcdefghij"
    assert sent.body == {"model": "m", "messages": [dict(m) for m in HELLO.messages],
                         "tools": [{"type": "function", "function": {
                             "name": "echo", "description": TOOL["description"],
                             "parameters": TOOL["input_schema"]}}],
                         "max_tokens": 50, "temperature": 0.0}


def test_openai_without_api_key_env_sends_no_authorization(server: Loopback) -> None:
    server.replies.append((200, OPENAI_OK))
    provider = OpenAICompatProvider("m", base_url=server.url + "/v1")
    assert isinstance(provider.complete(HELLO), Ok)
    assert "authorization" not in server.requests[0].headers


def test_anthropic_request_shape_and_headers(server: Loopback) -> None:
    server.replies.append((200, ANTHROPIC_OK))
    got = anthropic(server).complete(CompletionRequest(HELLO.messages, "m", (TOOL,)))
    assert isinstance(got, Ok)
    sent = server.requests[0]
    assert sent.path == "/v1/messages"
    assert sent.headers["x-api-key"] == "sk-test-0123456789abcdefghij"
    assert sent.headers["anthropic-version"] == "2023-06-01"
    assert sent.body == {"model": "m", "system": HELLO.messages[0]["content"], "max_tokens": 1024,
                         "messages": [{"role": "user", "content": HELLO.messages[1]["content"]}],
                         "tools": [TOOL]}


TOOL_TURN = (("system", "s"), ("user", "u"),
             ("assistant", json.dumps({"tool_calls": [{"id": "t1", "name": "echo", "args": {"text": "a"}},
                                                      {"id": "t2", "name": "echo", "args": {}}]})),
             ("tool", json.dumps({"id": "t1", "name": "echo", "result": {"text": "a"}})),
             ("tool", json.dumps({"id": "t2", "name": "echo", "error": {"code": "X", "message": "m"}})))


def test_openai_tool_round_trip_messages(server: Loopback) -> None:
    server.replies.append((200, OPENAI_OK))
    assert isinstance(openai(server).complete(req(*TOOL_TURN, tools=(TOOL,))), Ok)
    msgs = server.requests[0].body["messages"]
    assert msgs[2] == {"role": "assistant", "content": None, "tool_calls": [
        {"id": "t1", "type": "function", "function": {"name": "echo", "arguments": '{"text": "a"}'}},
        {"id": "t2", "type": "function", "function": {"name": "echo", "arguments": "{}"}}]}
    assert msgs[3] == {"role": "tool", "tool_call_id": "t1", "content": '{"text": "a"}'}
    assert msgs[4]["tool_call_id"] == "t2" and json.loads(msgs[4]["content"])["error"]["code"] == "X"


def test_anthropic_tool_round_trip_messages(server: Loopback) -> None:
    server.replies.append((200, ANTHROPIC_OK))
    assert isinstance(anthropic(server).complete(req(*TOOL_TURN, tools=(TOOL,))), Ok)
    msgs = server.requests[0].body["messages"]
    assert [m["role"] for m in msgs] == ["user", "assistant", "user"]  # alternating turns
    assert msgs[1]["content"] == [{"type": "tool_use", "id": "t1", "name": "echo", "input": {"text": "a"}},
                                  {"type": "tool_use", "id": "t2", "name": "echo", "input": {}}]
    results = msgs[2]["content"]
    assert results[0] == {"type": "tool_result", "tool_use_id": "t1", "content": '{"text": "a"}'}
    assert results[1]["tool_use_id"] == "t2" and results[1]["is_error"] is True


# -- reading answers -------------------------------------------------------------------------------


def test_openai_tool_calls_are_parsed_and_mapped(server: Loopback) -> None:
    server.replies.append((200, {"choices": [{"message": {"content": None, "tool_calls": [
        {"id": "call_1", "type": "function", "function": {"name": "echo", "arguments": '{"text": "hi"}'}}]},
        "finish_reason": "tool_calls"}], "usage": {"prompt_tokens": 3, "completion_tokens": 4}}))
    resp = openai(server).complete(req(("user", "u"), tools=(TOOL,))).value
    assert resp.to_dict()["tool_calls"] == [{"id": "call_1", "name": "echo", "args": {"text": "hi"}}]
    assert (resp.text, resp.finish_reason, resp.model) == ("", "tool_use", "m")


@pytest.mark.parametrize(("wire", "v1"), [("stop", "stop"), ("length", "max_tokens"),
                                          ("content_filter", "safety")])
def test_openai_finish_reasons(server: Loopback, wire: str, v1: str) -> None:
    choice = {**OPENAI_OK["choices"][0], "finish_reason": wire}
    server.replies.append((200, {**OPENAI_OK, "choices": [choice]}))
    assert openai(server).complete(HELLO).value.finish_reason == v1


@pytest.mark.parametrize(("wire", "v1"), [("end_turn", "stop"), ("max_tokens", "max_tokens"),
                                          ("refusal", "safety")])
def test_anthropic_stop_reasons(server: Loopback, wire: str, v1: str) -> None:
    server.replies.append((200, {**ANTHROPIC_OK, "stop_reason": wire}))
    assert anthropic(server).complete(HELLO).value.finish_reason == v1


def test_anthropic_tool_use_blocks(server: Loopback) -> None:
    server.replies.append((200, {"content": [{"type": "text", "text": "calling"},
                                             {"type": "tool_use", "id": "toolu_1", "name": "echo",
                                              "input": {"text": "hi"}}],
                                 "stop_reason": "tool_use",
                                 "usage": {"input_tokens": 5, "output_tokens": 6}}))
    resp = anthropic(server).complete(req(("user", "u"), tools=(TOOL,))).value
    assert resp.text == "calling" and resp.finish_reason == "tool_use"
    assert resp.to_dict()["tool_calls"] == [{"id": "toolu_1", "name": "echo", "args": {"text": "hi"}}]


def test_malformed_tool_arguments_are_a_non_retryable_provider_error(server: Loopback) -> None:
    bad = {"choices": [{"message": {"tool_calls": [
        {"id": "c", "type": "function", "function": {"name": "echo", "arguments": "{not json"}}]},
        "finish_reason": "tool_calls"}]}
    server.replies.extend([(200, bad)] * 3)
    got = openai(server).complete(req(("user", "u"), tools=(TOOL,)))
    assert isinstance(got, Err) and got.error.code == ErrorCode.PROVIDER_ERROR
    assert got.error.retryable is False and "echo" in got.error.message
    assert len(server.requests) == 1


# -- retries and failures --------------------------------------------------------------------------


@pytest.mark.parametrize(("make", "ok"), BOTH)
def test_429_then_200_is_retried(server: Loopback, make, ok) -> None:  # type: ignore[no-untyped-def]
    server.replies.extend([(429, {"error": "slow down"}), (200, ok)])
    got = make(server).complete(HELLO)
    assert isinstance(got, Ok) and got.value.attempts == 2
    assert len(server.requests) == 2


@pytest.mark.parametrize(("make", "ok"), BOTH)
def test_500_until_retries_run_out(server: Loopback, make, ok) -> None:  # type: ignore[no-untyped-def]
    server.replies.extend([(500, {"error": "boom"})] * 5)
    got = make(server, max_retries=2).complete(HELLO)
    assert isinstance(got, Err) and got.error.code == ErrorCode.PROVIDER_ERROR
    assert got.error.retryable is True and "3 attempt" in got.error.message
    assert "HTTP 500" in got.error.message and len(server.requests) == 3


@pytest.mark.parametrize(("make", "ok"), BOTH)
def test_400_is_not_retried(server: Loopback, make, ok) -> None:  # type: ignore[no-untyped-def]
    server.replies.extend([(400, {"error": "bad request"}), (200, ok)])
    got = make(server).complete(HELLO)
    assert isinstance(got, Err) and got.error.retryable is False
    assert "HTTP 400" in got.error.message and len(server.requests) == 1


@pytest.mark.parametrize(("make", "ok"), BOTH)
def test_connection_refused_is_retryable(make, ok) -> None:  # type: ignore[no-untyped-def]
    with loopback_server() as gone:
        pass  # the port is closed again: nothing listens there now
    got = make(gone, max_retries=1).complete(HELLO)
    assert isinstance(got, Err) and got.error.retryable is True and "2 attempt" in got.error.message


@pytest.mark.parametrize("make", [openai, anthropic])
def test_missing_key_is_a_provider_error_naming_the_variable(
        server: Loopback, make, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.delenv(KEY_ENV)
    got = make(server).complete(HELLO)
    assert isinstance(got, Err) and got.error.code == ErrorCode.PROVIDER_ERROR
    assert KEY_ENV in got.error.message and not got.error.retryable
    assert server.requests == []


def test_the_key_never_appears_in_an_error(server: Loopback) -> None:
    server.replies.append((401, {"error": "bad key sk-test-0123456789abcdefghij"}))
    got = openai(server).complete(HELLO)
    assert isinstance(got, Err) and "0123456789abcdefghij" not in got.error.message


# -- end to end: a workspace on openai_compat has the scripted run's log shape (I-2) ---------------


def _run(ws: Path, profile: str, prompt: str) -> list[str]:
    rt = Runtime.from_workspace(ws, profile=profile)
    run = finish(rt, rt.handle_user_request(prompt))
    assert run.ok, run.result
    return run.types()


@pytest.mark.parametrize("prompt", ["hello", "hello, greet Ada"])
def test_end_to_end_same_log_shape_as_scripted(workspace: Path, server: Loopback, prompt: str) -> None:
    config = workspace / "agentos.yaml"
    doc = yaml.safe_load(config.read_text(encoding="utf-8"))
    doc["profiles"]["loopback"] = {"provider": "openai_compat", "model": "m", "deterministic": True,
                                   "base_url": server.url + "/v1"}
    config.write_text(yaml.safe_dump(doc), encoding="utf-8")
    over_http = _run(workspace, "loopback", prompt)
    scripted = _run(workspace, "scripted", prompt)
    assert over_http == scripted
    assert "llm.request" in over_http and len(server.requests) == over_http.count("llm.request")
    assert all(r.path == "/v1/chat/completions" for r in server.requests)


def test_providers_satisfy_the_protocol() -> None:
    provider: Provider = OpenAICompatProvider("m")
    assert provider.name == "openai_compat" and AnthropicProvider("m").name == "anthropic"

"""The Gemini adapter at the wire: what it sends and how it reads generateContent answers
(the documented GenerateContentResponse: candidates[].content.parts, finishReason,
usageMetadata). Every request goes to the loopback server on 127.0.0.1."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from agentos_kernel import Err, Ok
from agentos_kernel.providers.base import CompletionRequest
from agentos_kernel.providers.gemini import GeminiProvider

from .loopback import Loopback, loopback_server

KEY_ENV = "AGENTOS_TEST_GEMINI_KEY"
TOOL = {"name": "echo", "description": "Return the given text.",
        "input_schema": {"type": "object", "properties": {"text": {"type": "string"}},
                         "required": ["text"], "additionalProperties": False}}


@pytest.fixture
def server() -> Iterator[Loopback]:
    with loopback_server() as srv:
        yield srv


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, "gm-test-0123456789abcdefghij")


def gemini(srv: Loopback) -> GeminiProvider:
    return GeminiProvider("gemini-x", base_url=srv.url, api_key_env=KEY_ENV, sleep=lambda s: None,
                          prices={"input_per_mtok": 1.0, "output_per_mtok": 2.0})


def req(*messages: tuple[str, str], tools: tuple[dict, ...] | None = None) -> CompletionRequest:
    return CompletionRequest(tuple({"role": r, "content": c} for r, c in messages), "gemini-x", tools,
                             max_tokens=100, temperature=0.0)


def answer(parts: list[dict], finish: str = "STOP", **usage: int) -> dict:
    return {"candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": finish}],
            "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 4, **usage},
            "modelVersion": "gemini-x-001"}


TOOL_TURN = (("system", "s"), ("user", "u"),
             ("assistant", json.dumps({"tool_calls": [{"id": "t1", "name": "echo", "args": {"text": "a"}}]})),
             ("tool", json.dumps({"id": "t1", "name": "echo", "result": {"text": "a"}})))


def test_request_shape(server: Loopback) -> None:
    server.replies.append((200, answer([{"text": "{}"}])))
    assert isinstance(gemini(server).complete(req(*TOOL_TURN, tools=(TOOL,))), Ok)
    sent = server.requests[0]
    assert sent.path == "/v1beta/models/gemini-x:generateContent"
    assert sent.headers["x-goog-api-key"] == "gm-test-0123456789abcdefghij"
    assert sent.body["systemInstruction"] == {"parts": [{"text": "s"}]}
    assert sent.body["contents"] == [
        {"role": "user", "parts": [{"text": "u"}]},
        {"role": "model", "parts": [{"functionCall": {"name": "echo", "args": {"text": "a"}}}]},
        {"role": "user", "parts": [{"functionResponse": {"name": "echo",
                                                         "response": {"result": {"text": "a"}}}}]}]
    decl = sent.body["tools"][0]["functionDeclarations"][0]
    assert decl["name"] == "echo" and decl["parameters"]["type"] == "OBJECT"
    assert "additionalProperties" not in decl["parameters"]
    assert sent.body["generationConfig"] == {"maxOutputTokens": 100, "temperature": 0.0}


def test_text_usage_cost_and_thinking_tokens(server: Loopback) -> None:
    server.replies.append((200, answer([{"text": "thinking...", "thought": True}, {"text": '{"a": 1}'}],
                                       thoughtsTokenCount=6)))
    resp = gemini(server).complete(req(("user", "u"))).value
    assert resp.text == '{"a": 1}' and resp.finish_reason == "stop" and resp.model == "gemini-x-001"
    assert (resp.usage.input_tokens, resp.usage.output_tokens) == (10, 10)
    assert resp.usage.cost_usd == round((10 * 1.0 + 10 * 2.0) / 1e6, 8)


@pytest.mark.parametrize(("wire", "v1"), [("STOP", "stop"), ("MAX_TOKENS", "max_tokens"),
                                          ("SAFETY", "safety"), ("RECITATION", "safety")])
def test_finish_reasons(server: Loopback, wire: str, v1: str) -> None:
    server.replies.append((200, answer([{"text": "x"}], wire)))
    assert gemini(server).complete(req(("user", "u"))).value.finish_reason == v1


def test_function_calls_get_stable_distinct_ids(server: Loopback) -> None:
    calls = [{"functionCall": {"name": "echo", "args": {"text": "a"}}},
             {"functionCall": {"name": "echo", "args": {"text": "a"}}}]
    server.replies.extend([(200, answer(calls)), (200, answer(calls))])
    one = gemini(server).complete(req(("user", "u"), tools=(TOOL,))).value
    two = gemini(server).complete(req(("user", "u"), tools=(TOOL,))).value
    assert one.finish_reason == "tool_use"
    ids = [c.id for c in one.tool_calls]
    assert len(set(ids)) == 2 and ids == [c.id for c in two.tool_calls]
    server.replies.append((200, answer([{"functionCall": {"id": "fc-9", "name": "echo", "args": {}}}])))
    assert gemini(server).complete(req(("user", "u"), tools=(TOOL,))).value.tool_calls[0].id == "fc-9"


def test_a_blocked_prompt_is_a_safety_finish(server: Loopback) -> None:
    server.replies.append((200, {"promptFeedback": {"blockReason": "SAFETY"},
                                 "usageMetadata": {"promptTokenCount": 3}}))
    resp = gemini(server).complete(req(("user", "u"))).value
    assert resp.finish_reason == "safety" and resp.text == "" and resp.usage.input_tokens == 3


def test_no_candidates_is_a_non_retryable_provider_error(server: Loopback) -> None:
    server.replies.append((200, {"usageMetadata": {}}))
    got = gemini(server).complete(req(("user", "u")))
    assert isinstance(got, Err) and not got.error.retryable and len(server.requests) == 1


def test_429_with_retry_after_is_retried(server: Loopback) -> None:
    from .loopback import Reply

    server.replies.extend([Reply(429, {"error": {"code": 429, "status": "RESOURCE_EXHAUSTED"}},
                                 headers={"retry-after": "1"}), (200, answer([{"text": "{}"}]))])
    slept: list[float] = []
    provider = gemini(server)
    provider._sleep = slept.append
    got = provider.complete(req(("user", "u")))
    assert isinstance(got, Ok) and got.value.attempts == 2 and slept == [1.0]


def test_a_thought_signature_goes_back_with_its_function_call(server: Loopback) -> None:
    provider = gemini(server)
    server.replies.append((200, answer([{"functionCall": {"name": "echo", "args": {"text": "a"}},
                                         "thoughtSignature": "c2lnLTE="}])))
    first = provider.complete(req(("user", "u"), tools=(TOOL,))).value
    (call,) = first.tool_calls
    assert "c2lnLTE=" not in json.dumps(first.to_dict())  # never in the v1 response (the log)
    server.replies.append((200, answer([{"text": "{}"}])))
    turn = json.dumps({"tool_calls": [{"id": call.id, "name": "echo", "args": {"text": "a"}}]})
    result = json.dumps({"id": call.id, "name": "echo", "result": {"text": "a"}})
    provider.complete(req(("user", "u"), ("assistant", turn), ("tool", result), tools=(TOOL,)))
    model_turn = server.requests[1].body["contents"][1]
    assert model_turn["parts"][0]["thoughtSignature"] == "c2lnLTE="

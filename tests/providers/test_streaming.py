"""Streaming (issue 23): each dialect's server-sent events, read from a loopback server that
streams, give the very answer the unstreamed call gives (text, tool calls whose arguments
arrive in pieces, usage, finish reason); the text reaches the session's sink as it arrives,
redacted; the log holds one `llm.response` as an unstreamed call writes it, plus `chunks`;
a stream cut mid-way is a PROVIDER_ERROR with its `llm.error`."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from agentos_kernel import Ok, Runtime
from agentos_kernel.providers._http import HttpAdapter
from agentos_kernel.providers.anthropic import AnthropicProvider
from agentos_kernel.providers.base import CompletionRequest, HeldBack, LiveText, StreamedText
from agentos_kernel.providers.gemini import GeminiProvider
from agentos_kernel.providers.openai_compat import OpenAICompatProvider
from agentos_kernel.runs.live import LiveRun
from agentos_kernel.store.redaction import Redactor
from agentos_kernel.telemetry.livetrace import TEXT_MARK

from ..helpers import CANONICAL, Cli, Run, finish
from . import sse
from .loopback import Loopback, Reply, server_fixture  # noqa: F401  (the `server` fixture)
from .wire import KEY_ENV, add_real_profile, prose

TOOL = {"name": "echo", "description": "Return the given text.",
        "input_schema": {"type": "object", "properties": {"text": {"type": "string"}}}}
ASK = CompletionRequest(({"role": "system", "content": "s"}, {"role": "user", "content": "u"}),
                        "scripted-1", (TOOL,))
ARGS = {"text": "a longer argument, so that it arrives in several pieces", "n": [1, 2, 3]}
ANSWERS: dict[str, dict[str, Any]] = {
    "anthropic": {"id": "msg_1", "type": "message", "role": "assistant", "model": "scripted-1",
                  "content": [{"type": "text", "text": "Calling echo for you, twice over."},
                              {"type": "tool_use", "id": "toolu_1", "name": "echo", "input": ARGS},
                              {"type": "tool_use", "id": "toolu_2", "name": "echo", "input": {}}],
                  "stop_reason": "tool_use", "stop_sequence": None,
                  "usage": {"input_tokens": 11, "output_tokens": 22}},
    "openai": {"id": "chatcmpl-1", "object": "chat.completion", "model": "scripted-1",
               "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
                   "role": "assistant", "content": "Calling echo for you, twice over.",
                   "tool_calls": [
                       {"id": "call_1", "type": "function",
                        "function": {"name": "echo", "arguments": json.dumps(ARGS)}},
                       {"id": "call_2", "type": "function",
                        "function": {"name": "echo", "arguments": "{}"}}]}}],
               "usage": {"prompt_tokens": 11, "completion_tokens": 22}},
    "gemini": {"candidates": [{"content": {"role": "model", "parts": [
        {"text": "Calling echo for you, twice over."},
        {"functionCall": {"name": "echo", "args": ARGS}, "thoughtSignature": "c2ln"},
        {"functionCall": {"name": "echo", "args": {}}}]}, "finishReason": "STOP", "index": 0}],
        "usageMetadata": {"promptTokenCount": 11, "candidatesTokenCount": 22},
        "modelVersion": "scripted-1"},
}
MAKERS = {"anthropic": AnthropicProvider, "openai": OpenAICompatProvider, "gemini": GeminiProvider}
DIALECTS = sorted(ANSWERS)


@pytest.fixture(autouse=True)
def _stream_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, "sk-test-stream-0000000000000")


def adapter(dialect: str, srv: Loopback, **kw: Any) -> HttpAdapter:
    url = srv.url + "/v1" if dialect == "openai" else srv.url
    return MAKERS[dialect]("scripted-1", base_url=url, sleep=lambda s: None, api_key_env=KEY_ENV,
                           **kw)


@pytest.mark.parametrize("dialect", DIALECTS)
def test_a_streamed_answer_equals_the_unstreamed_one(server: Loopback, dialect: str) -> None:
    server.replies.extend([(200, ANSWERS[dialect])] * 2)
    plain = adapter(dialect, server).complete(ASK)
    streamed_adapter = adapter(dialect, server, stream=True)
    streamed = streamed_adapter.complete(ASK)
    assert isinstance(plain, Ok) and isinstance(streamed, Ok), (plain, streamed)
    assert streamed.value.to_dict() == plain.value.to_dict()
    assert [c.args for c in streamed.value.tool_calls] == [ARGS, {}]  # pieces put back together
    assert plain.value.chunks is None and streamed.value.chunks is not None
    assert streamed.value.chunks > 5  # the text (and, but for gemini, arguments) in pieces
    asked = server.requests[1]
    if dialect == "gemini":
        assert asked.path.endswith(":streamGenerateContent?alt=sse")
        assert streamed_adapter.signatures == {streamed.value.tool_calls[0].id: "c2ln"}
    else:
        assert asked.body["stream"] is True
    if dialect == "openai":
        assert asked.body["stream_options"] == {"include_usage": True}


@pytest.mark.parametrize("dialect", DIALECTS)
def test_text_reaches_the_sink_while_the_answer_arrives(server: Loopback, dialect: str) -> None:
    server.replies.append(Reply(200, ANSWERS[dialect], event_delay_s=0.03))
    provider = adapter(dialect, server, stream=True)
    seen: list[tuple[float, StreamedText]] = []
    provider.on_text = lambda piece: seen.append((time.monotonic(), piece))
    got = provider.complete(ASK)
    done = time.monotonic()
    assert isinstance(got, Ok)
    texts = [p for _, p in seen if not p.final]
    assert len(texts) > 3 and "".join(p.text for p in texts) == got.value.text
    assert done - seen[0][0] > 0.1  # the first piece was shown long before the answer was whole
    assert seen[-1][1].final and {p.attempt for _, p in seen} == {1}


@pytest.mark.parametrize("dialect", DIALECTS)
def test_a_stream_cut_midway_is_a_provider_error_with_its_event(
        workspace: Path, server: Loopback, dialect: str, monkeypatch: pytest.MonkeyPatch) -> None:
    profile = add_real_profile(workspace, dialect, server.url, max_retries=0)
    server.replies.append(Reply(200, prose(dialect, "A long answer " * 10), cut_after=4))
    rt = Runtime.from_workspace(workspace, profile=profile)
    run = finish(rt, rt.handle_user_request("hello"))
    assert run.code == "PROVIDER_ERROR"
    (error,) = run.of("llm.error")
    assert "broken answer" in error.payload["message"] and error.payload["code"] == "PROVIDER_ERROR"
    assert not run.of("llm.response")


@pytest.mark.parametrize("dialect", DIALECTS)
def test_a_stream_that_stops_before_its_last_event_is_retried(server: Loopback, dialect: str) -> None:
    server.replies.extend([Reply(200, ANSWERS[dialect], stop_after=5)] * 2)
    got = adapter(dialect, server, stream=True, max_retries=1).complete(ASK)
    assert not isinstance(got, Ok) and got.error.retryable
    assert "stopped after 5 chunk(s), before its last event" in got.error.message
    assert len(server.requests) == 2


@pytest.mark.parametrize(("kind", "retryable"), [("overloaded_error", True),
                                                 ("invalid_request_error", False)])
def test_an_anthropic_error_event_ends_the_stream(server: Loopback, kind: str,
                                                   retryable: bool) -> None:
    error = {"type": "error", "error": {"type": kind, "message": "Overloaded"}}
    frames = [f"event: {e['type']}\ndata: {json.dumps(e)}\n\n".encode()
              for e in [*list(sse.anthropic(ANSWERS["anthropic"]))[:4], error]]
    server.replies.extend([Reply(200, ANSWERS["anthropic"], frames=frames)] * 2)
    got = adapter("anthropic", server, stream=True, max_retries=1).complete(ASK)
    assert not isinstance(got, Ok) and got.error.retryable is retryable
    assert f"the stream ended in an error: {kind}: Overloaded" in got.error.message
    assert len(server.requests) == (2 if retryable else 1)


def test_a_server_that_ignores_stream_answers_whole(server: Loopback) -> None:
    server.replies.append((200, json.dumps(ANSWERS["openai"]).encode()))  # bytes: sent as JSON
    provider = adapter("openai", server, stream=True)
    seen: list[StreamedText] = []
    provider.on_text = seen.append
    got = provider.complete(ASK)
    assert isinstance(got, Ok) and got.value.chunks is None and server.requests[0].body["stream"]
    assert [(p.text, p.final) for p in seen] == [(got.value.text, True)]


def test_a_stream_dripping_past_timeout_s_times_out(server: Loopback) -> None:
    server.replies.extend([Reply(200, ANSWERS["openai"], event_delay_s=0.05)] * 2)
    provider = adapter("openai", server, stream=True, timeout_s=0.3, max_retries=1)
    got = provider.complete(ASK)  # every event comes well within timeout_s, the whole does not
    assert not isinstance(got, Ok) and "timed out" in got.error.message and got.error.retryable
    assert len(server.requests) == 2


def test_a_cut_stream_is_retried_and_the_retry_starts_the_text_over(server: Loopback) -> None:
    server.replies.extend([Reply(200, ANSWERS["openai"], cut_after=6), (200, ANSWERS["openai"])])
    provider = adapter("openai", server, stream=True)
    seen: list[StreamedText] = []
    provider.on_text = seen.append
    got = provider.complete(ASK)
    assert isinstance(got, Ok) and got.value.attempts == 2
    assert {p.attempt for p in seen} == {1, 2}
    assert "".join(p.text for p in seen if p.attempt == 2) == got.value.text


def _run(ws: Path, profile: str) -> Run:
    rt = Runtime.from_workspace(ws, profile=profile)
    return finish(rt, rt.handle_user_request(CANONICAL))


@pytest.mark.parametrize("dialect", ["anthropic", "openai", "gemini"])
def test_a_streamed_run_logs_what_an_unstreamed_run_logs(
        workspace: Path, server: Loopback, dialect: str, monkeypatch: pytest.MonkeyPatch) -> None:
    plain = _run(workspace, add_real_profile(workspace, dialect, server.url, "plain",
                                             deterministic=True, stream=False))
    streamed_profile = add_real_profile(workspace, dialect, server.url, "streamed",
                                        deterministic=True, stream=True)
    rt = Runtime.from_workspace(workspace, profile=streamed_profile)
    pieces: list[StreamedText] = []
    with rt.streaming(pieces.append):
        streamed = finish(rt, rt.handle_user_request(CANONICAL))
    assert plain.ok and streamed.ok
    responses = streamed.of("llm.response")
    assert all(e.payload["chunks"] > 1 for e in responses)
    assert all("chunks" not in e.payload for e in plain.of("llm.response"))

    def shape(run: Run) -> list[tuple[str, str, Any]]:
        return [(e.type, e.actor, {k: v for k, v in e.payload.items() if k != "chunks"})
                for e in run.events if e.type != "session.start"]
    assert shape(streamed) == shape(plain)
    shown = "".join(p.text for p in pieces)
    assert all(e.payload["text"] in shown for e in responses)  # every answer was seen live



def test_a_streamed_calls_span_carries_its_chunks(workspace: Path, server: Loopback) -> None:
    from agentos_kernel.telemetry.otel_spans import spans_of

    run = _run(workspace, add_real_profile(workspace, "openai", server.url, "s", stream=True))
    chats = [s for s in spans_of(run.events) if "agentos.attempts" in s.attributes]
    chunks = [e.payload["chunks"] for e in run.of("llm.response")]
    assert chats and [s.attributes["agentos.chunks"] for s in chats] == chunks


def test_stream_must_be_a_boolean(workspace: Path) -> None:
    from agentos_kernel import ContractError

    profile = add_real_profile(workspace, "openai", "http://127.0.0.1:9", "bad", stream="yes")
    with pytest.raises(ContractError, match=r"profiles\.bad.*stream|stream.*'yes'"):
        Runtime.from_workspace(workspace, profile=profile)

CANARY = "CanaryKey_q7Lm3Np9Rt2Vx"


def test_held_back_text_never_shows_a_key_split_across_pieces() -> None:
    redact = Redactor.of((CANARY,))
    out: list[StreamedText] = []
    sink = HeldBack(redact, out.append, hold=8)
    text = f"Here it is: {CANARY} and some more words after it, enough to pass the hold."
    for i in range(0, len(text), 3):
        sink(StreamedText(text[i:i + 3], 1))
    sink(StreamedText("", 1, final=True))
    shown = "".join(p.text for p in out)
    assert shown == redact(text) and CANARY[:6] not in shown
    assert len(out) > 3  # it streamed, it did not wait for the end


def test_agentos_run_prints_the_answer_as_it_arrives(workspace: Path, server: Loopback,
                                                     cli: Cli) -> None:
    profile = add_real_profile(workspace, "openai", server.url, "live")
    code, out, err = cli("--workspace", workspace, "run", "--profile", profile, "hello")
    assert code == 0, (out, err)
    lines = out.splitlines()
    i = next(i for i, line in enumerate(lines) if "llm.request" in line)
    # the text, between the request's line and the response's (LiveTrace.streamed)
    assert lines[i + 1].startswith(TEXT_MARK) and len(lines[i + 1]) > len(TEXT_MARK)
    assert "llm.response" in lines[i + 2]


def test_the_live_stepper_is_given_the_text_as_it_arrives(workspace: Path, server: Loopback) -> None:
    rt = Runtime.from_workspace(workspace, profile=add_real_profile(workspace, "anthropic",
                                                                    server.url, "live"))
    seen: list[str] = []
    live = LiveRun(rt, "hello", on_text=seen.append)
    live.start()
    assert live.close().done and live.error is None
    responses = [e for e in rt.events(live.session) if e.type == "llm.response"]
    assert len(seen) > 3 and seen[-1] == responses[-1].payload["text"] == live.text


def test_agent_live_prints_the_answer_as_it_arrives(workspace: Path, server: Loopback,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    from agentos_kernel.jupyter import api  # what `%agent --live` calls

    profile = add_real_profile(workspace, "gemini", server.url, "live")
    run = api.run_agent("hello", profile=profile, workspace=workspace, live=True)
    lines = capsys.readouterr().out.splitlines()
    shown = [line[len(TEXT_MARK):] for line in lines if line.startswith(TEXT_MARK)]
    texts = [e.payload["text"] for e in run.events if e.type == "llm.response"]
    assert shown == texts and texts  # each answer, as it arrived, then its llm.response line


def test_live_text_redacts_only_while_someone_watches() -> None:
    class Streams:
        on_text = None

    scanned: list[str] = []
    live, provider = LiveText(), Streams()
    live.attach(provider, lambda text: scanned.append(text) or text)
    assert provider.on_text is not None
    provider.on_text(StreamedText("a batch run: nobody sees this", 1))
    assert scanned == []  # no redaction pass per piece for nobody
    seen: list[StreamedText] = []
    with live.watching(seen.append):
        provider.on_text(StreamedText("watched ", 1, final=True))
    assert scanned and [p.text for p in seen] == ["watched "]

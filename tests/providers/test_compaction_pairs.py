"""Compaction keeps tool-call/tool-result pairs together (issue 10): whatever the length,
the limit and the number of parallel calls per turn, the conversation a compaction keeps
is one the Anthropic Messages API accepts (each tool_result right after its tool_use)."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from agentos_kernel import Err, Ok, Runtime
from agentos_kernel.providers.anthropic import AnthropicProvider, to_wire
from agentos_kernel.providers.base import CompletionRequest

from .loopback import anthropic_violation, loopback_server

KEY_ENV = "AGENTOS_TEST_COMPACT_KEY"


def conversation(turns: int, parallel: int) -> list[dict[str, str]]:
    """system, task, then `turns` tool turns of `parallel` calls each, each call answered."""
    messages = [{"role": "system", "content": "work"}, {"role": "user", "content": "task"}]
    for t in range(turns):
        calls = [{"id": f"t{t}_{k}", "name": "echo", "args": {"text": f"{t}.{k}"}} for k in range(parallel)]
        messages.append({"role": "assistant", "content": json.dumps({"tool_calls": calls})})
        messages += [{"role": "tool", "content": json.dumps({"id": c["id"], "name": "echo",
                                                            "result": {"text": c["args"]["text"]}})}
                     for c in calls]
    return messages


@pytest.fixture
def session(runtime: Runtime):  # type: ignore[no-untyped-def]
    s = runtime.open_session()
    assert not isinstance(s, Err)
    yield s
    s.log.close()


def test_every_compaction_keeps_pairs_the_messages_api_accepts(session) -> None:  # type: ignore[no-untyped-def]
    compacted = 0
    for limit in range(4, 12):
        session.profile = replace(session.profile, compact_after=limit)
        for parallel in (1, 2, 3):
            for turns in range(1, 8):
                messages = conversation(turns, parallel)
                kept = session.maybe_compact("worker", messages)
                compacted += kept != messages
                body = to_wire(CompletionRequest(tuple(kept), "m"))
                problem = anthropic_violation(body)
                assert problem is None, (limit, parallel, turns, [m["role"] for m in kept], problem)
                assert kept[:2] == messages[:2]
    assert compacted > 20, "too few conversations were compacted for this to prove anything"


def test_a_compacted_conversation_is_accepted_by_the_anthropic_adapter(
        session, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv(KEY_ENV, "sk-test-compact-000000000000")
    session.profile = replace(session.profile, compact_after=6)
    messages = conversation(4, 3)
    kept = session.maybe_compact("worker", messages)
    assert len(kept) < len(messages)
    with loopback_server() as server:
        server.replies.append((200, {"content": [{"type": "text", "text": "{}"}], "stop_reason": "end_turn",
                                     "usage": {"input_tokens": 1, "output_tokens": 1}}))
        provider = AnthropicProvider("m", base_url=server.url, api_key_env=KEY_ENV)
        assert isinstance(provider.complete(CompletionRequest(tuple(kept), "m")), Ok)
        # the server's check is live: the same call with an orphaned tool result is refused
        orphan = kept[:2] + kept[3:]
        got = provider.complete(CompletionRequest(tuple(orphan), "m"))
        assert isinstance(got, Err) and "HTTP 400" in got.error.message and "tool_use_id" in got.error.message


def test_the_check_refuses_an_orphaned_result() -> None:
    messages = conversation(2, 2)
    assert anthropic_violation(to_wire(CompletionRequest(tuple(messages), "m"))) is None
    broken = messages[:2] + messages[3:]  # the first assistant turn dropped, its results kept
    assert "tool_use_id" in (anthropic_violation(to_wire(CompletionRequest(tuple(broken), "m"))) or "")


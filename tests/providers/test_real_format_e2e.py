"""I-2 over the wire (issue 10): the canonical request completes its four roles against a
loopback server answering in each real API's documented format, with the event types of a
scripted run in the same order, and the adapter's translation loses nothing the roles use."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from agentos_kernel import Runtime
from agentos_kernel.labs.audit.log import audit_log

from ..helpers import CANONICAL, Run, finish
from .loopback import Loopback, loopback_server
from .wire import KEY_ENV, REAL, add_real_profile

PATHS = {"anthropic": "/v1/messages", "openai": "/v1/chat/completions",
         "local": "/v1/chat/completions",
         "gemini": "/v1beta/models/scripted-1:streamGenerateContent?alt=sse"}
"""Where each adapter posts; profiles stream by default (gemini names it in the path)."""


@pytest.fixture
def server() -> Iterator[Loopback]:
    with loopback_server() as srv:
        yield srv


def _run(ws: Path, profile: str, prompt: str = CANONICAL) -> Run:
    rt = Runtime.from_workspace(ws, profile=profile)
    return finish(rt, rt.handle_user_request(prompt))


@pytest.mark.parametrize("provider", REAL)
def test_hello_greet_ada_completes_with_the_scripted_event_sequence(
        workspace: Path, server: Loopback, provider: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, "sk-test-e2e-00000000000000")
    profile = add_real_profile(workspace, provider, server.url, deterministic=True, max_repairs=2)
    real = _run(workspace, profile)
    assert real.ok, real.result
    scripted = _run(workspace, "scripted")
    assert real.types() == scripted.types()
    roles = [e.payload["role"] for e in real.of("llm.request")]
    assert {"lead", "planner", "worker", "reviewer"} <= set(roles)
    assert real.of("tool.invoke"), "the canonical request uses a tool: the round trip was not tried"
    assert real.result.value.output == scripted.result.value.output
    assert {r.path for r in server.requests} == {PATHS[provider]}
    assert len(server.requests) == len(roles)
    assert audit_log(real.log_path).ok

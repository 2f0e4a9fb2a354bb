"""End-to-end on the mock provider: the spec's E2E criteria, offline and deterministic."""

from pathlib import Path

from runtime.agents import Runtime
from runtime.event_store import replay
from runtime.result import Ok

ROOT = Path(__file__).resolve().parents[1]


def test_e2e_mock_provider_greets_ada(tmp_path):
    runtime = Runtime(ROOT, tmp_path / "sessions")
    result = runtime.handle_user_request("hello, greet Ada")
    assert isinstance(result, Ok)
    assert result.value["report"]["output"] == "Hello, Ada!"
    events = runtime.events.read_all(runtime.session_id)
    types = {e.type for e in events}
    assert {"session.start", "llm.request", "llm.response", "agent.transition", "hook.fired",
            "skill.invoke", "tool.invoke", "tool.result", "session.close"} <= types
    snap = replay(runtime.events, runtime.session_id)
    assert snap["closed"] and snap["output"] == "Hello, Ada!"
    assert snap["agents"]["reviewer"] == "REVIEW"


def test_user_prompt_submit_redacts_card_number(tmp_path):
    runtime = Runtime(ROOT, tmp_path / "sessions")
    runtime.handle_user_request("hello, greet Ada 1234567812345678")
    start = runtime.events.read_all(runtime.session_id)[0]
    assert start.payload["prompt"].endswith("1234567812345678")
    lead_request = next(e for e in runtime.events.read_all(runtime.session_id) if e.type == "llm.request")
    assert "[REDACTED-CC]" in lead_request.payload["messages"][1]["content"]

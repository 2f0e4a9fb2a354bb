"""The spec's eleven End-to-End Test Criteria, one test each, in the spec's order."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentos_kernel import Err, ErrorCode, Ok, Runtime, replay
from agentos_kernel import kernel as kernel_module
from agentos_kernel.errors import Result
from agentos_kernel.providers.base import CompletionRequest, CompletionResponse
from agentos_kernel.providers.scripted import ScriptedProvider
from agentos_kernel.store.events import read_log
from agentos_kernel.tools.builtin import protected_write, sha256_of

from .helpers import CANONICAL, Run, RunRequest

SPEC_SCHEMAS = (
    "completion_request_v1", "completion_response_v1", "lead_directive_v1", "plan_v1",
    "worker_report_v1", "review_result_v1", "skill_frontmatter_v1", "write_claim_v1",
)
CARD = "4111111111111111"


def test_01_required_schemas_are_loaded(runtime: Runtime) -> None:
    ids = runtime.schemas.ids()
    assert set(SPEC_SCHEMAS) <= set(ids)
    for sid in SPEC_SCHEMAS:
        assert runtime.schemas.schema(sid)["$id"] == sid
        assert runtime.schemas.file(sid).name == f"{sid}.json"


def test_02_greet_skill_is_discovered(runtime: Runtime) -> None:
    greet = runtime.skills["greet"]
    assert greet.file == "skills/greet/SKILL.md"
    assert {"greet", "hello"} <= set(greet.triggers)
    assert greet.allowed_tools == ("echo",)
    assert runtime.skills.select(CANONICAL) == (greet, "hello")


def test_03_echo_tool_is_registered(runtime: Runtime) -> None:
    echo = runtime.tools.find("echo")
    assert echo is not None and "echo" in runtime.tools.names()
    assert echo.schema_in in runtime.schemas and echo.schema_out in runtime.schemas
    assert echo.invoke({"text": "hi"}, None) == Ok({"text": "hi"})


@pytest.mark.parametrize("hook", ["PreToolUse", "Stop", "UserPromptSubmit"])
def test_04_hooks_are_registered(runtime: Runtime, hook: str) -> None:
    handlers = runtime.hooks.registered(hook)
    assert handlers, f"no {hook} handler registered from agentos.yaml"
    assert all(callable(h.fn) for h in handlers)


def test_05_provider_is_swapped_through_runtime_profile(run_request: RunRequest) -> None:
    base = run_request()
    alt = run_request(profile="scripted-alt")
    assert base.ok and alt.ok
    assert alt.rt.profile.name == "scripted-alt"
    assert alt.types() == base.types(), "same flow, same event-type sequence"
    models = {e.payload["model"] for e in alt.of("llm.response")}
    assert models == {"scripted-2"} and {e.payload["model"] for e in base.of("llm.response")} == {
        "scripted-1"}
    assert alt.of("session.start")[0].payload["model"] == "scripted-2"
    cost, alt_cost = base.rt.replay(base.session_id).cost, alt.rt.replay(alt.session_id).cost
    assert alt_cost.cost_usd != cost.cost_usd
    assert alt.result.value.output == base.result.value.output


def test_06_handle_user_request_completes_lead_planner_worker_reviewer(canonical_run: Run) -> None:
    run = canonical_run
    assert run.result.value.ok and run.result.value.output == "Hello, Ada!"
    assert [e.payload["to"] for e in run.of("agent.transition")] == [
        "LEAD", "PLAN", "WORK", "REVIEW", "DONE"]
    handoffs = [e.type for e in run.of("lead.directive", "plan.created", "worker.report",
                                       "review.result")]
    assert handoffs == ["lead.directive", "plan.created", "worker.report", "review.result"]
    roles = [e.payload["role"] for e in run.of("llm.request")]
    assert roles == ["lead", "planner", "worker", "worker", "reviewer"]
    assert run.result.value.review["verdict"] == "pass"


def test_07_events_jsonl_holds_session_llm_agent_hook_skill_tool_events(canonical_run: Run) -> None:
    path = canonical_run.log_path
    assert path.name == ".events.jsonl" and path.parent.name == canonical_run.session_id
    assert path.parent.parent.name == "sessions"
    prefixes = {e.type.split(".")[0] for e in read_log(path)}
    assert {"session", "llm", "agent", "hook", "skill", "tool"} <= prefixes


def test_08_replay_reproduces_closed_snapshot_and_worker_output(canonical_run: Run,
                                                                 workspace: Path) -> None:
    fresh = Runtime.from_workspace(workspace)  # nothing in memory from the run
    snap = fresh.replay(canonical_run.session_id)
    assert snap.closed and snap.ok
    assert snap.output == canonical_run.result.value.output == "Hello, Ada!"
    assert replay(read_log(canonical_run.log_path)) == snap


def test_09_protected_write_rejects_stale_expected_hash(tmp_path: Path) -> None:
    target = tmp_path / "notes.md"
    first = protected_write(target, "v1\n", "", "worker", "create")
    assert isinstance(first, Ok) and first.value["hash"] == sha256_of("v1\n")
    stale = first.value["hash"]
    assert isinstance(protected_write(target, "v2\n", stale, "other", "edit"), Ok)
    lost = protected_write(target, "v1 + mine\n", stale, "worker", "append")
    assert isinstance(lost, Err) and lost.error.code == ErrorCode.WRITE_CONFLICT
    assert lost.error.kind == "lock"
    assert target.read_text() == "v2\n", "a rejected write must not touch the file"


def test_10_invalid_schema_payload_fails_closed(runtime: Runtime, run_request: RunRequest) -> None:
    bad_plan = {"steps": [], "risks": [], "needs_advisor": False, "schema_version": "v1"}
    checked = runtime.schemas.validate(bad_plan, "plan_v1")
    assert isinstance(checked, Err) and checked.error.code == ErrorCode.SCHEMA_INVALID
    assert "/steps" in checked.error.message
    run = run_request(faults="schema_violation")  # the planner's output misses a field
    assert run.code == ErrorCode.SCHEMA_INVALID
    assert [e.payload["schema_id"] for e in run.of("schema.violation")] == ["plan_v1"]
    assert not run.of("plan.created") and "WORK" not in [
        e.payload["to"] for e in run.of("agent.transition")]
    assert run.events[-1].type == "session.close" and run.events[-1].payload["ok"] is False


def test_11_user_prompt_submit_redacts_a_16_digit_sequence(run_request: RunRequest,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[str] = []

    class Spy(ScriptedProvider):
        def complete(self, request: CompletionRequest) -> Result[CompletionResponse]:
            seen.extend(m["content"] for m in request.messages)
            return super().complete(request)

    monkeypatch.setitem(kernel_module.PROVIDERS, "scripted",
                        lambda p, f: Spy(p.model, p.prices, f, p.max_retries))
    run = run_request(f"hello, greet Ada; my card is {CARD}, thanks")
    assert run.ok
    fired = run.hooks("UserPromptSubmit")
    assert [h["decision"] for h in fired] == ["transform"]
    assert fired[0]["output"] == {"prompt": "hello, greet Ada; my card is [REDACTED-CC], thanks"}
    lines = run.log_path.read_text(encoding="utf-8").splitlines()
    assert lines and not [n for n, line in enumerate(lines, 1) if CARD in line]
    for req in run.of("llm.request"):
        assert CARD not in str(req.payload)
    assert seen and not [c for c in seen if CARD in c], "the model itself must never see the number"
    assert any("[REDACTED-CC]" in c for c in seen)

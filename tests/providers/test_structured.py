"""Structured outputs (issue 10): role schemas in each provider's dialect (pure), on the
wire, and repair turns that hand a refused answer back before failing closed."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentos_kernel import ErrorCode, Ok, Runtime, SchemaRegistry
from agentos_kernel.labs.audit.log import audit_log
from agentos_kernel.providers.anthropic import AnthropicProvider
from agentos_kernel.providers.base import CompletionRequest
from agentos_kernel.providers.gemini import GeminiProvider
from agentos_kernel.providers.openai_compat import OpenAIProvider
from agentos_kernel.providers.structured import (
    drop_optional_nulls,
    gemini_schema,
    openai_strict,
    output_tool,
)
from agentos_kernel.workspace import reference_dir

from ..helpers import CANONICAL, finish
from .loopback import Loopback, loopback_server
from .wire import KEY_ENV, REAL, add_real_profile, prose

ROLE_SCHEMAS = ("lead_directive_v1", "plan_v1", "worker_report_v1", "review_result_v1",
                "advisor_opinion_v1")


@pytest.fixture(scope="module")
def schemas() -> SchemaRegistry:
    return SchemaRegistry.load(reference_dir() / "schemas")


@pytest.fixture
def server() -> Iterator[Loopback]:
    with loopback_server() as srv:
        yield srv


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, "sk-test-structured-0000000000")


def _objects(node: object) -> Iterator[dict]:
    if isinstance(node, dict):
        if node.get("type") == "object" or "properties" in node:
            yield node
        for v in node.values():
            yield from _objects(v)
    elif isinstance(node, list):
        for v in node:
            yield from _objects(v)


# -- the dialects (pure) ---------------------------------------------------------------------------


@pytest.mark.parametrize("schema_id", ROLE_SCHEMAS)
def test_openai_strict_closes_every_object_and_requires_every_property(
        schemas: SchemaRegistry, schema_id: str) -> None:
    strict = openai_strict(schemas.resolved(schema_id))
    objects = list(_objects(strict))
    assert objects
    for obj in objects:
        assert obj["additionalProperties"] is False
        assert obj["required"] == list(obj["properties"])
    text = json.dumps(strict)
    for banned in ('"const"', '"minLength"', '"$schema"'):
        assert banned not in text


def test_openai_strict_makes_optional_properties_nullable(schemas: SchemaRegistry) -> None:
    plan = openai_strict(schemas.resolved("plan_v1"))
    step = plan["properties"]["steps"]["items"]
    assert step["properties"]["depends_on"]["type"] == ["array", "null"]  # optional
    assert step["properties"]["id"]["type"] == "string"  # required: not nullable
    assert plan["properties"]["schema_version"] == {"enum": ["v1"], "type": "string"}
    lead = openai_strict(schemas.resolved("lead_directive_v1"))
    assert lead["properties"]["needs_advisor"]["type"] == ["boolean", "null"]
    review = openai_strict(schemas.resolved("review_result_v1"))
    assert review["properties"]["verdict"] == {"enum": ["pass", "fail"], "type": "string"}


def test_a_strict_answer_with_nulls_is_valid_after_dropping_them(schemas: SchemaRegistry) -> None:
    answer = {"steps": [{"id": "s1", "description": "greet", "depends_on": None}], "risks": [],
              "needs_advisor": False, "schema_version": "v1"}
    assert not isinstance(schemas.validate(answer, "plan_v1"), Ok)
    fixed = drop_optional_nulls(answer, schemas.resolved("plan_v1"))
    assert fixed["steps"][0] == {"id": "s1", "description": "greet"}
    assert isinstance(schemas.validate(fixed, "plan_v1"), Ok)


def test_anthropic_output_tool_carries_the_schema(schemas: SchemaRegistry) -> None:
    tool = output_tool("plan_v1", schemas.resolved("plan_v1"))
    assert tool["name"] == "submit_plan_v1"
    assert tool["input_schema"] == schemas.resolved("plan_v1")
    assert tool["input_schema"]["type"] == "object"


@pytest.mark.parametrize("schema_id", ROLE_SCHEMAS)
def test_gemini_schema_is_the_openapi_subset(schemas: SchemaRegistry, schema_id: str) -> None:
    g = gemini_schema(schemas.resolved(schema_id))
    text = json.dumps(g)
    for banned in ('"additionalProperties"', '"const"', '"$ref"', '"$schema"', '"minLength"'):
        assert banned not in text
    for obj in _objects(g):
        assert obj["type"] == "OBJECT" and obj["propertyOrdering"] == list(obj["properties"])
    assert g["properties"]["schema_version"] == {"enum": ["v1"], "type": "STRING"}


def test_gemini_schema_nullable_and_union() -> None:
    assert gemini_schema({"type": ["string", "null"]}) == {"type": "STRING", "nullable": True}
    assert gemini_schema({"type": ["string", "integer"]}) == {
        "anyOf": [{"type": "STRING"}, {"type": "INTEGER"}]}


# -- on the wire -----------------------------------------------------------------------------------

PLAN_REQ = CompletionRequest(
    ({"role": "system", "content": "Plan.\n\nRespond with JSON matching the schema `plan_v1`."},
     {"role": "user", "content": json.dumps({"prompt": CANONICAL, "directive": {"intent": "greet"}})}),
    "scripted-1", output_schema_id="plan_v1")


def _plan_req(schemas: SchemaRegistry, tools: tuple = ()) -> CompletionRequest:
    return CompletionRequest(PLAN_REQ.messages, PLAN_REQ.model, tools or None,
                             output_schema_id="plan_v1", output_schema=schemas.resolved("plan_v1"))


def test_openai_sends_response_format_and_reads_strict_answers(server: Loopback,
                                                                schemas: SchemaRegistry) -> None:
    got = OpenAIProvider("scripted-1", base_url=server.url + "/v1", api_key_env=KEY_ENV).complete(
        _plan_req(schemas))
    fmt = server.requests[0].body["response_format"]
    assert fmt["type"] == "json_schema" and fmt["json_schema"]["strict"] is True
    assert fmt["json_schema"]["name"] == "plan_v1"
    assert isinstance(got, Ok)
    assert isinstance(schemas.validate(json.loads(got.value.text), "plan_v1"), Ok), got.value.text


def test_openai_strict_nulls_for_absent_fields_are_dropped(server: Loopback,
                                                           schemas: SchemaRegistry) -> None:
    strict = {"steps": [{"id": "s1", "description": "greet", "depends_on": None}], "risks": [],
              "needs_advisor": False, "schema_version": "v1"}
    server.replies.append((200, prose("openai", json.dumps(strict))))
    got = OpenAIProvider("scripted-1", base_url=server.url + "/v1", api_key_env=KEY_ENV).complete(
        _plan_req(schemas))
    answer = json.loads(got.value.text)
    assert answer["steps"] == [{"id": "s1", "description": "greet"}]
    assert isinstance(schemas.validate(answer, "plan_v1"), Ok)


def test_anthropic_forces_the_output_tool_and_reads_its_input(server: Loopback,
                                                               schemas: SchemaRegistry) -> None:
    provider = AnthropicProvider("scripted-1", base_url=server.url, api_key_env=KEY_ENV)
    got = provider.complete(_plan_req(schemas))
    sent = server.requests[0].body
    assert sent["tool_choice"] == {"type": "tool", "name": "submit_plan_v1"}
    assert [t["name"] for t in sent["tools"]] == ["submit_plan_v1"]
    assert isinstance(got, Ok) and got.value.finish_reason == "stop" and not got.value.tool_calls
    assert isinstance(schemas.validate(json.loads(got.value.text), "plan_v1"), Ok)
    echo = {"name": "echo", "description": "", "input_schema": schemas.resolved("tool_echo_in_v1")}
    provider.complete(_plan_req(schemas, (echo,)))
    assert server.requests[1].body["tool_choice"] == {"type": "any"}  # a real tool or the answer


def test_gemini_sends_response_schema_unless_tools_are_offered(server: Loopback,
                                                               schemas: SchemaRegistry) -> None:
    provider = GeminiProvider("scripted-1", base_url=server.url, api_key_env=KEY_ENV)
    got = provider.complete(_plan_req(schemas))
    sent = server.requests[0]
    assert sent.path == "/v1beta/models/scripted-1:generateContent"
    assert sent.headers["x-goog-api-key"] == "sk-test-structured-0000000000"
    config = sent.body["generationConfig"]
    assert config["responseMimeType"] == "application/json"
    assert config["responseSchema"] == gemini_schema(schemas.resolved("plan_v1"))
    assert isinstance(got, Ok) and isinstance(schemas.validate(json.loads(got.value.text), "plan_v1"), Ok)
    echo = {"name": "echo", "description": "", "input_schema": schemas.resolved("tool_echo_in_v1")}
    provider.complete(_plan_req(schemas, (echo,)))
    assert "responseSchema" not in server.requests[1].body.get("generationConfig", {})


# -- repair turns, against each provider's wire format ---------------------------------------------


def _run(ws: Path, profile: str):  # type: ignore[no-untyped-def]
    rt = Runtime.from_workspace(ws, profile=profile)
    return finish(rt, rt.handle_user_request(CANONICAL))


@pytest.mark.parametrize("provider", REAL)
def test_a_prose_answer_is_repaired_then_the_request_completes(
        workspace: Path, server: Loopback, provider: str) -> None:
    profile = add_real_profile(workspace, provider, server.url, max_repairs=2)
    server.replies.append((200, prose(provider)))  # the lead's first answer: prose
    run = _run(workspace, profile)
    assert run.ok, run.result
    violations = run.of("schema.violation")
    assert len(violations) == 1 and violations[0].payload["where"] == "lead output (attempt 1 of 3)"
    requests = run.of("llm.request")
    repair = requests[1]
    assert repair.payload["role"] == "lead"
    assert repair.payload["messages"][-2] == {"role": "assistant",
                                              "content": "Sure! I will greet Ada for you."}
    assert repair.payload["messages"][-1]["content"].startswith("SCHEMA_INVALID: ")
    assert len(server.requests) == len(requests)
    report = audit_log(run.log_path)
    assert report.ok, [str(g) for g in report.gaps]


@pytest.mark.parametrize("provider", REAL)
def test_repairs_run_out_and_the_role_fails_closed(workspace: Path, server: Loopback,
                                                   provider: str) -> None:
    profile = add_real_profile(workspace, provider, server.url, max_repairs=2)
    server.replies.extend([(200, prose(provider))] * 3)
    run = _run(workspace, profile)
    assert not run.ok and run.code == ErrorCode.MALFORMED_AGENT_MESSAGE
    assert len(run.of("llm.request")) == 3 == len(server.requests)
    assert len(run.of("schema.violation")) == 2
    assert run.events[-1].type == "session.close" and run.events[-1].payload["ok"] is False
    assert audit_log(run.log_path).ok


def test_without_repairs_a_prose_answer_fails_at_once(workspace: Path, server: Loopback) -> None:
    profile = add_real_profile(workspace, "openai", server.url)
    server.replies.append((200, prose("openai")))
    run = _run(workspace, profile)
    assert run.code == ErrorCode.MALFORMED_AGENT_MESSAGE
    assert len(server.requests) == 1 and not run.of("schema.violation")


def test_a_schema_breaking_answer_is_repaired_with_its_violations(workspace: Path,
                                                                  server: Loopback) -> None:
    profile = add_real_profile(workspace, "openai", server.url, max_repairs=1)
    server.replies.append((200, prose("openai", json.dumps({"intent": "greet Ada"}))))
    run = _run(workspace, profile)
    assert run.ok, run.result
    repair = run.of("llm.request")[1].payload["messages"][-1]["content"]
    assert "lead_directive_v1" in repair and "constraints" in repair
    assert run.of("schema.violation")[0].payload["schema_id"] == "lead_directive_v1"

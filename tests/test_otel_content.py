"""Content capture is opt-in (the GenAI semantic conventions): tool call arguments and results
reach the spans only when the profile's `telemetry.capture_content` or the conventions'
OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT turns it on; both the resource and the
scope carry the semantic conventions' `schemaUrl`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.semconv.schemas import Schemas

from agentos_kernel import ContractError, Runtime
from agentos_kernel.config import TelemetryConfig
from agentos_kernel.telemetry.otel import otlp_json, readable_spans, session_records
from agentos_kernel.telemetry.otel_live import LiveExport
from agentos_kernel.telemetry.otel_records import CAPTURE_ENV, SCHEMA_URL, capture_content

from .fault_kit import add_profile
from .helpers import CANONICAL, Run

CONTENT = ("gen_ai.tool.call.arguments", "gen_ai.tool.call.result")


def _tool_attrs(rt: Runtime, sid: str) -> dict[str, Any]:
    (tool,) = [s for s in readable_spans(session_records(rt, sid))
               if (s.attributes or {}).get("gen_ai.operation.name") == "execute_tool"]
    return dict(tool.attributes or {})


def test_by_default_no_tool_arguments_or_results_are_exported(canonical_run: Run,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(CAPTURE_ENV, raising=False)
    attrs = _tool_attrs(canonical_run.rt, canonical_run.session_id)
    assert attrs["gen_ai.tool.name"] == "echo"  # the call itself is there
    assert not set(CONTENT) & set(attrs)
    text = json.dumps(otlp_json(readable_spans(session_records(canonical_run.rt,
                                                               canonical_run.session_id))))
    assert not any(key in text for key in CONTENT)


@pytest.mark.parametrize(("value", "on"), [("true", True), ("SPAN_ONLY", True),
                                           ("span_and_event", True), ("false", False),
                                           ("NO_CONTENT", False), ("EVENT_ONLY", False)])
def test_the_conventions_environment_variable_turns_it_on(canonical_run: Run, value: str, on: bool,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(CAPTURE_ENV, value)
    attrs = _tool_attrs(canonical_run.rt, canonical_run.session_id)
    if on:
        assert json.loads(attrs["gen_ai.tool.call.arguments"]) == {"text": "Hello, Ada!"}
        assert json.loads(attrs["gen_ai.tool.call.result"]) == {"text": "Hello, Ada!"}
    else:
        assert not set(CONTENT) & set(attrs)


def test_the_profile_switch_wins_over_the_environment(canonical_run: Run, workspace: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    add_profile(workspace, "captured", telemetry={"otlp_endpoint": "http://127.0.0.1:9/v1/traces",
                                                  "capture_content": True})
    add_profile(workspace, "private", telemetry={"otlp_endpoint": "http://127.0.0.1:9/v1/traces",
                                                 "capture_content": False})
    sid = canonical_run.session_id
    monkeypatch.setenv(CAPTURE_ENV, "false")
    assert set(CONTENT) <= set(_tool_attrs(Runtime.from_workspace(workspace, profile="captured"), sid))
    monkeypatch.setenv(CAPTURE_ENV, "true")
    assert not set(CONTENT) & set(_tool_attrs(Runtime.from_workspace(workspace, profile="private"), sid))


def test_a_bad_value_is_refused_naming_the_variable(canonical_run: Run, workspace: Path, cli: Any,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ValueError, match=CAPTURE_ENV):
        capture_content(None, {CAPTURE_ENV: "yes"})
    monkeypatch.setenv(CAPTURE_ENV, "yes")
    code, _, err = cli("--workspace", workspace, "export", "otel", canonical_run.session_id)
    assert code == 2
    assert f"{CAPTURE_ENV}='yes' is not one of true, false, NO_CONTENT" in err
    add_profile(workspace, "traced", telemetry={"otlp_endpoint": "http://127.0.0.1:9/v1/traces"})
    with pytest.raises(ContractError, match=r"profiles\.traced\.telemetry"):
        Runtime.from_workspace(workspace, profile="traced")


def test_live_export_captures_only_when_asked(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(CAPTURE_ENV, raising=False)
    for setting, on in ((None, False), (True, True)):
        memory = InMemorySpanExporter()
        live = LiveExport(TelemetryConfig("http://127.0.0.1:9/v1/traces", capture_content=setting),
                          exporter=memory)
        rt = Runtime.from_workspace(workspace)
        with rt.watching(live):
            assert rt.handle_user_request(CANONICAL).value.ok
        (tool,) = [s for s in memory.get_finished_spans() if s.name == "execute_tool echo"]
        assert (set(CONTENT) <= set(tool.attributes or {})) is on
        assert on or not set(CONTENT) & set(tool.attributes or {})


def test_resource_and_scope_name_the_semantic_conventions_schema(canonical_run: Run) -> None:
    assert SCHEMA_URL in {s.value for s in Schemas}  # a published schema, not a made-up URL
    doc = otlp_json(readable_spans(session_records(canonical_run.rt, canonical_run.session_id)))
    (rs,) = doc["resourceSpans"]
    assert rs["schemaUrl"] == SCHEMA_URL
    assert [ss["schemaUrl"] for ss in rs["scopeSpans"]] == [SCHEMA_URL]

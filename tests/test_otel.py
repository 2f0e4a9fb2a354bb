"""OpenTelemetry export (issue 14): the span tree of a session matches its events one to one
(each event is the start, the end or an event of exactly one span; parents follow
parent_id); model calls carry the GenAI semantic conventions; fail-closed paths are ERROR
spans with their code; ids are derived from the log, so an export is reproducible; a secret
never reaches an exported attribute. Spans go through the SDK's InMemorySpanExporter."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from agentos_kernel import Err, Runtime
from agentos_kernel.providers.faults import PRESETS, load_fault_plan
from agentos_kernel.store.events import read_log
from agentos_kernel.store.recorder import failure_code
from agentos_kernel.telemetry.otel import (
    OtelUnavailable,
    otlp_json,
    readable_spans,
    require_sdk,
    session_records,
)
from agentos_kernel.telemetry.otel_spans import spans_of, ts_ns

from .fault_kit import add_profile
from .helpers import CANONICAL, REPO, Run, RunRequest
from .test_secrets import EMPLOYEE, KEY_ENV, PROMPT, assert_clean, leaks

EXAMPLE = REPO / "sessions" / "example" / ".events.jsonl"


def exported(rt: Runtime, session_id: str) -> list[ReadableSpan]:
    """The session's spans as the SDK's in-memory exporter received them."""
    exporter = InMemorySpanExporter()
    exporter.export(readable_spans(session_records(rt, session_id)))
    return list(exporter.get_finished_spans())


def holders(spans: list[ReadableSpan]) -> dict[str, tuple[str, ReadableSpan]]:
    """event id -> (how the span holds it: start, end or event; the span), asserting that
    no event is held twice."""
    seen: list[tuple[str, str, ReadableSpan]] = []
    for s in spans:
        a = s.attributes or {}
        if "agentos.event.id" in a:
            seen.append((str(a["agentos.event.id"]), "start", s))
        if "agentos.end_event.id" in a:
            seen.append((str(a["agentos.end_event.id"]), "end", s))
        seen += [(str(e.attributes["agentos.event.id"]), "event", s) for e in s.events]
    twice = [i for i, n in Counter(i for i, _, _ in seen).items() if n > 1]
    assert not twice, f"events held by more than one span: {twice}"
    return {i: (how, s) for i, how, s in seen}


def span_started_by(spans: list[ReadableSpan], event_id: str) -> ReadableSpan:
    return next(s for s in spans if (s.attributes or {}).get("agentos.event.id") == event_id)


@pytest.fixture
def canonical(canonical_run: Run) -> tuple[Run, list[ReadableSpan]]:
    return canonical_run, exported(canonical_run.rt, canonical_run.session_id)


def test_every_event_is_in_exactly_one_span(canonical: tuple[Run, list[ReadableSpan]]) -> None:
    run, spans = canonical
    held = holders(spans)
    assert sorted(held) == sorted(e.id for e in run.events)
    for ev in run.events:  # the seq travels with the id, so any span leads back to its log line
        how, span = held[ev.id]
        if how == "event":
            attrs = next(e.attributes for e in span.events if e.attributes["agentos.event.id"] == ev.id)
            assert attrs["agentos.event.seq"] == ev.seq and attrs["agentos.event.type"] == ev.type
        else:
            prefix = "agentos.event" if how == "start" else "agentos.end_event"
            assert span.attributes[f"{prefix}.seq"] == ev.seq


def test_the_tree_is_session_then_role_turns_then_calls(canonical: tuple[Run, list[ReadableSpan]]) -> None:
    run, spans = canonical
    by_id = {s.context.span_id: s for s in spans}
    roots = [s for s in spans if s.parent is None]
    assert [r.name for r in roots] == [f"session {run.session_id}"]
    assert {s.context.trace_id for s in spans} == {roots[0].context.trace_id}
    assert all(s.parent.span_id in by_id for s in spans if s.parent is not None)
    turns = sorted((s for s in spans if s.name.startswith("invoke_agent")), key=lambda s: s.start_time)
    assert [t.name for t in turns] == ["invoke_agent lead", "invoke_agent planner",
                                       "invoke_agent worker", "invoke_agent reviewer"]
    assert all(t.parent.span_id == roots[0].context.span_id for t in turns)
    for s in spans:
        if s.name.startswith(("chat ", "execute_tool ")):  # every call sits in the turn that made it
            turn = by_id[s.parent.span_id]
            assert turn.name == f"invoke_agent {s.attributes['agentos.event.actor']}", s.name
    # times are the log's: a span starts at its first event's ts and ends at its last one's
    ts = {e.id: ts_ns(e.ts) for e in run.events}
    for s in spans:
        if "agentos.event.id" in s.attributes:
            assert s.start_time == ts[s.attributes["agentos.event.id"]]
        if "agentos.end_event.id" in s.attributes:
            assert s.end_time == ts[s.attributes["agentos.end_event.id"]]
    assert roots[0].end_time == ts[run.events[-1].id]


def test_parents_follow_parent_id(canonical: tuple[Run, list[ReadableSpan]]) -> None:
    """An answer closes the span its parent_id opened (tool.result -> tool.invoke, llm.response
    -> llm.request); a hook fired for a tool call is a child of that tool's span."""
    run, spans = canonical
    held = holders(spans)
    answered = [e for e in run.events if e.parent_id is not None]
    assert {e.type for e in answered} >= {"llm.response", "tool.result", "hook.fired"}
    for ev in answered:
        parent_span = span_started_by(spans, ev.parent_id)
        how, span = held[ev.id]
        if how == "start":  # a span of its own (PostToolUse): a child of its parent's span
            assert span.parent.span_id == parent_span.context.span_id, ev
        else:
            assert span is parent_span and how == "end", ev


def test_model_and_tool_spans_carry_the_genai_conventions(
        canonical: tuple[Run, list[ReadableSpan]]) -> None:
    run, spans = canonical
    responses = {e.parent_id: e.payload for e in run.events if e.type == "llm.response"}
    chats = [s for s in spans if s.attributes.get("gen_ai.operation.name") == "chat"]
    assert len(chats) == len(responses) == 5
    for s in chats:
        answer = responses[s.attributes["agentos.event.id"]]
        assert s.name == "chat scripted-1" and s.kind is SpanKind.CLIENT
        assert s.attributes["gen_ai.provider.name"] == s.attributes["gen_ai.system"] == "agentos.scripted"
        assert s.attributes["gen_ai.request.model"] == "scripted-1"
        assert s.attributes["gen_ai.usage.input_tokens"] == answer["usage"]["input_tokens"]
        assert s.attributes["gen_ai.usage.output_tokens"] == answer["usage"]["output_tokens"]
        assert s.attributes["gen_ai.response.finish_reasons"] == (answer["finish_reason"],)
        assert s.attributes["gen_ai.conversation.id"] == run.session_id
        assert s.status.status_code is StatusCode.UNSET
    (tool,) = [s for s in spans if s.attributes.get("gen_ai.operation.name") == "execute_tool"]
    assert tool.name == "execute_tool echo"
    assert tool.attributes["gen_ai.tool.name"] == "echo" and tool.attributes["gen_ai.tool.call.id"] == "t1"
    # content (arguments, result) is opt-in: tests/test_otel_content.py
    assert "gen_ai.tool.call.arguments" not in tool.attributes
    agents = [s for s in spans if s.attributes.get("gen_ai.operation.name") == "invoke_agent"]
    assert {s.attributes["gen_ai.agent.name"] for s in agents} == {"lead", "planner", "worker", "reviewer"}


def test_the_reference_trace_maps_the_same_way() -> None:
    """The shipped reference log (read from its file: no runtime) gives 18 spans covering
    its 32 events, and the GenAI token counts add up to the log's."""
    events = list(read_log(EXAMPLE))
    records = spans_of(events)
    assert Counter(r.kind for r in records) == {"session": 1, "agent": 4, "llm": 5, "tool": 1, "hook": 7}
    held = [r.attributes.get(k) for r in records for k in ("agentos.event.id", "agentos.end_event.id")]
    held += [e.attributes["agentos.event.id"] for r in records for e in r.events]
    assert sorted(h for h in held if h) == sorted(e.id for e in events)
    tokens = sum(r.attributes.get("gen_ai.usage.input_tokens", 0) for r in records)
    assert tokens == sum(e.payload["usage"]["input_tokens"] for e in events if e.type == "llm.response")


@pytest.mark.parametrize(("preset", "span", "code"), [
    ("hook_deny", "hook PreToolUse", "HOOK_DENIED"),
    ("hook_deny", "invoke_agent worker", "GATE_DENIED"),
    ("provider_down", "chat scripted-1", "PROVIDER_ERROR"),
    ("malformed_worker", "invoke_agent worker", "MALFORMED_AGENT_MESSAGE"),
    ("prompt_denied", "hook UserPromptSubmit", "HOOK_DENIED"),
])
def test_fail_closed_paths_are_error_spans_with_their_code(run_request: RunRequest, preset: str,
                                                           span: str, code: str) -> None:
    run = run_request(faults=preset)
    assert not run.ok
    spans = exported(run.rt, run.session_id)
    holders(spans)  # still one span per event on a failing path
    failing = [s for s in spans if s.name == span and s.status.status_code is StatusCode.ERROR]
    assert failing, [(s.name, s.status.status_code) for s in spans]
    assert failing[0].attributes["error.type"] == code
    assert failing[0].status.description.startswith(code)
    (root,) = [s for s in spans if s.parent is None]
    assert root.status.status_code is StatusCode.ERROR and root.attributes["agentos.ok"] is False
    assert root.attributes["error.type"] == run.code
    first_failure = next(c for e in run.events if (c := failure_code(e)) is not None)
    assert root.attributes["agentos.root_cause"] == first_failure


@pytest.mark.parametrize("preset", sorted(PRESETS))
def test_every_fault_path_and_cycle_maps_one_to_one(workspace: Path, preset: str) -> None:
    """Under every fault preset, a request and an L8 cycle: each event in exactly one span,
    every parent span exported, one root."""
    rt = Runtime.from_workspace(workspace, faults=load_fault_plan(preset))
    cycle = rt.run_cycle("code-review", "review the change in auth.py")
    for sid in (_run_id(rt, CANONICAL), cycle.value.session_id):
        spans = exported(rt, sid)
        assert sorted(holders(spans)) == sorted(e.id for e in rt.events(sid))
        ids = {s.context.span_id for s in spans}
        assert all(s.parent.span_id in ids for s in spans if s.parent is not None)
        assert len([s for s in spans if s.parent is None]) == 1


@pytest.mark.parametrize(("preset", "code"), [("hook_timeout", "HOOK_TIMEOUT"),
                                              ("hook_error", "HOOK_EXCEPTION")])
def test_a_hook_that_fails_is_an_error_span_naming_how(run_request: RunRequest, preset: str,
                                                       code: str) -> None:
    run = run_request(faults=preset)
    hook = next(s for s in exported(run.rt, run.session_id) if s.name == "hook PreToolUse"
                and s.status.status_code is StatusCode.ERROR)
    assert hook.attributes["error.type"] == code and hook.status.description.startswith(code)


def test_an_ok_run_has_no_error_span_and_the_stop_hook_is_not_a_refusal(
        canonical: tuple[Run, list[ReadableSpan]]) -> None:
    _, spans = canonical
    assert [s.name for s in spans if s.status.status_code is StatusCode.ERROR] == []
    (stop,) = [s for s in spans if s.name == "hook Stop"]
    assert stop.attributes["agentos.hook.decision"] == "deny"


def test_an_export_is_reproducible_and_ids_are_derived_from_the_log(run_request: RunRequest) -> None:
    first, second = run_request(), run_request()
    a, again = (otlp_json(exported(first.rt, first.session_id)) for _ in range(2))
    assert a == again  # same log, same bytes: a collector sees a re-export as the same trace
    b = otlp_json(exported(second.rt, second.session_id))
    ids = lambda doc: {s["traceId"] for rs in doc["resourceSpans"] for ss in rs["scopeSpans"]  # noqa: E731
                       for s in ss["spans"]}
    assert len(ids(a)) == len(ids(b)) == 1 and ids(a) != ids(b)
    span = a["resourceSpans"][0]["scopeSpans"][0]["spans"][0]
    assert len(span["traceId"]) == 32 and len(span["spanId"]) == 16  # OTLP/JSON: hex ids


def test_a_log_cut_short_still_exports_with_its_open_spans_marked(canonical_run: Run) -> None:
    events = [e for e in canonical_run.events if e.seq <= 16]  # killed waiting on the tool
    records = spans_of(events)
    root = next(r for r in records if r.parent_span_id is None)
    assert root.attributes["agentos.unfinished"] is True
    assert root.end_ns == ts_ns(events[-1].ts)
    assert sorted(h for r in records for h in [r.attributes.get("agentos.event.id"),
                                               r.attributes.get("agentos.end_event.id"),
                                               *(e.attributes["agentos.event.id"] for e in r.events)] if h) \
        == sorted(e.id for e in events)


# -- redaction --------------------------------------------------------------------------
@pytest.fixture
def guarded(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """test_secrets' canary setup: the key in the profile's env var, a custom pattern."""
    from .test_secrets import CANARY
    monkeypatch.setenv(KEY_ENV, CANARY)
    add_profile(workspace, "guarded", api_key_env=KEY_ENV, redact_patterns=[r"EMP-\d{6}"])
    return workspace


def _all_text(spans: list[ReadableSpan]) -> str:
    return json.dumps(otlp_json(spans), ensure_ascii=False)


def test_no_secret_reaches_an_exported_attribute(guarded: Path) -> None:
    rt = Runtime.from_workspace(guarded, profile="guarded")
    sid = _run_id(rt, PROMPT)
    text = _all_text(exported(rt, sid))
    assert_clean(text, "the exported spans")  # absent, and the redacted text was exported


def test_export_redacts_again_with_the_profile_it_is_given(guarded: Path) -> None:
    """A log written without the pattern (another profile, an older workspace) holds the
    employee id; exported under the guarded profile it is gone."""
    plain = Runtime.from_workspace(guarded, profile="scripted")
    sid = _run_id(plain, f"{CANONICAL} for {EMPLOYEE}")
    assert EMPLOYEE in _all_text(exported(plain, sid))  # the log itself holds it
    text = _all_text(exported(Runtime.from_workspace(guarded, profile="guarded"), sid))
    assert EMPLOYEE not in text and "[REDACTED]" in text and not leaks(text)


def _run_id(rt: Runtime, prompt: str) -> str:
    result = rt.handle_user_request(prompt)
    return result.error.session_id if isinstance(result, Err) else result.value.session_id


# -- the extra ----------------------------------------------------------------------------
def test_import_and_help_never_load_the_sdk(tmp_path: Path) -> None:
    probe = ("import sys\nimport agentos_kernel\nfrom agentos_kernel.cli.main import build_parser\n"
             "build_parser()\nprint(sorted(m for m in sys.modules if m.startswith('opentelemetry')))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=tmp_path,
                         check=True)
    assert out.stdout.strip() == "[]"


def test_without_the_extra_the_error_names_it(monkeypatch: pytest.MonkeyPatch, workspace: Path,
                                              cli: Any) -> None:
    monkeypatch.setitem(sys.modules, "opentelemetry.sdk.trace", None)
    with pytest.raises(OtelUnavailable, match=r"'otel' extra.*agentos-kernel\[otel\]"):
        require_sdk()
    code, _, err = cli("--workspace", workspace, "export", "otel", "s0001")
    assert code == 2 and "pip install 'agentos-kernel[otel]'" in err

"""Where the spans go (issue 14): `agentos export otel` to a loopback OTLP/HTTP receiver
(protobuf `ExportTraceServiceRequest`, decoded by the test), to stdout or a file as OTLP JSON;
live export while a session runs under a profile with `telemetry:`, the same spans as the
export afterwards; an unreachable collector never fails the run and costs it at most a
bounded wait. Nothing leaves 127.0.0.1."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from agentos_kernel import ContractError, Runtime
from agentos_kernel.config import TelemetryConfig
from agentos_kernel.telemetry.otel import otlp_json, readable_spans, session_records
from agentos_kernel.telemetry.otel_live import CLOSE_TIMEOUT_S, LiveExport

from .fault_kit import add_profile
from .helpers import CANONICAL, Run
from .otlp_receiver import closed_port_url, otlp_receiver


def _ids(spans: list[Any]) -> list[tuple[str, str, str]]:
    """(trace id, span id, name) of OTLP protobuf spans, sorted."""
    return sorted((s.trace_id.hex(), s.span_id.hex(), s.name) for s in spans)


def _json_ids(doc: dict[str, Any]) -> list[tuple[str, str, str]]:
    return sorted((s["traceId"], s["spanId"], s["name"]) for rs in doc["resourceSpans"]
                  for ss in rs["scopeSpans"] for s in ss["spans"])


def _telemetry(workspace: Path, url: str, name: str = "traced", **extra: Any) -> None:
    add_profile(workspace, name, telemetry={"otlp_endpoint": url, **extra})


def test_export_to_an_endpoint_sends_the_session_as_otlp_protobuf(canonical_run: Run, workspace: Path,
                                                                  cli: Any) -> None:
    with otlp_receiver() as got:
        code, out, err = cli("--workspace", workspace, "export", "otel", canonical_run.session_id,
                             "--endpoint", got.url)
    assert code == 0, err
    spans = got.spans()
    assert got.content_types == ["application/x-protobuf"]
    assert len(spans) == 18 and got.service_names() == {"agentos-kernel"}
    trace = spans[0].trace_id.hex()
    assert f"session {canonical_run.session_id}: 18 spans exported to {got.url} (trace {trace})" in out
    chat = next(s for s in spans if s.name == "chat scripted-1")
    attrs = {a.key: a.value for a in chat.attributes}
    assert attrs["gen_ai.operation.name"].string_value == "chat"
    assert attrs["gen_ai.usage.input_tokens"].int_value > 0
    # what the collector got is what the export builds from the log, id for id
    local = readable_spans(session_records(canonical_run.rt, canonical_run.session_id))
    assert _ids(spans) == _json_ids(otlp_json(local))


def test_without_an_endpoint_the_spans_are_printed_as_otlp_json(canonical_run: Run, workspace: Path,
                                                                cli: Any, tmp_path: Path) -> None:
    code, out, _ = cli("--workspace", workspace, "export", "otel", canonical_run.session_id)
    assert code == 0
    doc = json.loads(out)
    assert len(_json_ids(doc)) == 18
    target = tmp_path / "spans.json"
    code, out, _ = cli("--workspace", workspace, "export", "otel", canonical_run.session_id,
                       "--out", target)
    assert code == 0 and f"written as OTLP JSON to {target}" in out
    assert json.loads(target.read_text()) == doc  # a second export: the same bytes


def test_the_profiles_endpoint_and_service_name_are_used(canonical_run: Run, workspace: Path,
                                                         cli: Any) -> None:
    with otlp_receiver() as got:
        _telemetry(workspace, got.url, service_name="class-42")
        code, _, err = cli("--workspace", workspace, "export", "otel", canonical_run.session_id,
                           "--profile", "traced")
    assert code == 0, err
    assert len(got.spans()) == 18 and got.service_names() == {"class-42"}


@pytest.mark.parametrize(("argv", "message"), [
    (["s0099"], "s0099"),
    (["../x"], "invalid session id"),
    (["s0001", "--endpoint", "grpc://collector:4317"], "not an http(s) URL"),
    (["s0001", "--out", "."], "not a regular file"),
    (["s0001", "--out", "missing/dir/spans.json"], "missing/dir/spans.json"),
    (["s0001", "--out", "a\0b"], "--out"),
])
def test_bad_input_exits_2_naming_it(canonical_run: Run, workspace: Path, cli: Any,
                                     argv: list[str], message: str) -> None:
    code, _, err = cli("--workspace", workspace, "export", "otel", *argv)
    assert code == 2 and message in err, err


def test_endpoint_and_out_are_one_or_the_other(workspace: Path, cli: Any) -> None:
    with pytest.raises(SystemExit) as exit_:
        cli("--workspace", workspace, "export", "otel", "s0001", "--endpoint", "http://x/v1/traces",
            "--out", "f.json")
    assert exit_.value.code == 2


def test_an_unreachable_collector_exits_1_naming_session_and_endpoint(canonical_run: Run,
                                                                      workspace: Path, cli: Any) -> None:
    url = closed_port_url()
    code, _, err = cli("--workspace", workspace, "export", "otel", canonical_run.session_id,
                       "--endpoint", url)
    assert code == 1
    assert f"session {canonical_run.session_id} to {url} failed" in err


# -- live export ---------------------------------------------------------------------------
def test_live_export_sends_the_same_spans_as_the_export_afterwards(workspace: Path) -> None:
    with otlp_receiver() as got:
        _telemetry(workspace, got.url)
        rt = Runtime.from_workspace(workspace, profile="traced")
        result = rt.handle_user_request(CANONICAL)
        assert result.value.ok
        live = got.spans()  # flushed at session close: all there when the request returns
    sid = result.value.session_id
    assert len(live) == 18
    assert _ids(live) == _json_ids(otlp_json(readable_spans(session_records(rt, sid))))


def test_live_spans_are_handed_over_as_each_one_ends(workspace: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """Each span goes to the batch processor when the event that ends it is logged, not all
    at the close (the processor sends them on its own schedule)."""
    logged = [0]
    handed: dict[str, int] = {}
    on_end = BatchSpanProcessor.on_end

    def spy(self: BatchSpanProcessor, span: Any) -> None:
        handed.setdefault(span.name, logged[0])
        on_end(self, span)

    monkeypatch.setattr(BatchSpanProcessor, "on_end", spy)
    memory = InMemorySpanExporter()
    rt = Runtime.from_workspace(workspace)
    count = lambda ev: logged.__setitem__(0, ev.seq)  # noqa: E731 - a gate: runs as each event is logged
    with rt.watching(count, before=True), rt.watching(LiveExport(TelemetryConfig("http://127.0.0.1:1/"),
                                                                 exporter=memory)):
        assert rt.handle_user_request(CANONICAL).value.ok
    assert len(memory.get_finished_spans()) == 18  # flushed at the close
    assert handed["execute_tool echo"] == 20  # tool.result, the 20th event, ended it
    assert handed["invoke_agent lead"] == 10  # the planner's transition ended the lead's turn
    assert handed["session s0001"] == 32


def test_an_unreachable_collector_never_fails_the_run(workspace: Path) -> None:
    url = closed_port_url()
    _telemetry(workspace, url)
    rt = Runtime.from_workspace(workspace, profile="traced")
    start = time.monotonic()
    result = rt.handle_user_request(CANONICAL)
    took = time.monotonic() - start
    assert result.value.ok and len(rt.events(result.value.session_id)) == 32
    assert took < CLOSE_TIMEOUT_S + 2.0  # the close waited at most its bound (plus the run)
    live = next(w for w in rt.watchers if isinstance(w, LiveExport))
    assert live.failures and all(url in f and "s0001" in f for f in live.failures)


def test_a_slow_collector_costs_the_close_at_most_its_bound(workspace: Path) -> None:
    """The exporter would retry a closed port for 30 s; the session waits `close_timeout_s`."""
    url = closed_port_url()
    rt = Runtime.from_workspace(workspace)
    live = LiveExport(TelemetryConfig(url), export_timeout_s=30.0, close_timeout_s=0.5)
    start = time.monotonic()
    with rt.watching(live):
        assert rt.handle_user_request(CANONICAL).value.ok
    assert time.monotonic() - start < 3.0
    assert any(f"not flushed to {url} within 0.5 s" in f for f in live.failures)


def test_a_telemetry_profile_without_the_extra_is_refused_naming_the_field(
        workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import sys
    _telemetry(workspace, "http://127.0.0.1:4318/v1/traces")
    monkeypatch.setitem(sys.modules, "opentelemetry.sdk.trace", None)
    with pytest.raises(ContractError) as err:
        Runtime.from_workspace(workspace, profile="traced")
    (problem,) = err.value.problems
    assert problem.field == "profiles.traced.telemetry" and "agentos-kernel[otel]" in problem.message



def test_a_failure_inside_the_live_exporter_is_reported_never_raised_into_the_run() -> None:
    from agentos_kernel import Event

    live = LiveExport(TelemetryConfig("http://127.0.0.1:1/v1/traces"), exporter=InMemorySpanExporter())
    live(Event("x-e1", "x", "not a time", "session.start", "user", {}, seq=1))  # must not raise
    assert len(live.failures) == 1 and "session x: event x-e1: ValueError" in live.failures[0]

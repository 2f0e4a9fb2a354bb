"""OpenTelemetry export of a session (issue 14): the span tree of otel_spans.py as the SDK's
spans, sent over OTLP/HTTP or written as OTLP JSON.

The SDK (`opentelemetry-sdk`, `opentelemetry-exporter-otlp-proto-http`: the `otel` extra) is
imported only by the functions here that need it, never by `import agentos_kernel` or
`agentos --help`. Spans are built as finished `ReadableSpan`s rather than through a Tracer:
their start and end times and their parents come from the log, not from the clock or a
context at export time, and their ids are derived from the log (otel_spans.py), so an export
is reproducible and a re-export is the same trace. A Tracer with a custom IdGenerator could
fix the ids but not the recorded times, and would need the ids fed to it out of band.
"""

from __future__ import annotations

import base64
import os
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from .. import __version__
from .otel_records import SCHEMA_URL, capture_content
from .otel_spans import SpanRecord, spans_of

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import ReadableSpan

    from ..kernel import Runtime

EXTRA = "otel"
SCOPE = "agentos_kernel.telemetry.otel"
DEFAULT_SERVICE = "agentos-kernel"
EXPORT_TIMEOUT_S = 5.0
"""How long one OTLP/HTTP export may take, retries included (the exporter's own deadline)."""


class OtelUnavailable(ImportError):
    """The OpenTelemetry SDK is not installed; the message names the extra to install."""


class ExportFailed(RuntimeError):
    """The collector did not take the spans; the message names the session and endpoint."""


def require_sdk() -> None:
    """Raise OtelUnavailable (naming the extra) unless the SDK and OTLP exporter import."""
    try:
        import opentelemetry.exporter.otlp.proto.http.trace_exporter
        import opentelemetry.sdk.trace  # noqa: F401
    except ImportError as exc:
        raise OtelUnavailable(
            f"OpenTelemetry export needs the {EXTRA!r} extra ({exc.name or exc} is missing): "
            f"pip install 'agentos-kernel[{EXTRA}]' (or pip install -e \".[{EXTRA}]\" in a checkout)"
        ) from None


def readable_spans(records: Iterable[SpanRecord], service_name: str = DEFAULT_SERVICE
                   ) -> list[ReadableSpan]:
    """The SDK's finished spans for `records`, under one resource (`service.name`)."""
    require_sdk()
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import Event as SpanEventSdk
    from opentelemetry.sdk.trace import ReadableSpan
    from opentelemetry.sdk.util.instrumentation import InstrumentationScope
    from opentelemetry.trace import SpanContext, SpanKind, Status, StatusCode, TraceFlags

    # Resource(...) rather than Resource.create(): the SDK's version and the process's env
    # would make two exports of one log differ.
    resource = Resource({"service.name": service_name, "service.version": __version__}, SCHEMA_URL)
    scope = InstrumentationScope(SCOPE, __version__, SCHEMA_URL)
    flags = TraceFlags(TraceFlags.SAMPLED)
    out = []
    for r in records:
        ctx = SpanContext(r.trace_id, r.span_id, is_remote=False, trace_flags=flags)
        parent = (SpanContext(r.trace_id, r.parent_span_id, is_remote=False, trace_flags=flags)
                  if r.parent_span_id is not None else None)
        status = Status(StatusCode.ERROR, r.error) if r.error is not None else Status(StatusCode.UNSET)
        out.append(ReadableSpan(
            name=r.name, context=ctx, parent=parent, resource=resource, attributes=r.attributes,
            events=[SpanEventSdk(e.name, e.attributes, e.ts_ns) for e in r.events],
            kind=SpanKind.CLIENT if r.kind == "llm" else SpanKind.INTERNAL, status=status,
            start_time=r.start_ns, end_time=r.end_ns, instrumentation_scope=scope))
    return out


def session_records(rt: Runtime, session_id: str) -> list[SpanRecord]:
    """The spans of a session, read through the runtime's event store and redacted again
    with its profile's redaction (a log from another implementation, or written before a
    pattern was added, is cleaned on the way out too); tool arguments and results only when
    content capture is on (capture_content). KeyError names an unknown session; ValueError
    a bad CAPTURE_ENV value."""
    from ..store.redaction import Redactor

    telemetry = rt.profile.telemetry
    content = capture_content(telemetry.capture_content if telemetry else None, os.environ)
    redact = Redactor.of(**rt.redaction())
    records = spans_of(rt.store.read(session_id), redact, content)
    if not records:
        raise KeyError(f"session {session_id!r} has no events to export")
    return records


def export_otlp(spans: Sequence[ReadableSpan], endpoint: str, *, what: str = "spans",
                timeout_s: float = EXPORT_TIMEOUT_S) -> None:
    """Send `spans` to an OTLP/HTTP traces endpoint; ExportFailed names `what` and the endpoint."""
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.trace.export import SpanExportResult

    exporter = OTLPSpanExporter(endpoint=endpoint, timeout=timeout_s)
    try:
        result = exporter.export(spans)
    finally:
        exporter.shutdown()
    if result is not SpanExportResult.SUCCESS:
        raise ExportFailed(f"exporting {what} to {endpoint} failed: the collector did not accept "
                           f"them within {timeout_s:g} s (is an OTLP/HTTP receiver listening there?)")


def otlp_json(spans: Sequence[ReadableSpan]) -> dict[str, Any]:
    """The OTLP/JSON form of `spans` (an ExportTraceServiceRequest: what `curl -H
    'Content-Type: application/json' --data @file http://collector:4318/v1/traces` takes):
    ids as hex, enums as numbers, as the OTLP spec's JSON encoding says."""
    from google.protobuf.json_format import MessageToDict
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    doc = MessageToDict(encode_spans(spans), use_integers_for_enums=True)
    for rs in doc.get("resourceSpans", []):
        for ss in rs.get("scopeSpans", []):
            for span in ss.get("spans", []):
                _hex_ids(span)
                for link in span.get("links", []):
                    _hex_ids(link)
    return doc


def _hex_ids(obj: dict[str, Any]) -> None:
    # protobuf's JSON mapping writes bytes as base64; OTLP/JSON wants trace and span ids as hex
    for key in ("traceId", "spanId", "parentSpanId"):
        if key in obj:
            obj[key] = base64.b64decode(obj[key]).hex()


__all__ = ["EXPORT_TIMEOUT_S", "ExportFailed", "OtelUnavailable", "export_otlp", "otlp_json",
           "readable_spans", "require_sdk", "session_records"]

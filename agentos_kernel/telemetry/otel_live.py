"""Live OpenTelemetry export while a session runs (a profile's `telemetry:`): a watcher on
`Runtime.watchers` that builds each session's spans as its events are logged (otel_spans.py,
the same spans `agentos export otel` makes afterwards) and hands each finished span to a
BatchSpanProcessor, which sends them over OTLP/HTTP from its own thread.

The session never waits on the collector beyond a bound: spans are queued, not sent, as
events are logged; at session.close the processor is flushed and shut down on a helper
thread that the session waits for at most `close_timeout_s`. An unreachable or slow
collector costs at most that (and a warning naming the endpoint), never the run: nothing
here raises into the session log's append.
"""

from __future__ import annotations

import logging
import os
import threading
from typing import TYPE_CHECKING, Any, cast

from ..config import RuntimeProfile, TelemetryConfig
from ..errors import ContractError, Problem
from ..store.events import Event
from .otel import EXPORT_TIMEOUT_S, OtelUnavailable, readable_spans, require_sdk
from .otel_records import capture_content
from .otel_spans import SpanBuilder, SpanRecord

if TYPE_CHECKING:  # the otel extra is imported on use
    from opentelemetry.sdk.trace.export import SpanExporter

log = logging.getLogger(__name__)
CLOSE_TIMEOUT_S = 3.0
"""Longest a session's close waits for its spans to be flushed to the collector."""


class LiveExport:
    """Watcher for `Runtime.watching` / `Runtime.watchers`: each session's spans, exported as
    they end; flushed and shut down when the session closes."""

    def __init__(self, telemetry: TelemetryConfig, *, export_timeout_s: float = EXPORT_TIMEOUT_S,
                 close_timeout_s: float = CLOSE_TIMEOUT_S, exporter: Any = None) -> None:
        require_sdk()
        self.telemetry = telemetry
        self.content = capture_content(telemetry.capture_content, os.environ)
        """Whether tool arguments and results are exported (read once, when the runtime starts)."""
        self.export_timeout_s = export_timeout_s
        self.close_timeout_s = close_timeout_s
        self._exporter = exporter
        """A SpanExporter to use instead of OTLP/HTTP to otlp_endpoint (tests: in-memory)."""
        self._sessions: dict[str, tuple[SpanBuilder, Any]] = {}
        self._lock = threading.Lock()
        self.failures: list[str] = []
        """What went wrong, one line each (also logged as warnings); the sessions ran anyway."""

    def __call__(self, ev: Event) -> None:
        try:
            with self._lock:
                self._feed(ev)
        except Exception as exc:  # a watcher that raises would fail the session's append
            self._failed(f"session {ev.session_id}: event {ev.id}: {type(exc).__name__}: {exc}")

    def _feed(self, ev: Event) -> None:
        entry = self._sessions.get(ev.session_id)
        if entry is None:
            entry = self._sessions[ev.session_id] = (SpanBuilder(content=self.content),
                                                          self._processor())
        builder, processor = entry
        records = builder.feed(ev)
        if ev.type == "session.close":
            records += builder.finish()
        self._send(processor, records)
        if ev.type == "session.close":
            del self._sessions[ev.session_id]
            self._shutdown(ev.session_id, processor)

    def _processor(self) -> Any:
        from opentelemetry.sdk.trace.export import BatchSpanProcessor

        exporter = self._exporter
        if exporter is None:
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
            exporter = OTLPSpanExporter(endpoint=self.telemetry.otlp_endpoint,
                                        timeout=self.export_timeout_s)
        # _Reporting has SpanExporter's three methods; the SDK's class is nominal, not a Protocol
        return BatchSpanProcessor(cast("SpanExporter", _Reporting(exporter, self)))

    def _send(self, processor: Any, records: list[SpanRecord]) -> None:
        for span in readable_spans(records, self.telemetry.service_name):
            processor.on_end(span)

    def _shutdown(self, session_id: str, processor: Any) -> None:
        done = threading.Thread(target=processor.shutdown, daemon=True,
                                name=f"agentos-otel-close-{session_id}")
        done.start()
        done.join(self.close_timeout_s)
        if done.is_alive():
            self._failed(f"session {session_id}: its spans were not flushed to "
                         f"{self.telemetry.otlp_endpoint} within {self.close_timeout_s:g} s; "
                         "the session closed without waiting longer")

    def close(self) -> None:
        """End the spans of sessions still open (a run cut short) and flush them."""
        with self._lock:
            sessions, self._sessions = self._sessions, {}
        for sid, (builder, processor) in sessions.items():
            try:
                self._send(processor, builder.finish())
            finally:
                self._shutdown(sid, processor)

    def _failed(self, what: str) -> None:
        self.failures.append(what)
        log.warning("OpenTelemetry live export: %s", what)


class _Reporting:
    """The exporter, with each batch the collector did not take reported in `failures`."""

    def __init__(self, exporter: Any, owner: LiveExport) -> None:
        self.exporter, self.owner = exporter, owner

    def export(self, spans: Any) -> Any:
        from opentelemetry.sdk.trace.export import SpanExportResult

        result = self.exporter.export(spans)
        if result is not SpanExportResult.SUCCESS:
            sessions = sorted({str(s.attributes.get("agentos.session.id")) for s in spans})
            self.owner._failed(f"session {', '.join(sessions)}: {len(spans)} span(s) not accepted by "
                               f"{self.owner.telemetry.otlp_endpoint}")
        return result

    def shutdown(self) -> None:
        self.exporter.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return bool(self.exporter.force_flush(timeout_millis))


def watcher_for(config_file: str, profile: RuntimeProfile) -> LiveExport:
    """The live exporter for a profile with `telemetry:`; ContractError naming the profile's
    field when the `otel` extra is not installed (never a run that silently exports nothing)."""
    assert profile.telemetry is not None
    try:
        return LiveExport(profile.telemetry)
    except (OtelUnavailable, ValueError) as exc:  # ValueError: a bad CAPTURE_ENV value
        raise ContractError([Problem(config_file, f"profiles.{profile.name}.telemetry", str(exc))]) from None

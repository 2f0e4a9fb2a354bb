"""The values of the OpenTelemetry export (issue 14), without the SDK: a finished span
(`SpanRecord`) and the log events inside it (`SpanEvent`), the ids derived from the log, and
the small conversions the span builder (otel_spans.py) needs.

Ids are derived, never random: the trace id from the session id and its first event, a span
id from the trace id and the id of the event that starts the span. Exporting the same log
twice gives the same spans, so a collector sees a re-export as the same trace.
"""

from __future__ import annotations

import calendar
import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from ..store.events import Event, canonical

AttrValue = str | bool | int | float | tuple[str, ...]
SCHEMA_URL = "https://opentelemetry.io/schemas/1.41.0"
"""The semantic conventions the spans follow (resource and scope `schemaUrl`): 1.41.0, the last
release that held the GenAI conventions before they moved to their own repository."""
CAPTURE_ENV = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
"""The GenAI instrumentations' switch for content capture (tool call arguments and results)."""
# Its values: the first instrumentations' true/false, and the newer modes; content is only
# ever put on spans here, so EVENT_ONLY captures nothing.
_CAPTURE_VALUES = {"true": True, "span_only": True, "span_and_event": True,
                   "false": False, "no_content": False, "event_only": False}
TURN_STATES = frozenset({"LEAD", "ADVISE", "PLAN", "WORK", "REVIEW", "REWORK"})
MAX_TEXT = 4096
"""Longest string attribute (a payload as JSON, tool arguments); longer ones are cut, marked."""
# The registry key of each adapter -> gen_ai.provider.name (well-known values where one fits).
PROVIDER_NAMES = {"anthropic": "anthropic", "openai": "openai", "openai_compat": "openai",
                  "gemini": "gcp.gemini", "scripted": "agentos.scripted", "cassette": "agentos.cassette"}


@dataclass(frozen=True)
class SpanEvent:
    """One event of the log recorded inside a span (OpenTelemetry's span event)."""

    name: str
    """The event's type, e.g. `plan.created`."""
    ts_ns: int
    """The event's `ts` in nanoseconds since the epoch."""
    attributes: dict[str, AttrValue]
    """agentos.event.id, .seq, .actor, .layer, the parent id, the payload as JSON."""


@dataclass(frozen=True)
class SpanRecord:
    """One finished span, ready for an exporter (otel.py makes it a ReadableSpan)."""

    name: str
    """`session s0001`, `invoke_agent planner`, `chat scripted-1`, `execute_tool echo`, `hook PreToolUse`."""
    kind: str
    """session, agent, workflow, llm, tool or hook."""
    trace_id: int
    """128-bit trace id, derived from the session."""
    span_id: int
    """64-bit span id, derived from the trace and the event that starts the span."""
    parent_span_id: int | None
    """The enclosing span (None for the session's root span)."""
    start_ns: int
    """`ts` of the event that starts the span."""
    end_ns: int
    """`ts` of the event that ends it (never before start_ns)."""
    attributes: dict[str, AttrValue]
    """agentos.* ids of its events, GenAI semantic conventions (gen_ai.*), error.type."""
    events: tuple[SpanEvent, ...] = ()
    """The log's events recorded inside this span, in log order."""
    error: str | None = None
    """Status ERROR with this description (fail-closed code first), else None (status unset)."""


def ts_ns(ts: str) -> int:
    """An event's ISO-8601 `ts` in integer nanoseconds (exact to the microsecond)."""
    dt = datetime.fromisoformat(ts.replace("Z", "+00:00"))
    return calendar.timegm(dt.utctimetuple()) * 10**9 + dt.microsecond * 1000


def derived_id(bits: int, *parts: str) -> int:
    digest = hashlib.sha256("\0".join(parts).encode()).digest()
    return int.from_bytes(digest[: bits // 8], "big") or 1  # 0 is the invalid id


def trace_id_of(first: Event) -> int:
    """The trace id of a session: its id and its first event (its chain when it has one)."""
    body = first.chain or hashlib.sha256(canonical(first.to_dict())).hexdigest()
    return derived_id(128, "agentos-trace", first.session_id, first.id, body)


def capture_content(setting: bool | None, environ: Mapping[str, str]) -> bool:
    """Whether spans carry `gen_ai.tool.call.arguments` and `.result` (content, which the
    GenAI conventions make opt-in): the profile's `telemetry.capture_content` when it says,
    else CAPTURE_ENV, else off. ValueError names the variable for a value it does not take."""
    if setting is not None:
        return setting
    raw = environ.get(CAPTURE_ENV, "").strip()
    if not raw:
        return False
    if raw.lower() not in _CAPTURE_VALUES:
        raise ValueError(f"{CAPTURE_ENV}={raw!r} is not one of true, false, NO_CONTENT, SPAN_ONLY, "
                         "EVENT_ONLY, SPAN_AND_EVENT; set one of them or unset it")
    return _CAPTURE_VALUES[raw.lower()]


def json_text(value: Any) -> str:
    s = value if isinstance(value, str) else canonical(value).decode()
    return s if len(s) <= MAX_TEXT else s[:MAX_TEXT] + f"...[{len(s) - MAX_TEXT} more chars]"


@dataclass
class OpenSpan:
    """A span still open while its session's events arrive (the builder's working state)."""

    name: str
    """The span's name."""
    kind: str
    """session, agent, workflow, llm, tool or hook."""
    span_id: int
    """Its derived id."""
    parent: int | None
    """The enclosing span's id (None for the root)."""
    start_ns: int
    """`ts` of its start event."""
    attrs: dict[str, AttrValue]
    """Attributes so far (the end event adds its own)."""
    events: list[SpanEvent] = field(default_factory=list)
    """Log events recorded inside it so far."""
    error: str | None = None
    """Status ERROR description, once something in it failed."""

    def fail(self, code: str, description: str) -> None:
        """Mark it ERROR with `code` (error.type), unless an earlier failure already did."""
        if self.error is None:  # the first failure is the root cause; later ones report it
            self.error = description
            self.attrs["error.type"] = code

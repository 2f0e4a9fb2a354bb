"""What an AgentRun's text and HTML read from its events, taken once (issue 24: the displayed
`%agent` within 15 % of the request).

A run's rows need little of its events: the layer counts, the failing events (seq, layer,
actor, code), the Plan-Work-Review path and the usage (model calls, tokens, cost). `of_events`
takes them from a run's `events` and its snapshot (the fold), as the rows always did.
`of_logged` takes them straight from the events as the runtime appended them, before they
are made into what reading the log back gives (api.py makes those only when asked for) and
without folding them: only when every value it reads is one that reading back leaves as it
is (an exact str, int or finite float; the containers exact dicts and lists), so its answer
is `of_events`'s on the read-back events, and a fold of those could not raise where the
rows would be computed (the reads that can raise are checked: llm.response's usage,
schema.violation's first violation, event.amended's target). Anything else: None, and the
caller takes the read-back path (tests/jupyter/test_run_facts.py compares the two).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from ..store.events import Event, canonical
from ..store.recorder import layer_of
from ..store.replay.fold import Snapshot
from .layers import FAILURE_TYPES, layer_counts

NO_CODE = object()
"""A failing event's code when its payload is not an object (equal to no error's code)."""


@dataclass(frozen=True)
class Failure:
    """An event that recorded something failing closed, as the run's rows name it."""

    seq: int | None
    """Its position in the log."""
    layer: str
    """Its layer (`layer_of`)."""
    actor: str
    """Who logged it."""
    name: str
    """Its code, or SCHEMA_INVALID (schema id) for a schema.violation."""
    code: object
    """Its payload's `code` (None when absent; NO_CODE when the payload is not an object)."""


@dataclass(frozen=True)
class RunFacts:
    """What the rows of a run show, from its events."""

    total: int
    """Events in the session."""
    counts: dict[str, int]
    """Events per layer, L1..L8 (`layer_counts`)."""
    failures: tuple[Failure, ...]
    """The failing events, in log order."""
    path: tuple[Any, ...] | None
    """agent.transition's `to`, in order (None when not asked for: a cycle's rows)."""
    llm_calls: int
    """The snapshot's llm_calls."""
    input_tokens: int
    """The snapshot's cost.input_tokens."""
    output_tokens: int
    """The snapshot's cost.output_tokens."""
    cost_usd: float
    """The snapshot's cost.cost_usd."""

    def failure(self, code: object) -> Failure | None:
        """The failing event whose code is `code` (the first), else the first failing event."""
        return next((f for f in self.failures if f.code == code), None) or next(iter(self.failures), None)


def failure_name(ev: Event) -> str:
    """How the rows name a failing event."""
    p = ev.payload if isinstance(ev.payload, dict) else {}
    if ev.type == "schema.violation":
        return f"SCHEMA_INVALID ({p.get('schema_id')})"
    return str(p.get("code") or ev.type)


def _failure(ev: Event) -> Failure:
    code = ev.payload.get("code") if isinstance(ev.payload, dict) else NO_CODE
    return Failure(ev.seq, layer_of(ev), ev.actor, failure_name(ev), code)


def of_events(events: Sequence[Event], snapshot: Callable[[], Snapshot], *, path: bool) -> RunFacts:
    """The facts from a run's events and its snapshot (folded first: what it raises, the
    rows raise), as AgentRun's rows have always read them."""
    snap = snapshot()
    counts = layer_counts(events)
    failures = tuple(_failure(e) for e in events if e.type in FAILURE_TYPES)
    steps = tuple(e.payload.get("to") for e in events if e.type == "agent.transition") if path else None
    cost = snap.cost
    return RunFacts(len(events), counts, failures, steps, snap.llm_calls, cost.input_tokens,
                    cost.output_tokens, cost.cost_usd)


def _text(value: object) -> bool:
    return value is None or type(value) is str


def of_logged(events: Sequence[Event]) -> RunFacts | None:
    """`of_events(read_back(events), ...)` from the events as appended, or None when a value
    it reads might read back otherwise (see the module's docstring). The envelopes are the
    caller's to check (api.py: exact str and int fields)."""
    failures, steps = [], []
    calls = tokens_in = tokens_out = 0
    cost = 0.0
    for ev in events:
        p, t = ev.payload, ev.type
        if type(p) is not dict:
            return None
        if t == "llm.response":
            usage = p.get("usage", {})
            if type(usage) is not dict:
                return None
            i, o, c = usage.get("input_tokens", 0), usage.get("output_tokens", 0), usage.get("cost_usd", 0)
            if type(i) is not int or type(o) is not int or not (
                    type(c) is int or (type(c) is float and math.isfinite(c))):
                return None
            # The fold's arithmetic (fold._Fold.response), on the values it would read back.
            tokens_in += i
            tokens_out += o
            cost = round(cost + float(c), 8)
            calls += 1
        elif t == "agent.transition":
            to = p.get("to")
            if type(to) is not str:
                return None
            steps.append(to)
        elif t == "event.amended" and not _text(p.get("target_id")):
            return None
        if t in FAILURE_TYPES:
            if not _text(p.get("code")) or (t == "domain.error" and not _text(p.get("layer", "L4"))):
                return None
            if t == "schema.violation":
                found = p.get("violations")
                if not _text(p.get("schema_id")) or not (found is None or (
                        type(found) is list and (not found or type(found[0]) is dict))):
                    return None
            failures.append(_failure(ev))
    return RunFacts(len(events), layer_counts(events), tuple(failures), tuple(steps), calls,
                    tokens_in, tokens_out, cost)


def own_events(logged: list[Event], sid: str) -> list[Event] | None:
    """The session's events as appended, when they are its whole log (seqs 1..N, as a new
    session's are); None to read the log back instead."""
    events = [e for e in logged if e.session_id == sid]
    if not events or any(e.seq != i for i, e in enumerate(events, 1)):
        return None
    return events


def plain_fields(events: list[Event]) -> bool:
    """Every field but the payload a plain str/int/None as SessionLog.append makes them,
    which reading back leaves as they are."""
    for e in events:
        if (type(e.id) is not str or type(e.session_id) is not str or type(e.ts) is not str
                or type(e.type) is not str or type(e.actor) is not str or type(e.chain) is not str
                or type(e.schema_version) is not str or type(e.seq) is not int
                or (e.parent_id is not None and type(e.parent_id) is not str)):
            return False
    return True


def whole_log(logged: list[Event], sid: str) -> tuple[Event, ...] | None:
    """The session's events as appended (`own_events`) made into what reading its log back gives.
    Each line holds its event's canonical bytes (SessionLog.append), so each is made from
    those bytes as reading the line back would (keys in their stored order, a NaN as null),
    without reading the file (tests/jupyter/test_agent_events.py compares them): the run's
    payloads encoded and decoded at once; the other fields kept when `plain_fields` (anything
    else: whole events, as read)."""
    events = own_events(logged, sid)
    if events is None:
        return None
    if not plain_fields(events):
        return tuple(map(Event.trusted, orjson.loads(canonical([vars(e) for e in events]))))
    return made_events(events, canonical([e.payload for e in events]))


def made_events(events: list[Event], payloads: bytes) -> tuple[Event, ...]:
    """`events` (`plain_fields`) with the payloads decoded from `payloads`, their canonical bytes."""
    out = []
    new = object.__new__
    for e, payload in zip(events, orjson.loads(payloads), strict=True):
        # What Event.trusted(dict(vars(e), payload=payload)) makes (a new Event whose
        # __dict__ holds the fields, in their order), without the intermediate dict.
        made = new(Event)
        fields = made.__dict__
        fields.update(e.__dict__)
        fields["payload"] = payload
        out.append(made)
    return tuple(out)

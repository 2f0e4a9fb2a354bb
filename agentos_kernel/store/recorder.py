"""The one writer of a session's log: every payload is checked against the schema of its
event type before it is appended (spec: "event payload는 event type에 맞는 schema로 routing").

Schema violations and domain errors found at any boundary are logged here *before* the
`Err` is returned to the caller, so nothing fails silently (I-3, audit completeness).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from hashlib import sha256
from typing import Any

import orjson

from ..clock import Clock, Ids
from ..errors import DomainError, Err, InvariantViolation, Result
from ..schemas.registry import SchemaRegistry, Violation, unloggable
from .events import Event, EventStore
from .redaction import Redactor

_encode, _SORTED = orjson.dumps, orjson.OPT_SORT_KEYS
"""events.canonical, called without the call around it (once per event)."""

# Event type -> schema id of its payload. Role handoffs use the role schemas directly.
EVENT_SCHEMAS: dict[str, str] = {
    "session.start": "event_session_start_v1",
    "session.close": "event_session_close_v1",
    "session.forked": "event_session_forked_v1",
    "hook.fired": "event_hook_fired_v1",
    "skill.invoke": "event_skill_invoke_v1",
    "skill.complete": "event_skill_complete_v1",
    "skill.skipped": "event_skill_skipped_v1",
    "agent.transition": "event_agent_transition_v1",
    "llm.request": "event_llm_request_v1",
    "llm.response": "event_llm_response_v1",
    "llm.error": "event_llm_error_v1",
    "tool.invoke": "event_tool_invoke_v1",
    "tool.result": "event_tool_result_v1",
    "schema.violation": "event_schema_violation_v1",
    "domain.error": "event_domain_error_v1",
    "human.escalation": "event_human_escalation_v1",
    "context.compacted": "event_context_compacted_v1",
    "event.amended": "event_amended_v1",
    "lead.directive": "lead_directive_v1",
    "plan.created": "plan_v1",
    "worker.report": "worker_report_v1",
    "review.result": "review_result_v1",
    "advisor.opinion": "advisor_opinion_v1",
    "scaffold.plan": "scaffold_plan_v1",
    "role.output": "event_role_output_v1",
    "workflow.started": "event_workflow_started_v1",
    "workflow.phase_advanced": "event_workflow_phase_advanced_v1",
    "workflow.policy_gated": "event_workflow_policy_gated_v1",
    "workflow.completed": "event_workflow_completed_v1",
    "workflow.aborted": "event_workflow_aborted_v1",
}

CHECKED_ON_USE = frozenset({"session.forked"})
"""Event types added after workspaces were made with `agentos init`: their payload schema is
required only by the command that writes them (fork), so an older workspace still loads."""

# Which spec layer each event type belongs to (for traces, timelines and the stepper).
LAYERS: dict[str, str] = {
    "session": "L4", "event": "L4", "hook": "L6", "skill": "L5", "agent": "L3",
    "lead": "L3", "plan": "L3", "worker": "L3", "review": "L3", "advisor": "L3",
    "scaffold": "L3", "human": "L3", "role": "L3", "context": "L2", "llm": "L2", "tool": "L1",
    "schema": "L7", "workflow": "L8",
}


def layer_of(event: Event) -> str:
    """The spec layer of an event (a domain.error names its own layer)."""
    return layer_for(event.type, event.payload)


def layer_for(type_: str, payload: Any) -> str:
    """layer_of for an event's type and payload (a log line not made into an Event)."""
    if type_ == "domain.error" and isinstance(payload, dict):
        return str(payload.get("layer", "L4"))
    return LAYERS.get(type_.split(".", 1)[0], "L4")


def failure_code(event: Event) -> str | None:
    """The fail-closed code an event records (domain.error's code; SCHEMA_INVALID for a
    schema.violation), else None. The first such event of a log is its root cause: a later
    HUMAN_ESCALATION or a cascade of retries only reports what that event started."""
    if event.type == "schema.violation":
        return "SCHEMA_INVALID"
    if event.type == "domain.error" and isinstance(event.payload, dict):
        code = event.payload.get("code")
        return code if isinstance(code, str) else None
    return None


_FAILING = frozenset({"schema.violation", "domain.error"})
"""The event types `failure_code` can name a code for (the rest: None, without the call)."""


def root_cause_note(root: tuple[str, int] | None) -> str:
    """` (root cause: GATE_DENIED at event 18)`, or "" when nothing failed closed."""
    return f" (root cause: {root[0]} at event {root[1]})" if root else ""


class SessionLog:
    """Appends checked, numbered, chained events to one session's log."""

    def __init__(
        self,
        store: EventStore,
        schemas: SchemaRegistry,
        clock: Clock,
        ids: Ids,
        session_id: str,
        *,
        seq: int = 0,
        chain: str | None = None,
        secrets: tuple[str, ...] = (),
        patterns: tuple[str, ...] = (),
        pii: tuple[str, ...] = (),
        watchers: Sequence[Callable[[Event], None]] = (),
        gates: Sequence[Callable[[Event], None]] = (),
    ) -> None:
        self.store = store
        self.schemas = schemas
        self.clock = clock
        self.ids = ids
        self.session_id = session_id
        self.seq = seq
        self._chain = chain
        self._link = chain.encode() if chain else b""
        """`_chain` as bytes: what the next line's chain hashes first."""
        self._valid: dict[str, Callable[[Any], bool]] = {}
        self._valid_in = schemas  # the registry `_valid`'s checks come from
        self._heads: dict[str, bytes] = {}
        self.redact = Redactor.of(secrets, patterns, pii)
        """What every payload, and every error this log returns, goes through first."""
        self._scrub = self.redact.bound()
        self.watchers = watchers
        """Called with each event once it is in the log (a live trace); read at each append,
        so a list the owner changes is seen at once."""
        self.gates = gates
        """Called with each event just before it is appended (a live stepper pauses here);
        a gate that raises leaves the log as it was (nothing appended, seq not used)."""
        self.root_cause: tuple[str, int] | None = None
        """(code, seq) of the first event that failed closed (see `failure_code`), if any."""

    @classmethod
    def resume(cls, store: EventStore, schemas: SchemaRegistry, clock: Clock, ids: Ids,
               session_id: str, *, secrets: tuple[str, ...] = (),
               patterns: tuple[str, ...] = (), pii: tuple[str, ...] = ()) -> SessionLog:
        """Continue an existing log (for `event.amended`), after its last event."""
        last = store.tail(session_id)
        if last is None:
            raise KeyError(f"no session {session_id!r}")
        return cls(store, schemas, clock, ids, session_id, seq=last.seq or 0, chain=last.chain,
                   secrets=secrets, patterns=patterns, pii=pii)

    def append(self, type: str, actor: str, payload: Any, parent_id: str | None = None) -> Event:
        """Redact `payload`, check it against its type's schema, then append. A bad payload
        here is a runtime bug (every caller builds payloads itself), so it raises."""
        if self._valid_in is not self.schemas:  # the registry was swapped (mcp_serve's refresh)
            self._valid, self._valid_in = {}, self.schemas
        valid = self._valid.get(type) or self._validity(type)
        payload = self._scrub(payload)
        try:
            ok = valid(payload)
        except ValueError:  # not JSON: `violations` names where
            ok = False
        if not ok:
            schema_id = EVENT_SCHEMAS[type]
            found = self.schemas.violations(payload, schema_id)
            if found:
                raise InvariantViolation(
                    f"{type} payload violates {schema_id}: {found[0].path}: {found[0].message}"
                )
        prev = self._chain
        seq = self.seq = self.seq + 1
        body = {
            "id": self.ids.event_id(self.session_id, seq),
            "session_id": self.session_id,
            "ts": self.clock.now(),
            "type": type,
            "actor": actor,
            "payload": payload,
            "schema_version": "v1",
            "parent_id": parent_id,
            "seq": seq,
        }
        # Same bytes as events.chain_of(prev, event), without building the event twice; the
        # stored line reuses them (the splice of events.with_chain) instead of encoding the
        # payload once more.
        encoded = _encode(body, option=_SORTED)
        link = self._link
        chain = self._chain = sha256(link + encoded if link else encoded).hexdigest()
        body["chain"] = chain  # the body is not used again: it becomes the event's own
        event = Event.trusted(body)
        if self.gates:
            try:
                for gate in self.gates:
                    gate(event)
            except BaseException:
                self.seq, self._chain = seq - 1, prev
                raise
        head = self._heads.get(actor) or self._head(actor)
        if not encoded.startswith(head):
            raise ValueError("body is not the canonical encoding of an event (actor first)")
        self._link = link = chain.encode()
        self.store.append(event, b'%s,"chain":"%s"%s' % (head, link, encoded[len(head):]))
        if self.root_cause is None and type in _FAILING and (code := failure_code(event)) is not None:
            self.root_cause = (code, seq)
        for watch in self.watchers:
            watch(event)
        return event

    def _validity(self, type: str) -> Callable[[Any], bool]:
        """The compiled check of `type`'s payload schema, looked up once per session (the
        registry's `is_valid`; `violations` only runs when it says no)."""
        schema_id = EVENT_SCHEMAS.get(type)
        if schema_id is None:
            raise InvariantViolation(f"event type {type!r} has no payload schema in EVENT_SCHEMAS")
        valid = self._valid[type] = self.schemas.validity(schema_id)
        return valid

    def _head(self, actor: str) -> bytes:
        """`{"actor":<actor>`: how every canonical line of `actor` starts (its first key)."""
        head = self._heads[actor] = b'{"actor":' + _encode(actor)
        return head

    def check(self, payload: Any, schema_id: str, *, where: str, actor: str,
              parent_id: str | None = None, built: bool = False) -> Result[Any]:
        """Validate at a boundary; a violation is logged as `schema.violation` first. Text
        that no log can hold is a violation too, except with `built`: a payload the runtime
        assembled from values already checked (a model request), which it need not scan."""
        result = self.schemas.validate(payload, schema_id, loggable=not built)
        if isinstance(result, Err):
            found = (
                self.schemas.violations(payload, schema_id) or unloggable(payload)
                if schema_id in self.schemas else [Violation("/", result.error.message)]
            )
            self.append("schema.violation", actor, {
                "schema_id": schema_id,
                "where": where,
                "violations": [{"path": v.path, "message": v.message} for v in found[:20]],
            }, parent_id)
            return Err(replace(result.error, message=self.redact(result.error.message),
                               session_id=self.session_id))
        return result  # Ok(payload)

    def fail(self, error: DomainError, *, layer: str, actor: str,
             parent_id: str | None = None) -> Err:
        """Log a domain failure as `domain.error` and return it as an `Err` (its message
        redacted like the log's copy: the caller may print it)."""
        error = replace(error, message=self.redact(error.message))
        self.append("domain.error", actor, {
            "code": error.code,
            "kind": error.kind,
            "message": error.message,
            "layer": layer,
            "retryable": error.retryable,
        }, parent_id)
        return Err(replace(error, session_id=self.session_id))

    def close(self) -> None:
        """Release the store's handle on this session."""
        self.store.close(self.session_id)

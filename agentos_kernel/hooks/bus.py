"""The hook bus: runs handlers in priority order and records every decision.

- Handlers get a deep read-only copy of their input (`freeze`): they cannot mutate state.
- A handler that raises, returns something that is not a decision, or runs past its
  timeout is a `deny` (I-3). Timeouts are enforced (runner.py): the handler runs on a worker
  thread that is abandoned when it overruns; only the runtime's own `@bounded` handlers run
  on the calling thread.
- `deny` stops the chain; `transform` replaces the input for the next handler, and its
  output is merged into the input and checked by the caller's `validate` (the next
  boundary's schema) before anything uses it; a transform that fails that check is a deny.
- The bus (the caller of handlers, not the handler) appends one `hook.fired` per decision.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from ..errors import DomainError, Err, ErrorCode, Result, exception_text
from ..schemas.textcheck import shown, text_problem
from ..store.recorder import SessionLog
from .runner import run_with_timeout

HOOK_EVENTS = (
    "SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "SkillStart", "Stop",
    "PreCompact", "WorkflowStart", "PhaseAdvance", "WorkflowComplete",
)


@dataclass(frozen=True)
class HookDecision:
    """A gate's answer (the spec's `HookDecision`)."""

    decision: str
    """allow | deny | transform."""
    reason: str | None = None
    """Why; required for deny."""
    output: Any = None
    """For transform: fields that replace the same fields of the hook input."""


@dataclass(frozen=True)
class HookHandler:
    """A named gate function for one hook event."""

    id: str
    """Name recorded in `hook.fired`."""
    fn: Callable[[Any], HookDecision | dict[str, Any]]
    """Takes the read-only hook input, returns a decision."""
    priority: int = 0
    """Higher runs first."""
    timeout_s: float = 2.0
    """A handler still running after this many seconds is a deny (HOOK_TIMEOUT)."""
    actor: str | None = None
    """Actor of its `hook.fired` events (default `hook:<id>`; a person answering: `human`)."""


def freeze(value: Any) -> Any:
    """A deep read-only copy: dicts become mappingproxies, lists tuples."""
    if type(value) in _SCALARS:  # most of a hook input: no ABC check for them
        return value
    if isinstance(value, Mapping):
        return MappingProxyType({k: freeze(v) for k, v in value.items()})
    if isinstance(value, list | tuple):
        return tuple(freeze(v) for v in value)
    return value


def thaw(value: Any) -> Any:
    """Plain JSON-able copy of a frozen value."""
    if isinstance(value, Mapping):
        return {k: thaw(v) for k, v in value.items()}
    if isinstance(value, tuple | list):
        return [thaw(v) for v in value]
    return value


_SCALARS = frozenset({str, int, float, bool, type(None)})
"""Exact types `freeze` returns as they are (a subclass, which could be a Mapping too, is
looked at)."""

MAX_REASON = 1000
"""Characters of a handler's reason (or error) kept in the decision and the log."""
_MAX_DEPTH = 64  # deeper than any real decision: a self-referencing value stops here


def plain_json(value: Any, depth: int = 0) -> Any:
    """A plain JSON copy of a value a handler (or a tool) returned; TypeError names what is not JSON
    (a non-string key, a set, NaN, an object, a cycle, a string that is not UTF-8 text)."""
    if depth > _MAX_DEPTH:
        raise TypeError(f"nested deeper than {_MAX_DEPTH} levels (a cycle?)")
    if isinstance(value, str):
        if (problem := text_problem(value)) is not None:  # a log cannot hold it (textcheck)
            raise TypeError(f"a string that is not UTF-8 text ({problem})")
        return value
    if value is None or isinstance(value, bool | int):
        return value
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            raise TypeError(f"{value} is not a JSON number")
        return value
    if isinstance(value, Mapping):
        out = {}
        for k, v in value.items():
            if not isinstance(k, str):
                raise TypeError(f"key {k!r} is not a string")
            if (problem := text_problem(k)) is not None:
                raise TypeError(f"key {shown(k)} is not UTF-8 text ({problem})")
            out[k] = plain_json(v, depth + 1)
        return out
    if isinstance(value, list | tuple):
        return [plain_json(v, depth + 1) for v in value]
    raise TypeError(f"{type(value).__name__!r} is not JSON")


def _as_decision(value: Any, log: SessionLog) -> HookDecision | str:
    """Check a handler's return value against hook_decision_v1 (I-5); a string is the
    reason it is not a valid decision. Whatever the value is, this never raises."""
    doc: Mapping[str, Any]  # a decision's fields, or the handler's own mapping
    if type(value) is HookDecision and value.output is None and _text(value.decision) \
            and (value.reason is None or _text(value.reason)):
        # The common answer (the runtime's own handlers): text fields only, so plain_json
        # would return the same dict; the schema and deny checks below still run.
        doc = {"decision": value.decision} if value.reason is None else \
            {"decision": value.decision, "reason": value.reason}
        return _checked(doc, log, value)
    try:
        if isinstance(value, HookDecision):
            doc = {k: v for k, v in (("decision", value.decision), ("reason", value.reason),
                                     ("output", value.output)) if v is not None}
        elif isinstance(value, Mapping):
            doc = value
        else:
            return f"handler returned {type(value).__name__}, not a HookDecision"
        doc = plain_json(doc)
    except Exception as exc:  # a hostile Mapping, a cycle, a value that is not JSON
        return f"not JSON: {exception_text(exc)}"
    return _checked(doc, log)


def _text(value: Any) -> bool:
    return type(value) is str and text_problem(value) is None


def _checked(doc: Mapping[str, Any], log: SessionLog, same: HookDecision | None = None
             ) -> HookDecision | str:
    """`doc` (plain JSON) checked against hook_decision_v1 as a decision; `same`: the
    decision it was made from, handed back when nothing in it changes."""
    found = log.schemas.violations(doc, "hook_decision_v1")
    if found:
        return f"hook_decision_v1: {found[0].path}: {found[0].message}"
    if doc["decision"] == "deny" and not doc["reason"]:
        return "a deny decision needs a non-empty reason"
    reason = _short(doc.get("reason"))
    if same is not None and reason is same.reason:
        return same  # frozen: the checked decision itself
    return HookDecision(doc["decision"], reason, doc.get("output"))


def _short(text: str | None) -> str | None:
    if text is None or len(text) <= MAX_REASON:
        return text
    return text[:MAX_REASON] + f"… ({len(text) - MAX_REASON} more characters)"


@dataclass
class HookBus:
    """Handlers by hook event, run in priority order."""

    handlers: dict[str, list[HookHandler]] = field(default_factory=dict)

    def register(self, event: str, handler: HookHandler) -> None:
        """Add a handler; an unknown event name is a programmer error (KeyError names it)."""
        if event not in HOOK_EVENTS:
            raise KeyError(f"unknown hook event {event!r}; known: {', '.join(HOOK_EVENTS)}")
        hs = self.handlers.setdefault(event, [])
        hs.append(handler)
        hs.sort(key=lambda h: (-h.priority, h.id))

    def registered(self, event: str) -> list[HookHandler]:
        """Handlers for an event, in the order they run."""
        return list(self.handlers.get(event, []))

    def fire(
        self,
        event: str,
        data: dict[str, Any],
        log: SessionLog,
        *,
        validate: Callable[[dict[str, Any]], Result[Any]] | None = None,
        parent_id: str | None = None,
    ) -> tuple[HookDecision, dict[str, Any]]:
        """Run every handler for `event`; return the combined decision and the (possibly
        transformed) input. `validate` checks a transformed input; without it a transform
        is not allowed for this hook and is denied."""
        current = dict(data)
        transformed = False
        handlers = self.handlers.get(event, [])
        if not handlers:
            d = _NO_HANDLER
            self._record(log, event, "(none)", d, 0.0, None, parent_id)
            return d, current
        for h in handlers:
            start = log.clock.mark()
            status, value = run_with_timeout(h.fn, freeze(current), h.timeout_s)
            ms = log.clock.elapsed_ms(start)
            cause = None
            if status == "timeout":
                d, cause = HookDecision("deny", f"handler timed out after {h.timeout_s}s"), "timeout"
            elif status == "error" and isinstance(value, TimeoutError):
                # e.g. a command hook killed at its own timeout (command_hooks.py)
                d, cause = HookDecision("deny", _short(exception_text(value)) or "timed out"), "timeout"
            elif status == "error":
                d = HookDecision("deny", _short(f"handler raised {type(value).__name__}: "
                                                f"{exception_text(value)}"))
                cause = "exception"
            else:
                got = _as_decision(value, log)
                if isinstance(got, str):
                    d, cause = HookDecision("deny", f"invalid decision: {got}"), "invalid"
                else:
                    d = got
            if d.decision == "transform":
                # The decision is recorded before the check, so a schema.violation the check
                # logs follows the transform it rejects (log order = causal order).
                self._record(log, event, h.id, d, ms, None, parent_id, h.actor)
                candidate = {**current, **thaw(d.output)}
                checked: Result[Any] = (
                    validate(candidate) if validate is not None
                    else Err(_no_transform(event))
                )
                if isinstance(checked, Err):
                    d = HookDecision("deny", f"transform rejected: {checked.error.message}")
                    cause = "invalid"
                else:
                    current, transformed = candidate, True
                    continue
            self._record(log, event, h.id, d, ms, cause, parent_id, h.actor)
            if d.decision == "deny":
                return d, current
        final = HookDecision("transform", "transformed", current) if transformed else _ALLOW
        return final, current

    @staticmethod
    def _record(log: SessionLog, event: str, handler: str, d: HookDecision, ms: float,
                cause: str | None, parent_id: str | None, actor: str | None = None) -> None:
        payload: dict[str, Any] = {"hook": event, "handler": handler, "decision": d.decision,
                                   "ms": ms}
        if d.reason:
            payload["reason"] = d.reason
        if d.decision == "transform":
            payload["output"] = thaw(d.output)
        if cause:
            payload["cause"] = cause
        log.append("hook.fired", actor or f"hook:{handler}", payload, parent_id)


_NO_HANDLER, _ALLOW = HookDecision("allow", "no handler registered"), HookDecision("allow")
"""The decisions made without a handler's answer (frozen: one of each serves every fire)."""


def _no_transform(event: str) -> DomainError:
    return DomainError("gate", ErrorCode.GATE_DENIED, f"{event} hooks may not transform")

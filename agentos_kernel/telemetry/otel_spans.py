"""A session's events as a tree of spans (issue 14), without the OpenTelemetry SDK: the pure
half of `agentos export otel` and of live export (otel.py turns these into the SDK's spans).

One root span per session (session.start .. session.close); under it an `invoke_agent` span
per role turn (an agent.transition into a role .. the next one, or the system's transition
to DONE/FAIL/FAILED/ESCALATED, which closes it), an `invoke_workflow` span per L8 cycle;
under those, `chat` spans (llm.request .. the llm.response or llm.error whose parent_id is
the request), `execute_tool` spans (tool.invoke .. its tool.result) and one zero-length span
per hook.fired (a child of its parent_id's span when it names one: PostToolUse under its
tool). Every other event is a span event of the innermost span open when it was logged. So
each event is in exactly one span, as its start, its end or one of its events, and carries
its id and seq there (`agentos.event.id`, `agentos.end_event.id`, ...).

The values and the derived ids are in otel_records.py.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import Any

from ..store.events import Event
from ..store.recorder import failure_code, layer_of
from .otel_records import (
    PROVIDER_NAMES,
    TURN_STATES,
    AttrValue,
    OpenSpan,
    SpanEvent,
    SpanRecord,
    derived_id,
    json_text,
    trace_id_of,
    ts_ns,
)

_CODE = re.compile(r"^([A-Z][A-Z0-9_]+):")


class SpanBuilder:
    """Feed it a session's events in log order; it hands back each span as it ends.

    `feed(event)` returns the spans that event ended (live export sends them at once);
    `finish()` ends what is still open at the last event (a log without session.close:
    those spans get `agentos.unfinished`). `redact` is applied to every string exported;
    tool arguments and results are exported only with `content` (capture_content)."""

    def __init__(self, redact: Callable[[Any], Any] = lambda v: v, content: bool = False) -> None:
        self.redact = redact
        self.content = content
        self.trace_id = 0
        self.session_id = ""
        self.provider, self.model = "", ""
        self.root: OpenSpan | None = None
        self.workflow: OpenSpan | None = None
        self.turn: OpenSpan | None = None
        self.calls: dict[str, OpenSpan] = {}  # open llm and tool spans by their start event's id
        self.span_of: dict[str, int] = {}  # start event id -> span id, for parent_id links
        self.last_ns = 0
        self.root_cause: str | None = None

    # -- the events ---------------------------------------------------------------------
    def feed(self, ev: Event) -> list[SpanRecord]:
        """Place one event; the spans it ended."""
        p = ev.payload if isinstance(ev.payload, dict) else {}
        now = max(ts_ns(ev.ts), self.last_ns)  # a clock stepped back never makes a span end early
        self.last_ns = now
        if self.root is None:
            self._open_root(ev, p, now)
            if ev.type == "session.start":
                return []
        if self.root_cause is None and (code := failure_code(ev)) is not None:
            self.root_cause = code
        done: list[SpanRecord] = []
        t = ev.type
        if t == "session.close":
            return self._close_session(ev, p, now)
        if t == "agent.transition":
            done += self._transition(ev, p, now)
        elif t == "workflow.started" and self.workflow is None:
            cycle = str(p.get("cycle_id", "?"))
            self.workflow = self._open(ev, now, f"invoke_workflow {cycle}", "workflow", self.root, {
                "gen_ai.operation.name": "invoke_workflow", "agentos.cycle.id": cycle})
        elif t in ("workflow.completed", "workflow.aborted") and self.workflow is not None:
            if t == "workflow.aborted":
                self.workflow.fail(str(p.get("code", "WORKFLOW_ABORTED")),
                                   f"workflow aborted: {p.get('reason', '')}")
            done += self._close_turn(now)
            done.append(self._end(self.workflow, now, ev))
            self.workflow = None
        elif t == "llm.request":
            model = str(p.get("model") or self.model)
            self.calls[ev.id] = self._open(ev, now, f"chat {model}", "llm", self._current(), {
                "gen_ai.operation.name": "chat", "gen_ai.provider.name": self.provider,
                "gen_ai.system": self.provider, "gen_ai.request.model": model,
                "gen_ai.conversation.id": self.session_id, "gen_ai.agent.name": str(p.get("role", "")),
                "agentos.call.id": str(p.get("call_id", ""))})
        elif t in ("llm.response", "llm.error") and ev.parent_id in self.calls:
            done.append(self._end_call(ev, p, now))
        elif t == "tool.invoke":
            name = str(p.get("name", "?"))
            self.calls[ev.id] = self._open(ev, now, f"execute_tool {name}", "tool", self._current(), {
                "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": name,
                "gen_ai.tool.type": "function", "gen_ai.tool.call.id": str(p.get("id", "")),
                "gen_ai.conversation.id": self.session_id})
            if self.content:
                self.calls[ev.id].attrs["gen_ai.tool.call.arguments"] = json_text(self.redact(p.get("args")))
        elif t == "tool.result" and ev.parent_id in self.calls:
            done.append(self._end_call(ev, p, now))
        elif t == "hook.fired":
            done.append(self._hook(ev, p, now))
        else:
            holder = self.calls.get(ev.parent_id or "") or self._current()
            self._record(holder, ev, now)
        return done

    def finish(self) -> list[SpanRecord]:
        """End every span still open at the last event seen (a log cut short)."""
        if self.root is None:
            return []
        done = [self._end(s, self.last_ns, None, unfinished=True) for s in self.calls.values()]
        self.calls.clear()
        done += self._close_turn(self.last_ns, unfinished=True)
        if self.workflow is not None:
            done.append(self._end(self.workflow, self.last_ns, None, unfinished=True))
            self.workflow = None
        done.append(self._end(self.root, self.last_ns, None, unfinished=True))
        self.root = None
        return done

    # -- spans --------------------------------------------------------------------------
    def _open_root(self, ev: Event, p: dict[str, Any], now: int) -> None:
        self.trace_id = trace_id_of(ev)
        self.session_id = ev.session_id
        self.provider = PROVIDER_NAMES.get(str(p.get("provider", "")), str(p.get("provider", "")))
        self.model = str(p.get("model", ""))
        attrs: dict[str, AttrValue] = {"agentos.session.id": ev.session_id,
                                       "gen_ai.conversation.id": ev.session_id}
        if ev.type != "session.start":  # not a whole log: the root has no start event of its own
            root_id = derived_id(64, str(self.trace_id), "root")
            self.root = OpenSpan(f"session {ev.session_id}", "session", root_id, None, now,
                                 {**attrs, "agentos.unfinished": True})
            return
        attrs.update({f"agentos.{k}": str(self.redact(p[k])) for k in ("prompt", "profile", "provider",
                                                                       "model") if isinstance(p.get(k), str)})
        self.root = self._open(ev, now, f"session {ev.session_id}", "session", None, attrs)

    def _open(self, ev: Event, now: int, name: str, kind: str, parent: OpenSpan | None,
              attrs: dict[str, AttrValue]) -> OpenSpan:
        span_id = derived_id(64, str(self.trace_id), ev.id)
        self.span_of[ev.id] = span_id
        return OpenSpan(name, kind, span_id, parent.span_id if parent else None, now,
                     {**attrs, **self._ids("agentos.event", ev)})

    def _ids(self, prefix: str, ev: Event) -> dict[str, AttrValue]:
        ids: dict[str, AttrValue] = {f"{prefix}.id": ev.id, f"{prefix}.type": ev.type,
                                     f"{prefix}.actor": ev.actor, f"{prefix}.layer": layer_of(ev)}
        if ev.seq is not None:
            ids[f"{prefix}.seq"] = ev.seq
        if ev.parent_id is not None:
            ids[f"{prefix}.parent_id"] = ev.parent_id
        return ids

    def _end(self, s: OpenSpan, now: int, ev: Event | None, unfinished: bool = False) -> SpanRecord:
        attrs = dict(s.attrs)
        if ev is not None:
            attrs.update(self._ids("agentos.end_event", ev))
        if unfinished:
            attrs["agentos.unfinished"] = True
        return SpanRecord(s.name, s.kind, self.trace_id, s.span_id, s.parent, s.start_ns,
                          max(now, s.start_ns), attrs, tuple(s.events), s.error)

    def _current(self) -> OpenSpan:
        open_tools = [s for s in self.calls.values() if s.kind == "tool"]
        return (open_tools[-1] if open_tools else self.turn or self.workflow or self.root)  # type: ignore[return-value]

    def _record(self, holder: OpenSpan, ev: Event, now: int) -> None:
        """`ev` as a span event of `holder`; a failure it records makes `holder` an error."""
        attrs = self._ids("agentos.event", ev)
        attrs["agentos.payload"] = json_text(self.redact(ev.payload))
        holder.events.append(SpanEvent(ev.type, now, attrs))
        code = failure_code(ev)
        if code is not None:
            p = ev.payload if isinstance(ev.payload, dict) else {}
            holder.fail(code, str(self.redact(f"{code}: {p.get('message') or p.get('schema_id', '')}")))

    def _transition(self, ev: Event, p: dict[str, Any], now: int) -> list[SpanRecord]:
        role, to = p.get("role"), str(p.get("to", ""))
        if isinstance(role, str) and to in TURN_STATES:
            done = self._close_turn(now)
            self.turn = self._open(ev, now, f"invoke_agent {role}", "agent", self.workflow or self.root, {
                "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": role,
                "gen_ai.provider.name": self.provider, "gen_ai.conversation.id": self.session_id,
                "agentos.state.from": str(p.get("from", "")), "agentos.state.to": to,
                "agentos.attempt": int(p.get("attempt", 1))})
            return done
        if self.turn is not None:  # the system ends the turn: DONE, FAIL, FAILED, ESCALATED
            self.turn.attrs["agentos.state.end"] = to
            done = [self._end(self.turn, now, ev)]
            self.turn = None
            return done
        self._record(self._current(), ev, now)
        return []

    def _close_turn(self, now: int, unfinished: bool = False) -> list[SpanRecord]:
        if self.turn is None:
            return []
        done = [self._end(self.turn, now, None, unfinished)]
        self.turn = None
        return done

    def _end_call(self, ev: Event, p: dict[str, Any], now: int) -> SpanRecord:
        s = self.calls.pop(ev.parent_id or "")
        if ev.type == "llm.response":
            usage = u if isinstance(u := p.get("usage"), dict) else {}
            s.attrs.update({"gen_ai.response.model": str(p.get("model") or s.attrs["gen_ai.request.model"]),
                            "gen_ai.response.finish_reasons": (str(p.get("finish_reason", "")),)})
            for key in ("input_tokens", "output_tokens"):
                if isinstance(usage.get(key), int):
                    s.attrs[f"gen_ai.usage.{key}"] = usage[key]
            if isinstance(usage.get("cost_usd"), int | float):
                s.attrs["agentos.usage.cost_usd"] = float(usage["cost_usd"])
            if isinstance(p.get("attempts"), int):
                s.attrs["agentos.attempts"] = p["attempts"]
            if isinstance(p.get("chunks"), int):  # a streamed answer (issue 23)
                s.attrs["agentos.chunks"] = p["chunks"]
        elif ev.type == "llm.error":
            code = str(p.get("code", "PROVIDER_ERROR"))
            s.fail(code, str(self.redact(f"{code}: {p.get('message', '')}")))
        else:  # tool.result
            if "result" in p and self.content:
                s.attrs["gen_ai.tool.call.result"] = json_text(self.redact(p["result"]))
            err = p.get("error") if isinstance(p.get("error"), dict) else None
            if p.get("ok") is False:
                code = str(err.get("code", "TOOL_ERROR")) if err else "TOOL_ERROR"
                s.fail(code, str(self.redact(f"{code}: {err.get('message', '') if err else ''}")))
        return self._end(s, now, ev)

    def _hook(self, ev: Event, p: dict[str, Any], now: int) -> SpanRecord:
        hook, decision = str(p.get("hook", "?")), str(p.get("decision", ""))
        parent = self.span_of.get(ev.parent_id or "") or self._current().span_id
        s = OpenSpan(f"hook {hook}", "hook", derived_id(64, str(self.trace_id), ev.id), parent, now, {
            "agentos.hook.name": hook, "agentos.hook.handler": str(p.get("handler", "")),
            "agentos.hook.decision": decision, **self._ids("agentos.event", ev)})
        if isinstance(p.get("ms"), int | float):
            s.attrs["agentos.hook.ms"] = float(p["ms"])
        if isinstance(p.get("reason"), str):
            s.attrs["agentos.hook.reason"] = str(self.redact(p["reason"]))
        why = f"{hook} {p.get('handler')}: {p.get('reason', '')}"
        if isinstance(p.get("cause"), str):  # the handler timed out, raised or answered nonsense
            code = f"HOOK_{p['cause'].upper()}"
            s.fail(code, str(self.redact(f"{code}: {why}")))
        # A Stop hook's deny is how a run ends normally ("stop looping"), not a refusal.
        if decision == "deny" and hook != "Stop":
            s.fail("HOOK_DENIED", str(self.redact(f"HOOK_DENIED: {why}")))
        return self._end(s, now, None)

    def _close_session(self, ev: Event, p: dict[str, Any], now: int) -> list[SpanRecord]:
        assert self.root is not None
        done = [self._end(s, now, None, unfinished=True) for s in self.calls.values()]
        self.calls.clear()
        done += self._close_turn(now)
        if self.workflow is not None:
            done.append(self._end(self.workflow, now, None, unfinished=True))
            self.workflow = None
        root = self.root
        root.attrs["agentos.ok"] = bool(p.get("ok"))
        if self.root_cause:
            root.attrs["agentos.root_cause"] = self.root_cause
        if p.get("ok") is False:
            reason = str(self.redact(str(p.get("reason", ""))))
            m = _CODE.match(reason)
            root.fail(m.group(1) if m else self.root_cause or "_OTHER", reason)
        elif p.get("ok") is True and root.error is not None:
            # a failed pass (its escalation is a root span event) that the Stop hook let go
            # on to a passing one: the session's verdict is ok, its span is not an error
            root.error = None
            root.attrs.pop("error.type", None)
        done.append(self._end(root, now, ev))
        self.root = None
        return done


def spans_of(events: Iterable[Event], redact: Callable[[Any], Any] = lambda v: v,
             content: bool = False) -> list[SpanRecord]:
    """Every span of a session's events (a log cut short ends at its last event)."""
    builder = SpanBuilder(redact, content)
    out: list[SpanRecord] = []
    for ev in events:
        out += builder.feed(ev)
    return out + builder.finish()


__all__ = ["SpanBuilder", "SpanEvent", "SpanRecord", "spans_of", "ts_ns"]

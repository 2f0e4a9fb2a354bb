"""One-line summaries of events, shared by the CLI, the magics and the widgets."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from ..store.events import Event
from ..store.recorder import EVENT_SCHEMAS, layer_of

LAYERS = tuple(f"L{i}" for i in range(1, 9))


def _short(value: Any, n: int = 60) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, sort_keys=True)
    text = text.replace("\n", " ")
    return text if len(text) <= n else text[: n - 1] + "…"


def summary(ev: Event) -> str:
    """What an event says, in a few words."""
    p = ev.payload if isinstance(ev.payload, dict) else {}
    t = ev.type
    if t == "session.start":
        return f"prompt={_short(p.get('prompt'), 40)!s} profile={p.get('profile')} model={p.get('model')}"
    if t == "session.close":
        tail = f"output={_short(p.get('output'), 40)}" if p.get("ok") else _short(p.get("reason"), 70)
        return f"{'ok' if p.get('ok') else 'NOT ok'} {tail}"
    if t == "session.forked":
        faults = f" faults={p['faults']}" if p.get("faults") else ""
        return (f"fork of {p.get('parent_session')} after event {p.get('at')}: {p.get('resumes')} "
                f"runs live, profile={p.get('profile')}{faults}")
    if t == "hook.fired":
        why = f" ({_short(p['reason'], 50)})" if p.get("reason") else ""
        return f"{p.get('hook')} {p.get('handler')} -> {p.get('decision')}{why}"
    if t == "skill.invoke":
        tools = ", ".join(p.get("allowed_tools", []))
        return f"{p.get('skill')} (trigger {p.get('trigger')!r}; tools: {tools})"
    if t == "skill.complete":
        return f"{p.get('skill')} {'ok' if p.get('ok') else 'not ok'}"
    if t == "skill.skipped":
        return f"{p.get('file')}: {p.get('field')}: {_short(p.get('reason'), 50)}"
    if t == "agent.transition":
        again = f" (attempt {p['attempt']})" if p.get("attempt", 1) > 1 else ""
        return f"{p.get('from')} -> {p.get('to')}{again}"
    if t == "llm.request":
        return f"{p.get('role')} {p.get('call_id')} ({len(p.get('messages', []))} messages)"
    if t == "llm.response":
        u = p.get("usage", {})
        calls = ", ".join(c.get("name", "?") for c in p.get("tool_calls", []))
        return (f"{p.get('role')} {p.get('call_id')} {p.get('finish_reason')}"
                + (f" [{calls}]" if calls else "")
                + f" {u.get('input_tokens', 0)}->{u.get('output_tokens', 0)} tok ${u.get('cost_usd', 0):.6f}")
    if t == "llm.error":
        return f"{p.get('role')} {p.get('call_id')} {p.get('code')}: {_short(p.get('message'))}"
    if t == "tool.invoke":
        return f"{p.get('name')} {p.get('id')} {_short(p.get('args'), 50)}"
    if t == "tool.result":
        if p.get("ok"):
            return f"{p.get('name')} {p.get('id')} ok {_short(p.get('result'), 50)}"
        return f"{p.get('name')} {p.get('id')} error {p.get('error', {}).get('code')}"
    if t == "worker.report":
        return f"output={_short(p.get('output'), 50)} steps={p.get('steps_completed')}"
    if t == "review.result":
        return f"{p.get('verdict')}: {_short(p.get('feedback'), 50)}"
    if t == "lead.directive":
        return f"intent={_short(p.get('intent'), 60)}"
    if t == "plan.created":
        return f"{len(p.get('steps', []))} steps, {len(p.get('risks', []))} risks"
    if t == "schema.violation":
        v = (p.get("violations") or [{}])[0]
        return f"{p.get('schema_id')} ({p.get('where')}) {v.get('path')}: {_short(v.get('message'), 50)}"
    if t == "domain.error":
        return f"{p.get('code')}: {_short(p.get('message'), 70)}"
    if t == "human.escalation":
        return _short(p.get("reason"), 70)
    if t == "workflow.started":
        return f"{p.get('cycle_id')} mode={p.get('mode')} entry={p.get('entry_phase')}"
    if t == "workflow.phase_advanced":
        how = "advance" if p.get("advanced") else "rework"
        return f"{p.get('from_phase')} -> {p.get('to_phase')} ({how}, generation {p.get('generation')})"
    if t == "workflow.policy_gated":
        return f"{p.get('policy_id')}: {_short(p.get('subject'), 40)} -> {p.get('decision')}"
    if t in ("workflow.completed", "workflow.aborted"):
        return f"{p.get('verdict', 'abort')}: {_short(p.get('reason'), 70)}"
    return _short(p, 70)


def trace_lines(events: list[Event]) -> list[str]:
    """A fixed-width table: seq, type, actor, layer, summary."""
    rows = [(str(ev.seq or i), ev.type, ev.actor, layer_of(ev), summary(ev))
            for i, ev in enumerate(events, 1)]
    w_type = max([len(r[1]) for r in rows] + [4])
    w_actor = max([len(r[2]) for r in rows] + [5])
    head = f"{'seq':>4}  {'type':<{w_type}}  {'actor':<{w_actor}}  layer  summary"
    return [head] + [f"{s:>4}  {t:<{w_type}}  {a:<{w_actor}}  {lay:<5}  {m}" for s, t, a, lay, m in rows]


def check_type(type: str, seen: Iterable[str] = ()) -> None:
    """ValueError naming the valid types unless `type` is a known event type (or the types
    `seen` in a log), or a prefix of one such as `tool`: an empty table would hide a typo."""
    known = set(EVENT_SCHEMAS).union(seen)
    if not any(k == type or k.startswith(type + ".") for k in known):
        raise ValueError(f"unknown event type {type!r}; use one of {', '.join(sorted(known))} "
                         "or a prefix such as 'tool'")


def select(events: list[Event], type: str | None = None, layer: str | None = None) -> list[Event]:
    """The events of type `type` (or `type.*`) and of spec layer `layer` (checked as above)."""
    if type is not None:
        check_type(type, (e.type for e in events))
        events = [e for e in events if e.type == type or e.type.startswith(type + ".")]
    if layer is not None:
        if layer not in LAYERS:
            raise ValueError(f"unknown layer {layer!r}; use one of {', '.join(LAYERS)}")
        events = [e for e in events if layer_of(e) == layer]
    return events

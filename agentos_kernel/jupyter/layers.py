"""What the workbench says about layers: names, colours, the L1-L8 diagram, which schema
checked an event and which hook decided on it. Pure Python: no pandas, matplotlib or
ipywidgets, so the magics can use it without loading them."""

from __future__ import annotations

import html
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..store.events import Event
from ..store.recorder import EVENT_SCHEMAS, layer_of

LAYER_NAMES: dict[str, str] = {
    "L1": "MCP-first Tool Protocol",
    "L2": "Provider-agnostic Completion",
    "L3": "Plan-Work-Review Collaboration",
    "L4": "Append-only Event Store",
    "L5": "Markdown-SSOT Skill Runtime",
    "L6": "Hook-intercepted Lifecycle",
    "L7": "Schema-versioned IPC Registry",
    "L8": "Workflow Orchestration",
}
# The spec's stacking: L6 intercepts everything below it; L4 and L7 run across every layer.
DIAGRAM_ORDER = ("L6", "L8", "L5", "L3", "L2", "L1", "L4", "L7")
CROSS_CUTTING = {"L4": "records every event", "L7": "checks every payload"}
# Colour-blind-safe (Okabe-Ito) colours, one per layer, shared by the figures and widgets.
LAYER_COLORS: dict[str, str] = {
    "L1": "#0072B2", "L2": "#E69F00", "L3": "#009E73", "L4": "#56B4E9",
    "L5": "#CC79A7", "L6": "#D55E00", "L7": "#999999", "L8": "#F0E442",
}
def text_on(layer: str) -> str:
    """The text colour that reads on LAYER_COLORS[layer]: black on L8's light yellow, else white."""
    return "#000000" if layer == "L8" else "#ffffff"


FAILURE_TYPES = frozenset({"domain.error", "schema.violation", "llm.error", "human.escalation"})
# Which hook gates the action an event records (the spec's L6 table).
GATED_BY: dict[str, str] = {
    "tool.invoke": "PreToolUse", "tool.result": "PostToolUse", "skill.invoke": "SkillStart",
    "session.close": "Stop", "context.compacted": "PreCompact", "workflow.started": "WorkflowStart",
    "workflow.phase_advanced": "PhaseAdvance", "workflow.completed": "WorkflowComplete",
}


def esc(value: Any) -> str:
    """HTML-escaped text of a value."""
    return html.escape(value if isinstance(value, str) else str(value), quote=True)


def clip(text: str, limit: int) -> str:
    """`text` cut to `limit` characters, the cut marked with "…" (never silently mid-token)."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def pretty(payload: Any, limit: int = 1600) -> str:
    """Payload as indented JSON with sorted keys (stable across runs), cut at `limit` chars."""
    text = json.dumps(payload, indent=2, sort_keys=True, ensure_ascii=False, default=str)
    return clip(text, limit)


def schema_of(ev: Event) -> str | None:
    """The schema id the runtime checked this event's payload against before appending it."""
    return EVENT_SCHEMAS.get(ev.type)


def schema_files(schemas_dir: Path) -> dict[str, str]:
    """Schema id -> its file, shown relative to the workspace (`schemas/events/x.json`)."""
    found = {}
    for p in sorted(Path(schemas_dir).rglob("*.json")):
        found[p.stem] = f"schemas/{p.relative_to(schemas_dir).as_posix()}"
    return found


def hook_decisions_for(events: Sequence[Event], index: int) -> list[Event]:
    """The hook.fired events that decided on events[index]: itself if it is one, else the
    latest run of decisions of the hook that gates its type (PreToolUse for tool.invoke)."""
    ev = events[index]
    if ev.type == "hook.fired":
        return [ev]
    hook = GATED_BY.get(ev.type)
    if hook is None:
        return []
    found: list[Event] = []
    for prev in reversed(events[:index]):
        if prev.type == ev.type:
            break  # an earlier action of the same kind had its own gate
        if prev.type == "hook.fired" and isinstance(prev.payload, dict) and prev.payload.get("hook") == hook:
            found.append(prev)
        elif found:
            break
    return list(reversed(found))


def decision_line(ev: Event) -> str:
    """`PreToolUse deny_dangerous_tools -> allow (reason)` for a hook.fired event."""
    p = ev.payload if isinstance(ev.payload, dict) else {}
    why = f" ({p['reason']})" if p.get("reason") else ""
    return f"{p.get('hook')} {p.get('handler')} -> {p.get('decision')}{why}"


_LAYER_OF_TYPE: dict[str, str] = {}
"""`layer_of` by event type, for every type but domain.error (whose payload names its layer):
for those the layer is a function of the type alone. Bounded (a hand-made log can hold any
number of types); types past the bound are looked up each time."""
KEEP_TYPES = 256


def layer_counts(events: Sequence[Event]) -> dict[str, int]:
    """Events per layer, L1..L8 (zero for layers the request never touched)."""
    counts = dict.fromkeys(LAYER_NAMES, 0)
    known = _LAYER_OF_TYPE
    for ev in events:
        t = ev.type
        layer = known.get(t) if type(t) is str else None
        if layer is None:
            layer = layer_of(ev)
            if type(t) is str and t != "domain.error" and len(known) < KEEP_TYPES:
                known[t] = layer
        counts[layer] = counts.get(layer, 0) + 1
    return counts


def diagram_html(active: str | None, visited: set[str] | frozenset[str] = frozenset(),
                 counts: dict[str, int] | None = None) -> str:
    """The L1-L8 stack in the spec's order; the active layer is highlighted and carries the
    CSS classes `agentos-layer active` (the browser test looks for them)."""
    rows = []
    for layer in DIAGRAM_ORDER:
        is_active = layer == active
        color = LAYER_COLORS[layer]
        style = (f"background:{color};color:{text_on(layer)};font-weight:bold;" if is_active else
                 f"border-left:6px solid {color};" + ("" if layer in visited else "opacity:0.55;"))
        note = CROSS_CUTTING.get(layer, "")
        count = f" · {counts[layer]}" if counts and counts.get(layer) else ""
        cls = "agentos-layer active" if is_active else "agentos-layer"
        rows.append(
            f'<div class="{cls}" data-layer="{layer}" style="padding:2px 6px;margin:1px 0;'
            f'border:1px solid #ccc;{style}"><b>{layer}</b> {esc(LAYER_NAMES[layer])}'
            f'<span style="font-size:smaller">{count}{" — " + note if note else ""}</span></div>')
    return '<div class="agentos-diagram" style="min-width:300px">' + "".join(rows) + "</div>"

"""Widgets that step through one request: LayerStepper (event by event, layer by layer) and
ReplayScrubber (the snapshot at any point, and what the last event changed).

Both read the session's log once and fold it with `replay_steps`: nothing is re-executed
and nothing is written. Both are ipywidgets containers that are fully drivable from Python
(`w.next_button.click()`, `w.slider.value = 5`), which is how the tests exercise them; what
they display is plain HTML in named child widgets, so a test can read it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import ipywidgets as W

from ..events import Event
from ..recorder import layer_of
from ..replay import Snapshot, replay_steps
from ..trace import summary
from .layers import (
    FAILURE_TYPES,
    LAYER_NAMES,
    clip,
    decision_line,
    diagram_html,
    esc,
    hook_decisions_for,
    pretty,
    schema_files,
    schema_of,
)
from .source import load_session

_RED = "color:#cf222e"


def _snapshot_rows(snap: Snapshot, changed: set[str] = frozenset(), compact: bool = False) -> str:
    """The snapshot as a table; `compact` keeps only fields that hold something yet."""
    rows = []
    for key, value in snap.to_dict().items():
        if key == "schema_version" or (compact and value in (None, [], {}, 0, False) and key != "state"):
            continue
        mark = "background:#fff3b0;" if key in changed else ""
        text = json.dumps(value, ensure_ascii=False, sort_keys=True)
        rows.append(f'<tr style="{mark}"><td style="text-align:left"><b>{esc(key)}</b></td>'
                    f'<td style="text-align:left"><code>{esc(clip(text, 300))}</code></td></tr>')
    return f'<table class="agentos-snapshot">{"".join(rows)}</table>'


class LayerStepper(W.VBox):
    """Prev / Next and a slider over the events of one request; the L1-L8 diagram with the
    event's layer highlighted; the event, the schema that checked its payload, the hook
    decision that gated it, its payload, and the snapshot so far."""

    def __init__(self, session: Any, *, workspace: Path | str | None = None, start: int = 1) -> None:
        data = load_session(session, workspace)
        if not data.events:
            raise ValueError(f"session {data.session_id!r} has no events to step through")
        self.session_id: str = data.session_id
        self.events: tuple[Event, ...] = data.events
        self.snapshots: tuple[Snapshot, ...] = tuple(s for _, s in replay_steps(data.events))
        self._files = schema_files(data.workspace.contract_dir("schemas"))
        n = len(self.events)
        self.prev_button = W.Button(description="◀ Prev", tooltip="previous event")
        self.next_button = W.Button(description="Next ▶", tooltip="next event")
        self.slider = W.IntSlider(value=min(max(start, 1), n), min=1, max=n, description="event",
                                  continuous_update=True)
        self.position, self.diagram = W.HTML(), W.HTML()
        self.event_view, self.schema_view, self.hook_view = W.HTML(), W.HTML(), W.HTML()
        self.payload_view, self.snapshot_view = W.HTML(), W.HTML()
        details = W.VBox([self.event_view, self.schema_view, self.hook_view, self.payload_view,
                          self.snapshot_view], layout=W.Layout(width="64%"))
        super().__init__(children=[
            W.HBox([self.prev_button, self.slider, self.next_button, self.position]),
            W.HBox([self.diagram, details])])
        self.add_class("agentos-stepper")
        self.prev_button.on_click(lambda _b: self.prev())
        self.next_button.on_click(lambda _b: self.next())
        self.slider.observe(lambda _change: self._render(), names="value")
        self._render()

    # -- driving it -----------------------------------------------------------------
    @property
    def index(self) -> int:
        """The 1-based position of the event shown."""
        return int(self.slider.value)

    @property
    def event(self) -> Event:
        return self.events[self.index - 1]

    @property
    def active_layer(self) -> str:
        return layer_of(self.event)

    @property
    def snapshot(self) -> Snapshot:
        """The snapshot right after the event shown."""
        return self.snapshots[self.index - 1]

    def go(self, seq: int) -> None:
        """Show event `seq` (clamped to 1..n)."""
        self.slider.value = min(max(int(seq), 1), len(self.events))

    def next(self) -> None:
        self.go(self.index + 1)

    def prev(self) -> None:
        self.go(self.index - 1)

    # -- what it shows --------------------------------------------------------------
    def _render(self) -> None:
        i, ev, n = self.index, self.event, len(self.events)
        layer = layer_of(ev)
        self.prev_button.disabled, self.next_button.disabled = i <= 1, i >= n
        self.position.value = f"<b>{esc(self.session_id)}</b> · event {i} of {n}"
        visited = {layer_of(e) for e in self.events[:i]}
        counts: dict[str, int] = {}
        for e in self.events[:i]:
            counts[layer_of(e)] = counts.get(layer_of(e), 0) + 1
        self.diagram.value = diagram_html(layer, visited, counts)
        failed = ev.type in FAILURE_TYPES
        self.event_view.value = (
            f'<div class="agentos-event" data-layer="{layer}" style="{_RED if failed else ""}">'
            f"<b>#{ev.seq or i} {esc(ev.type)}</b> · {layer} {esc(LAYER_NAMES.get(layer, ''))} · "
            f"actor <code>{esc(ev.actor)}</code><br>{esc(summary(ev))}</div>")
        self.schema_view.value = self._schema_html(ev)
        self.hook_view.value = self._hook_html(i - 1)
        self.payload_view.value = ("<b>payload</b><pre style='max-height:14em;overflow:auto'>"
                                   f"{esc(pretty(ev.payload))}</pre>")
        self.snapshot_view.value = ("<b>snapshot so far</b> (replayed from the log; empty fields hidden)"
                                    + _snapshot_rows(self.snapshot, compact=True))

    def _schema_html(self, ev: Event) -> str:
        sid = schema_of(ev)
        where = f" ({esc(self._files[sid])})" if sid in self._files else ""
        text = (f"payload checked against <code>{esc(sid)}</code>{where} before it was appended"
                if sid else "no payload schema is registered for this event type")
        if ev.type == "schema.violation" and isinstance(ev.payload, dict):
            v = (ev.payload.get("violations") or [{}])[0]
            failed = esc(ev.payload.get("schema_id"))
            text += (f'<br><span style="{_RED}">records a failed check: <code>{failed}'
                     f"</code> at {esc(ev.payload.get('where'))}: {esc(v.get('path'))}: "
                     f"{esc(v.get('message'))}</span>")
        return f'<div class="agentos-schema"><b>schema</b> {text}</div>'

    def _hook_html(self, index: int) -> str:
        decisions = hook_decisions_for(self.events, index)
        if not decisions:
            return '<div class="agentos-hook"><b>hook decision</b> none: no hook gates this event</div>'
        lines = []
        for d in decisions:
            deny = isinstance(d.payload, dict) and d.payload.get("decision") == "deny"
            lines.append(f'<span style="{_RED if deny else ""}">#{d.seq} {esc(decision_line(d))}</span>')
        return '<div class="agentos-hook"><b>hook decision</b> ' + "<br>".join(lines) + "</div>"

    def __repr__(self) -> str:
        return (f"LayerStepper({self.session_id}: event {self.index} of {len(self.events)}, "
                f"{self.event.type}, layer {self.active_layer})")


def diff_snapshots(before: Snapshot, after: Snapshot) -> list[tuple[str, str, str]]:
    """(field, before, after) for each field that differs; dict fields one level deep
    (cost.input_tokens), list fields as the items appended."""
    a, b = before.to_dict(), after.to_dict()
    out: list[tuple[str, str, str]] = []

    def show(v: Any) -> str:
        return json.dumps(v, ensure_ascii=False, sort_keys=True)

    for key in b:
        old, new = a.get(key), b[key]
        if old == new:
            continue
        if isinstance(old, dict) and isinstance(new, dict) and key != "workflow":
            for sub in new:
                if old.get(sub) != new[sub]:
                    out.append((f"{key}.{sub}", show(old.get(sub)), show(new[sub])))
        elif isinstance(old, list) and isinstance(new, list) and new[: len(old)] == old:
            out.append((key, f"{len(old)} item(s)", f"+ {show(new[len(old):])}"))
        else:
            out.append((key, show(old), show(new)))
    return out


class ReplayScrubber(W.VBox):
    """A slider over the event index: the snapshot after event k (k = 0: before any event),
    recomputed from the log alone, and the diff from the step before."""

    def __init__(self, session: Any, *, workspace: Path | str | None = None,
                 start: int | None = None) -> None:
        data = load_session(session, workspace)
        self.session_id: str = data.session_id
        self.events: tuple[Event, ...] = data.events
        self.snapshots: tuple[Snapshot, ...] = (Snapshot(), *(s for _, s in replay_steps(data.events)))
        n = len(self.events)
        self.slider = W.IntSlider(value=n if start is None else min(max(start, 0), n), min=0, max=n,
                                  description="after event", continuous_update=True,
                                  style={"description_width": "initial"})
        self.header, self.diff_view, self.snapshot_view = W.HTML(), W.HTML(), W.HTML()
        super().__init__(children=[self.slider, self.header, self.diff_view, self.snapshot_view])
        self.add_class("agentos-scrubber")
        self.slider.observe(lambda _change: self._render(), names="value")
        self._render()

    @property
    def at(self) -> int:
        """How many events are folded into the snapshot shown."""
        return int(self.slider.value)

    @property
    def snapshot(self) -> Snapshot:
        return self.snapshots[self.at]

    @property
    def diff(self) -> list[tuple[str, str, str]]:
        """What the event at `at` changed (empty at 0)."""
        return diff_snapshots(self.snapshots[self.at - 1], self.snapshot) if self.at else []

    def go(self, k: int) -> None:
        self.slider.value = min(max(int(k), 0), len(self.events))

    def _render(self) -> None:
        k, n = self.at, len(self.events)
        if k == 0:
            self.header.value = f"<b>{esc(self.session_id)}</b> · before any event (the empty snapshot)"
        else:
            ev = self.events[k - 1]
            self.header.value = (f"<b>{esc(self.session_id)}</b> · state after event {k} of {n}: "
                                 f"<code>#{ev.seq or k} {esc(ev.type)}</code> ({layer_of(ev)}) — "
                                 f"{esc(summary(ev))}")
        changes = self.diff
        rows = "".join(f'<tr><td style="text-align:left"><b>{esc(f)}</b></td><td style="text-align:left">'
                       f"<code>{esc(clip(o, 120))}</code> → <code>{esc(clip(w, 200))}</code></td></tr>"
                       for f, o, w in changes)
        self.diff_view.value = (
            '<div class="agentos-diff"><b>changed by this event</b>'
            + (f"<table>{rows}</table>" if rows else " nothing (the snapshot is the same as before)")
            + "</div>")
        self.snapshot_view.value = ("<b>snapshot</b> (pure replay: nothing re-executed)"
                                    + _snapshot_rows(self.snapshot, {f.split(".")[0] for f, _, _ in changes}))

    def __repr__(self) -> str:
        return f"ReplayScrubber({self.session_id}: after event {self.at} of {len(self.events)})"

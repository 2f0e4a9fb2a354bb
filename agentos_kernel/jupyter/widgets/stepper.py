"""Widgets that step through one request: LayerStepper (event by event, layer by layer) and
ReplayScrubber (the snapshot at any point, and what the last event changed).

Both read the session's log once into a ReplayIndex (a fold with a mark every 256 events,
no list item kept) over LogEvents (an offset every 64 lines, the lines read when asked
for): a step folds at most that many events and reads the list items it shows, whatever
the session's length, and nothing is re-executed or written. Both are ipywidgets
containers that are fully drivable from Python (`w.next_button.click()`,
`w.slider.value = 5`), which is how the tests exercise them; what they display is plain
HTML in named child widgets, so a test can read it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import ipywidgets as W

from ...store.events import Event
from ...store.recorder import layer_of
from ...store.replay.fold import Snapshot
from ...store.replay.index import ReplayIndex
from ...store.replay.opened import open_indexed
from ...telemetry.trace import summary
from ...workspace import find_workspace
from ..layers import (
    FAILURE_TYPES,
    GATED_BY,
    LAYER_NAMES,
    clip,
    decision_line,
    diagram_html,
    esc,
    pretty,
    schema_files,
    schema_of,
)
from ..source import SessionData, open_session, session_log
from .snapview import diff_snapshots, snapshot_rows

__all__ = ["LayerStepper", "ReplayScrubber", "diff_snapshots"]

_RED = "color:#cf222e"


def _open(session: Any, workspace: Path | str | None) -> tuple[SessionData, ReplayIndex]:
    """`open_session` and a ReplayIndex of its events; a session id's log read once."""
    if not isinstance(session, str):
        data = open_session(session, workspace)
        return data, ReplayIndex(data.events)
    path = session_log(session, workspace)  # UnknownSession, as open_session raises it
    events, index = open_indexed(path)
    return SessionData(session, events, find_workspace(
        Path(workspace) if workspace is not None else None)), index


class LayerStepper(W.VBox):
    """Prev / Next and a slider over the events of one request; the L1-L8 diagram with the
    event's layer highlighted; the event, the schema that checked its payload, the hook
    decision that gated it, its payload, and the snapshot so far."""

    def __init__(self, session: Any, *, workspace: Path | str | None = None, start: int = 1) -> None:
        data, self.replay_index = _open(session, workspace)
        if not data.events:
            raise ValueError(f"session {data.session_id!r} has no events to step through")
        self.session_id: str = data.session_id
        self.events: Sequence[Event] = data.events
        self._files = schema_files(data.workspace.contract_dir("schemas"))
        n = len(self.events)
        i = min(max(start, 1), n)
        # Each widget made with what it first shows: a value set after it is made is one more
        # state message per widget (and its get_state), for the same first view.
        shown = self._shown(i)
        self.prev_button = W.Button(description="◀ Prev", tooltip="previous event", disabled=i <= 1)
        self.next_button = W.Button(description="Next ▶", tooltip="next event", disabled=i >= n)
        self.slider = W.IntSlider(value=i, min=1, max=n, description="event", continuous_update=True)
        self.position, self.diagram, self.event_view, self.schema_view, self.hook_view, \
            self.payload_view, self.snapshot_view = (W.HTML(value) for value in shown)
        details = W.VBox([self.event_view, self.schema_view, self.hook_view, self.payload_view,
                          self.snapshot_view], layout=W.Layout(width="64%"))
        super().__init__(children=[
            W.HBox([self.prev_button, self.slider, self.next_button, self.position]),
            W.HBox([self.diagram, details])], _dom_classes=["agentos-stepper"])
        self.prev_button.on_click(lambda _b: self.prev())
        self.next_button.on_click(lambda _b: self.next())
        self.slider.observe(lambda _change: self._render(), names="value")

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
        return self.replay_index.snapshot(self.index)

    def go(self, seq: int) -> None:
        """Show event `seq` (clamped to 1..n)."""
        self.slider.value = min(max(int(seq), 1), len(self.events))

    def next(self) -> None:
        self.go(self.index + 1)

    def prev(self) -> None:
        self.go(self.index - 1)

    # -- what it shows --------------------------------------------------------------
    _VIEWS = ("position", "diagram", "event_view", "schema_view", "hook_view", "payload_view",
              "snapshot_view")

    def _render(self) -> None:
        i, n = self.index, len(self.events)
        self.prev_button.disabled, self.next_button.disabled = i <= 1, i >= n
        for name, value in zip(self._VIEWS, self._shown(i), strict=True):
            getattr(self, name).value = value

    def _shown(self, i: int) -> tuple[str, ...]:
        """What each of the _VIEWS shows at event i (1-based)."""
        ev, n = self.events[i - 1], len(self.events)
        layer = layer_of(ev)
        counts = self.replay_index.layer_counts(i)
        failed = ev.type in FAILURE_TYPES
        return (
            f"<b>{esc(self.session_id)}</b> · event {i} of {n}",
            diagram_html(layer, set(counts), counts),
            f'<div class="agentos-event" data-layer="{layer}" style="{_RED if failed else ""}">'
            f"<b>#{ev.seq or i} {esc(ev.type)}</b> · {layer} {esc(LAYER_NAMES.get(layer, ''))} · "
            f"actor <code>{esc(ev.actor)}</code><br>{esc(summary(ev))}</div>",
            self._schema_html(ev),
            self._hook_html(i - 1, ev),
            "<b>payload</b><pre style='max-height:14em;overflow:auto'>"
            f"{esc(pretty(ev.payload))}</pre>",
            "<b>snapshot so far</b> (replayed from the log)"
            + snapshot_rows(self.replay_index.view(i), compact=True))

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

    def _hook_html(self, index: int, ev: Event) -> str:
        # jupyter.layers.hook_decisions_for, found by bisection in the index instead of a scan
        hook = GATED_BY.get(ev.type)
        decisions = [ev] if ev.type == "hook.fired" else [
            self.events[p] for p in (self.replay_index.hook_run(index, hook) if hook else [])]
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


class ReplayScrubber(W.VBox):
    """A slider over the event index: the snapshot after event k (k = 0: before any event),
    recomputed from the log alone, and the diff from the step before."""

    def __init__(self, session: Any, *, workspace: Path | str | None = None,
                 start: int | None = None) -> None:
        data, self.replay_index = _open(session, workspace)
        self.session_id: str = data.session_id
        self.events: Sequence[Event] = data.events
        n = len(self.events)
        k = n if start is None else min(max(start, 0), n)
        self.header, self.diff_view, self.snapshot_view = (W.HTML(v) for v in self._shown(k))
        self.slider = W.IntSlider(value=k, min=0, max=n, description="after event",
                                  continuous_update=True, style={"description_width": "initial"})
        super().__init__(children=[self.slider, self.header, self.diff_view, self.snapshot_view],
                         _dom_classes=["agentos-scrubber"])
        self.slider.observe(lambda _change: self._render(), names="value")

    @property
    def at(self) -> int:
        """How many events are folded into the snapshot shown."""
        return int(self.slider.value)

    @property
    def snapshot(self) -> Snapshot:
        return self.replay_index.snapshot(self.at)

    @property
    def diff(self) -> list[tuple[str, str, str]]:
        """What the event at `at` changed (empty at 0)."""
        return self._diff(self.replay_index.snapshot)

    def _diff(self, at: Callable[[int], Snapshot], k: int | None = None) -> list[tuple[str, str, str]]:
        k = self.at if k is None else k
        return diff_snapshots(at(k - 1), at(k)) if k else []

    def go(self, k: int) -> None:
        self.slider.value = min(max(int(k), 0), len(self.events))

    def _render(self) -> None:
        self.header.value, self.diff_view.value, self.snapshot_view.value = self._shown(self.at)

    def _shown(self, k: int) -> tuple[str, str, str]:
        """What the header, diff and snapshot views show after event k."""
        n = len(self.events)
        if k == 0:
            header = f"<b>{esc(self.session_id)}</b> · before any event (the empty snapshot)"
        else:
            ev = self.events[k - 1]
            header = (f"<b>{esc(self.session_id)}</b> · state after event {k} of {n}: "
                      f"<code>#{ev.seq or k} {esc(ev.type)}</code> ({layer_of(ev)}) — "
                      f"{esc(summary(ev))}")
        changes = self._diff(self.replay_index.view, k)  # what `diff` says, the lists read as shown
        rows = "".join(f'<tr><td style="text-align:left"><b>{esc(f)}</b></td><td style="text-align:left">'
                       f"<code>{esc(clip(o, 120))}</code> → <code>{esc(clip(w, 200))}</code></td></tr>"
                       for f, o, w in changes)
        diff = ('<div class="agentos-diff"><b>changed by this event</b>'
                + (f"<table>{rows}</table>" if rows else " nothing (the snapshot is the same as before)")
                + "</div>")
        return header, diff, ("<b>snapshot</b> (pure replay: nothing re-executed)"
                              + snapshot_rows(self.replay_index.view(k),
                                              {f.split(".")[0] for f, _, _ in changes}))

    def __repr__(self) -> str:
        return f"ReplayScrubber({self.session_id}: after event {self.at} of {len(self.events)})"

"""LiveStepper: a real request stepped live, one event at a time, with a person at the gate.

The request runs on a worker thread (`LiveRun`) that pauses just before each event is
appended; Next lets that event into the log. The kernel is never blocked waiting for a
click: the widget's buttons are ordinary ipywidgets callbacks on the kernel's main thread,
each of which moves the run to its next pause and returns. At PreToolUse a `HumanHook`
shows the pending call: Allow, Deny, or edit the arguments (JSON) and Allow edited; no
answer within its timeout is a deny, logged like any hook decision with actor `human`.
"""

from __future__ import annotations

import json
from collections.abc import Collection
from pathlib import Path
from typing import Any

import ipywidgets as W

from ...hooks.human import HumanHook
from ...kernel import Runtime
from ...providers.faults import load_fault_plan
from ...runs.live import LiveRun, Pause
from ...store.events import Event
from ...store.recorder import layer_of
from ...telemetry.livetrace import line
from ..layers import LAYER_NAMES, diagram_html, esc, pretty

LAYERS = tuple(f"L{i}" for i in range(1, 9))


class LiveStepper(W.VBox):
    """Run `prompt` live: Next appends the pending event; the layer boxes choose where it
    pauses; Allow / Deny / Allow edited answer the HumanHook (at PreToolUse, or at
    PhaseAdvance for an L8 `cycle`); Run to end stops pausing. Drivable from Python
    (`next()`, `allow()`, `deny()`, `edit(value)`, `finish()`)."""

    def __init__(self, prompt: str, *, workspace: Path | str | None = None,
                 profile: str | None = None, faults: str | None = None,
                 layers: Collection[str] | None = None, human: bool = True,
                 timeout_s: float = 60.0, session_id: str | None = None,
                 cycle: str | None = None, mode: str | None = None) -> None:
        plan = load_fault_plan(faults) if faults else None
        self.runtime = Runtime.from_workspace(workspace, profile=profile, faults=plan)
        gate = "PhaseAdvance" if cycle else "PreToolUse"
        self.human = HumanHook(gate, timeout_s=timeout_s) if human else None
        if self.human is not None:
            self.runtime.hooks.register(gate, self.human.handler())
        chosen = set(layers) if layers is not None else set(LAYERS)
        unknown = sorted(chosen - set(LAYERS))
        if unknown:
            raise ValueError(f"unknown layer(s) {', '.join(unknown)}; use {', '.join(LAYERS)}")
        self.stream_view = W.HTML()
        """A streamed answer's text as it arrives (set from the run's thread: LiveRun.on_text)."""
        self.live = LiveRun(self.runtime, prompt, layers=chosen, session_id=session_id,
                            human=self.human, cycle=cycle, mode=mode,
                            on_text=lambda text: setattr(self.stream_view, "value",
                                                         f"<pre>{esc(text)}</pre>"))
        self.logged: list[Event] = []
        """Events appended so far, in order."""
        self.next_button = W.Button(description="Next ▶", tooltip="append the pending event")
        self.finish_button = W.Button(description="Run to end", tooltip="stop pausing")
        self.position, self.diagram, self.event_view = W.HTML(), W.HTML(), W.HTML()
        self.layer_boxes = {lay: W.Checkbox(value=lay in chosen, description=lay, indent=False,
                                            layout=W.Layout(width="3.5em")) for lay in LAYERS}
        self.question_view = W.HTML()
        self.args_editor = W.Textarea(layout=W.Layout(width="100%", height="5em"))
        self.allow_button = W.Button(description="Allow", button_style="success")
        self.deny_button = W.Button(description="Deny", button_style="danger")
        self.edit_button = W.Button(description="Allow edited", tooltip="allow with the args above")
        self.question_box = W.VBox([self.question_view, self.args_editor,
                                    W.HBox([self.allow_button, self.deny_button, self.edit_button])])
        self.question_box.add_class("agentos-human")
        self.trace_view = W.HTML()
        super().__init__(children=[
            W.HBox([self.next_button, self.finish_button, self.position]),
            W.HBox([W.HTML("pause at:"), *self.layer_boxes.values()]),
            W.HBox([self.diagram, W.VBox([self.event_view, self.stream_view, self.question_box,
                                          self.trace_view],
                                         layout=W.Layout(width="64%"))])])
        self.add_class("agentos-live")
        self.next_button.on_click(lambda _b: self.next())
        self.finish_button.on_click(lambda _b: self.finish())
        self.allow_button.on_click(lambda _b: self.allow())
        self.deny_button.on_click(lambda _b: self.deny())
        self.edit_button.on_click(lambda _b: self._edit_from_editor())
        for box in self.layer_boxes.values():
            box.observe(lambda _c: self._set_layers(), names="value")
        self.runtime.watchers.append(self._logged)
        self.pause: Pause = self.live.start()
        self._render()

    # -- driving it -----------------------------------------------------------------
    def next(self) -> None:
        """Append the pending event and stop at the next pause."""
        self.pause = self.live.step()
        self._render()

    def finish(self) -> None:
        """Stop pausing; the run goes to its end (a pending question still needs an answer
        or its timeout)."""
        self.pause = self.live.close()
        self._render()

    def allow(self) -> None:
        self._answer(lambda h: h.allow())

    def deny(self, reason: str = "denied by the instructor") -> None:
        self._answer(lambda h: h.deny(reason))

    def edit(self, value: Any) -> None:
        """Allow it changed: other args for a tool call (its input schema checks them),
        another to_phase for a phase advance."""
        self._answer(lambda h: h.edit(value))

    @property
    def session_id(self) -> str | None:
        return self.logged[0].session_id if self.logged else None

    # -- internals --------------------------------------------------------------------
    def _answer(self, give: Any) -> None:
        if self.human is None or self.live.pause().question is None:
            raise RuntimeError("no decision is pending")
        give(self.human)
        self.next()  # show what the answer led to

    def _edit_from_editor(self) -> None:
        try:
            value = json.loads(self.args_editor.value)
        except json.JSONDecodeError as exc:
            self.question_view.value += f'<div style="color:#cf222e">not JSON: {esc(exc)}</div>'
            return
        field = self.human.field if self.human is not None else "value"  # None: edit() refuses
        want = dict if field == "args" else str
        if not isinstance(value, want):
            self.question_view.value += (f'<div style="color:#cf222e">the {esc(field)} must be '
                                         f'a JSON {"object" if want is dict else "string"}</div>')
            return
        self.edit(value)

    def _set_layers(self) -> None:
        self.live.layers = frozenset(k for k, box in self.layer_boxes.items() if box.value)

    def _logged(self, ev: Event) -> None:  # on the run's thread, after each append
        self.logged.append(ev)

    def _render(self) -> None:
        p = self.pause
        ev = p.event
        done = p.done
        self.next_button.disabled = done or p.question is not None or ev is None
        self.finish_button.disabled = done
        state = ("finished" if done else "waiting for a decision" if p.question is not None
                 else f"paused before event {ev.seq}" if ev is not None else "running")
        self.position.value = (f"<b>{esc(self.session_id or 'live run')}</b> · {state} · "
                               f"{len(self.logged)} event(s) logged")
        active = layer_of(ev) if ev is not None else "L6" if p.question is not None else None
        self.diagram.value = diagram_html(active, {layer_of(e) for e in self.logged})
        if ev is not None:
            self.event_view.value = (
                f'<div class="agentos-pending" data-layer="{layer_of(ev)}"><b>next: #{ev.seq} '
                f"{esc(ev.type)}</b> · {layer_of(ev)} {esc(LAYER_NAMES.get(layer_of(ev), ''))} · actor "
                f"<code>{esc(ev.actor)}</code> (not in the log yet)<pre style='max-height:12em;"
                f"overflow:auto'>{esc(pretty(ev.payload))}</pre></div>")
        elif done:
            self.event_view.value = f"<div class='agentos-done'><b>done</b>: {esc(self._verdict())}</div>"
        else:
            self.event_view.value = ""
        q = p.question
        self.question_box.layout.display = "" if q is not None else "none"
        if q is not None:
            what = (f"tool <code>{esc(q.data.get('tool'))}</code>" if q.hook == "PreToolUse" else
                    f"cycle <code>{esc(q.data.get('cycle_id'))}</code>: "
                    f"{esc(q.data.get('from_phase'))} → {esc(q.data.get('to_phase'))}")
            self.question_view.value = (f"<b>{esc(q.hook)}: a person decides</b> — {what}; "
                                        f"no answer within {q.timeout_s:g} s is a deny")
            field = self.human.field if self.human is not None else "args"
            self.args_editor.value = json.dumps(q.data.get(field), ensure_ascii=False)
        self.trace_view.value = ("<pre class='agentos-live-trace' style='max-height:16em;overflow:auto'>"
                                 + esc("\n".join(line(e) for e in self.logged[-40:])) + "</pre>")

    def _verdict(self) -> str:
        r = self.live.result
        if self.live.error is not None:
            return f"the run raised {type(self.live.error).__name__}: {self.live.error}"
        if r is None:
            return "no result"
        err = getattr(r, "error", None)
        if err is not None:
            return f"NOT ok: {err.code}: {err.message}"
        v = r.value
        if hasattr(v, "verdict"):  # an L8 cycle's CycleResult
            return f"{'ok' if v.ok else 'NOT ok'}: cycle {v.cycle_id} verdict {v.verdict}: {v.reason}"
        return f"ok: {v.output}"

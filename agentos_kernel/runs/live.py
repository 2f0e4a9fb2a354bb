"""Live stepping: a real request that pauses just before each event is appended.

The request runs on a worker thread; a gate (`Runtime.watching(..., before=True)`) stops it
before each event reaches the log until `step()` lets that event through. Whoever drives it
(a widget's Next button, a test, a console) stays on its own thread and is never blocked
by the run, so a notebook kernel keeps handling widget messages while the run is paused.
A `HumanHook` question (allow / deny / edit args) also ends a `step()`, so the driver can
show it; no answer within the hook's timeout is a deny.

The run's log is an ordinary session log: it verifies, replays and audits like any other.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import Any

from ..errors import Err
from ..hooks.human import HumanHook, Question
from ..providers.base import StreamedText
from ..store.events import Event
from ..store.recorder import layer_of


@dataclass(frozen=True)
class Pause:
    """Where a live run stands after `step()`."""

    event: Event | None
    """The event about to be appended (not in the log yet), or None."""
    question: Question | None
    """A HumanHook decision waiting for an answer, or None."""
    done: bool
    """The run has ended; `LiveRun.result` holds what it returned."""


class LiveRun:
    """One request on `rt` (its own Runtime: no other request may use it meanwhile), paused
    before each event whose layer is in `layers` (default: every layer)."""

    def __init__(self, rt: Any, prompt: str, *, layers: Collection[str] | None = None,
                 session_id: str | None = None, human: HumanHook | None = None,
                 cycle: str | None = None, mode: str | None = None,
                 on_text: Callable[[str], None] | None = None) -> None:
        self.rt, self.prompt, self.session_id, self.cycle = rt, prompt, session_id, cycle
        self.text = ""
        """The text of the answer being streamed now (redacted), as far as it has arrived."""
        self.on_text = on_text
        """Called on the run's thread with `text` each time more arrives (a widget's view)."""
        self.mode = mode
        self._layers: frozenset[str] | None = None
        self.layers = layers
        self.human = human
        self.result: Any = None
        """What handle_user_request (or run_cycle) returned, once done."""
        self.error: BaseException | None = None
        """An exception the run raised (a broken invariant), once done."""
        self._cond = threading.Condition()
        self._pending: Event | None = None
        self._go = False
        self._free = False  # close(): stop pausing
        self._done = False
        self._thread: threading.Thread | None = None
        self._attempt = 0
        if human is not None:
            previous = human.on_question
            human.on_question = self._chain(previous)

    # -- driver side --------------------------------------------------------------------
    def start(self) -> Pause:
        """Start the run and return at its first pause."""
        if self._thread is not None:
            raise RuntimeError("this live run has started already")
        self._thread = threading.Thread(target=self._main, name="agentos-live-run", daemon=True)
        self._thread.start()
        return self._wait_for_change(None)

    def step(self) -> Pause:
        """Let the paused event into the log and return at the next pause (an event, a
        human question, or the end)."""
        with self._cond:
            current = self._pending
            if current is not None:
                self._go = True
                self._cond.notify_all()
        return self._wait_for_change(current)

    def close(self) -> Pause:
        """Stop pausing and let the run go on; return at its end, or when a human question
        needs an answer (a driver on a notebook's main thread must stay free to give it)."""
        with self._cond:
            self._free = True
            self._cond.notify_all()
        if self._thread is None:
            return self.pause()
        return self._wait_for_change(None)

    def pause(self) -> Pause:
        """Where the run stands now, without moving it."""
        with self._cond:
            return Pause(self._pending, self._asking(), self._done)

    def _asking(self) -> Question | None:
        """The human question still waiting for its answer (one answered a moment ago may
        not have left `pending` yet: it no longer counts)."""
        q = self.human.pending if self.human is not None else None
        return q if q is not None and q.answer is None else None

    # -- run side -------------------------------------------------------------------------
    def _main(self) -> None:
        try:
            with self.rt.watching(self._gate, before=True), self.rt.streaming(self._streamed):
                if self.cycle is not None:
                    self.result = self.rt.run_cycle(self.cycle, self.prompt, session_id=self.session_id,
                                                    mode=self.mode)
                else:
                    self.result = self.rt.handle_user_request(self.prompt, session_id=self.session_id)
        except BaseException as exc:  # reported to the driver; the session was closed by guarded
            self.error = exc
        finally:
            with self._cond:
                self._done, self._pending = True, None
                self._cond.notify_all()

    def _streamed(self, piece: StreamedText) -> None:
        if piece.attempt != self._attempt:  # a retry starts the answer over
            self.text, self._attempt = "", piece.attempt
        self.text += piece.text
        if piece.final:
            self._attempt = 0
        if self.on_text is not None:
            self.on_text(self.text)

    def _gate(self, event: Event) -> None:
        if event.type == "llm.request":
            self.text = ""  # a new call: the last one's text is in its llm.response
        layers = self._layers
        if layers is not None and layer_of(event) not in layers:
            return
        with self._cond:
            if self._free:
                return
            self._pending, self._go = event, False
            self._cond.notify_all()
            self._cond.wait_for(lambda: self._go or self._free)
            self._pending, self._go = None, False

    def _chain(self, previous: Callable[[Question], None] | None) -> Callable[[Question], None]:
        def asked(question: Question) -> None:
            if previous is not None:
                previous(question)
            with self._cond:
                self._cond.notify_all()
        return asked

    def _wait_for_change(self, before: Event | None) -> Pause:
        def changed() -> bool:
            if self._done:
                return True
            if self._asking() is not None:
                return True
            return not self._free and self._pending is not None and self._pending is not before
        with self._cond:
            self._cond.wait_for(changed)
        return self.pause()

    @property
    def session(self) -> str | None:
        """The session id, once the run has one."""
        r = self.result
        if isinstance(r, Err):
            return r.error.session_id
        return getattr(getattr(r, "value", None), "session_id", None) or self.session_id

    @property
    def layers(self) -> frozenset[str] | None:
        """Layers it pauses at (None: all; empty: none); set it any time, the next event sees it."""
        return self._layers

    @layers.setter
    def layers(self, value: Collection[str] | None) -> None:
        self._layers = frozenset(value) if value is not None else None

"""A trace printed while the run goes on: one line per event as it is logged, on a terminal a
spinner while a model call is outstanding, and a streamed answer's text as it arrives
(CLI `agentos run`, `%agent --live`)."""

from __future__ import annotations

import sys
import threading
import time
from typing import TextIO

from ..providers.base import StreamedText
from ..store.events import Event
from ..store.recorder import EVENT_SCHEMAS, layer_of
from .trace import summary

# Fixed widths: a streamed table cannot size its columns from rows it has not seen yet.
TYPE_WIDTH = max(len(t) for t in EVENT_SCHEMAS)
ACTOR_WIDTH = 25  # hook:<handler> actors are the long ones (hook:deny_dangerous_tools)
WAITING_ON = {"llm.request": "the model", "tool.invoke": "the tool"}
"""Events after which the run waits on something outside (the spinner says which)."""
TEXT_MARK = f"{'':>4}  {'':<{TYPE_WIDTH}}  > "
"""Where a streamed answer's text starts: under the type column, after the request's line."""


class LiveTrace:
    """Watcher for `Runtime.watching`: prints each event's trace line as it is logged.

    With `spinner` (default: when `err` is a terminal), a wait on a model or tool shows
    `waiting for the model (planner) 2.1 s` on `err`, erased when the next event arrives.
    A closed pipe (`agentos run | head`) stops the printing, never the run: the log is
    written whole either way."""

    def __init__(self, out: TextIO | None = None, err: TextIO | None = None,
                 spinner: bool | None = None, interval_s: float = 0.1) -> None:
        self.out, self.err = out or sys.stdout, err or sys.stderr
        self.spinner = _isatty(self.err) if spinner is None else spinner
        self.interval_s = interval_s
        self.lines = 0
        """Trace lines printed so far (the header not counted)."""
        self._stopped = False
        self._wait: tuple[threading.Event, threading.Thread] | None = None
        self._text_attempt = 0  # the attempt whose text is being printed; 0: none open

    def streamed(self, piece: StreamedText) -> None:
        """Print a streamed answer's text as it arrives (StreamWatcher), below its request's
        line; a retry's text starts on a line of its own."""
        self._stop_waiting()
        if self._stopped or (not piece.text and not piece.final):
            return
        try:
            if self._text_attempt and piece.attempt != self._text_attempt:
                print(file=self.out)
                self._text_attempt = 0
            if not self._text_attempt:
                retry = f"(attempt {piece.attempt}) " if piece.attempt > 1 else ""
                self.out.write(TEXT_MARK + retry)
                self._text_attempt = piece.attempt
            self.out.write(piece.text)
            if piece.final:
                self.out.write("\n")
                self._text_attempt = 0
            self.out.flush()
        except (BrokenPipeError, ValueError):
            self._stopped = True

    def __call__(self, ev: Event) -> None:
        self._stop_waiting()
        if self._stopped:
            return
        try:
            if self._text_attempt:  # a stream that ended without its last piece (cut)
                print(file=self.out)
                self._text_attempt = 0
            if self.lines == 0:
                print(header(), file=self.out, flush=True)
            print(line(ev), file=self.out, flush=True)
        except (BrokenPipeError, ValueError):  # reader gone, or the stream closed
            self._stopped = True
            return
        self.lines += 1
        if self.spinner and ev.type in WAITING_ON:
            self._start_waiting(f"{WAITING_ON[ev.type]} ({ev.actor})")

    def close(self) -> None:
        """Erase a spinner still showing (the run ended, or was interrupted)."""
        self._stop_waiting()

    def _start_waiting(self, what: str) -> None:
        stop = threading.Event()
        thread = threading.Thread(target=self._spin, args=(what, stop), daemon=True,
                                  name="agentos-live-trace")
        self._wait = (stop, thread)
        thread.start()

    def _spin(self, what: str, stop: threading.Event) -> None:
        start, frames, i = time.monotonic(), "|/-\\", 0
        while not stop.wait(self.interval_s):
            text = f"{frames[i % 4]} waiting for {what} {time.monotonic() - start:.1f} s"
            try:
                self.err.write(f"\r{text}")
                self.err.flush()
            except (OSError, ValueError):
                return
            i += 1
        try:  # erase the spinner's line so the next trace line starts clean
            self.err.write("\r\033[K")
            self.err.flush()
        except (OSError, ValueError):
            pass

    def _stop_waiting(self) -> None:
        if self._wait is not None:
            stop, thread = self._wait
            self._wait = None
            stop.set()
            thread.join()


def header() -> str:
    return f"{'seq':>4}  {'type':<{TYPE_WIDTH}}  {'actor':<{ACTOR_WIDTH}}  layer  summary"


def line(ev: Event) -> str:
    """One event's trace line, in the fixed columns of `header()`."""
    return (f"{ev.seq or '-':>4}  {ev.type:<{TYPE_WIDTH}}  {ev.actor:<{ACTOR_WIDTH}}  "
            f"{layer_of(ev):<5}  {summary(ev)}")


def _isatty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False

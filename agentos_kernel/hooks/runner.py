"""Where a hook handler runs (bus.py decides what its answer means).

- Any handler runs on a long-lived daemon worker thread and is abandoned when it overruns
  its timeout, so a handler that sleeps forever cannot hang a run.
- The one exception, `bounded` handlers: a function of the runtime itself (a module of
  `agentos_kernel`) marked `@bounded` runs on the calling thread, without a hand-off. The
  mark is a promise checked by review, not at run time: no I/O, no lock, no wait, work
  linear in its input. If it still runs past its timeout it is a deny with cause `timeout`,
  like any other handler. A user's handler is never inline, whatever it declares.
"""

from __future__ import annotations

import os
import queue
import threading
import time
from collections.abc import Callable
from typing import Any


class _Worker:
    """A long-lived daemon thread that runs handlers one at a time. Starting a thread per
    handler call cost ~90 us (8 calls per request); handing a job to a waiting worker ~20 us.
    A worker whose handler overruns its timeout is abandoned, never reused."""

    def __init__(self) -> None:
        self.jobs: queue.SimpleQueue[tuple[Callable[[Any], Any], Any, dict[str, Any],
                                           threading.Event] | None] = queue.SimpleQueue()
        self.thread = threading.Thread(target=self._loop, name=_IDLE_NAME, daemon=True)
        self.thread.start()

    def _loop(self) -> None:
        me = threading.current_thread()
        while (job := self.jobs.get()) is not None:
            fn, arg, box, done = job
            me.name = _BUSY_NAME  # a stuck handler's thread is named like the old per-call threads
            try:
                box["value"] = fn(arg)
            except BaseException as exc:  # a handler's failure is data: it becomes a deny
                box["error"] = exc
            me.name = _IDLE_NAME
            done.set()


_BUSY_NAME, _IDLE_NAME = "agentos-hook", "agentos-hook-idle"
_MAX_IDLE = 4
_idle: list[_Worker] = []
_idle_lock = threading.Lock()


def _forget_workers() -> None:  # a forked child has none of the parent's threads
    global _idle_lock
    _idle.clear()
    _idle_lock = threading.Lock()


os.register_at_fork(after_in_child=_forget_workers)


_BOUNDED: set[Callable[..., Any]] = set()
HANDOFFS = [0]
"""Handler calls handed to a worker thread since import (a regression guard counts them)."""


def bounded(fn: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """Mark a handler of the runtime as bounded: it runs inline (see the module docstring).
    Only functions defined in `agentos_kernel` may be marked (ValueError otherwise)."""
    if not getattr(fn, "__module__", "").startswith("agentos_kernel."):
        raise ValueError(f"only the runtime's own handlers may be @bounded, not "
                         f"{getattr(fn, '__qualname__', fn)!r} of {getattr(fn, '__module__', None)!r}")
    _BOUNDED.add(fn)
    return fn


def is_bounded(fn: Callable[[Any], Any]) -> bool:
    """Whether `fn` runs on the calling thread (marked with `bounded`)."""
    try:
        return fn in _BOUNDED
    except TypeError:  # an unhashable callable is never one of ours
        return False


def _run_inline(fn: Callable[[Any], Any], arg: Any, timeout_s: float) -> tuple[str, Any]:
    start = time.perf_counter()
    try:
        value = fn(arg)
    except Exception as exc:  # a handler's failure is data: it becomes a deny
        return "error", exc
    if time.perf_counter() - start > timeout_s:  # it returned, but too late: still a deny
        return "timeout", None
    return "ok", value


def run_with_timeout(fn: Callable[[Any], Any], arg: Any, timeout_s: float) -> tuple[str, Any]:
    """("ok", value), ("error", exception) or ("timeout", None): a `bounded` handler on the
    calling thread, any other on a worker abandoned at `timeout_s`."""
    if is_bounded(fn):
        return _run_inline(fn, arg, timeout_s)
    HANDOFFS[0] += 1
    with _idle_lock:
        worker = None
        while _idle and worker is None:
            candidate = _idle.pop()
            worker = candidate if candidate.thread.is_alive() else None
    worker = worker or _Worker()
    box: dict[str, Any] = {}
    done = threading.Event()
    worker.jobs.put((fn, arg, box, done))
    if not done.wait(timeout_s):
        worker.jobs.put(None)  # abandoned: it exits once the handler returns, if ever
        return "timeout", None
    with _idle_lock:
        if len(_idle) < _MAX_IDLE:
            _idle.append(worker)
            worker = None
    if worker is not None:
        worker.jobs.put(None)
    if "error" in box:
        return "error", box["error"]
    return "ok", box.get("value")

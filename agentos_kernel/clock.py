"""Time and identity. Deterministic mode uses a logical clock and counters (DESIGN)."""

from __future__ import annotations

import os
import threading
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Protocol, final

EPOCH = datetime(2026, 1, 1, tzinfo=UTC)


def iso(dt: datetime) -> str:
    """ISO-8601 UTC with millisecond precision and a Z suffix."""
    if dt.tzinfo is UTC:  # already UTC (every clock here): the same text, without a conversion
        return dt.isoformat(timespec="milliseconds")[:-6] + "Z"
    return dt.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class Clock(Protocol):
    """Gives event timestamps and durations."""

    def now(self) -> str: ...

    def elapsed_ms(self, start: float) -> float: ...

    def mark(self) -> float: ...


class SystemClock:
    """Wall time for real runs."""

    def now(self) -> str:
        return iso(datetime.now(UTC))

    def mark(self) -> float:
        return time.perf_counter()

    def elapsed_ms(self, start: float) -> float:
        return round((time.perf_counter() - start) * 1000, 3)


_MILLIS = tuple(f"{ms:03d}Z" for ms in range(1000))
"""The end of a logical timestamp for each millisecond, formatted once: a format spec per
event cost about 2,000 instructions (callgrind), twice per event (tests/test_clock.py
compares the texts with the formatted ones)."""
_SEQS = tuple(f"{seq:04d}" for seq in range(1024))
"""`f"{seq:04d}"` of the first 1024 seqs, for `CounterIds` (the same saving)."""


class LogicalClock:
    """A fixed epoch plus 1 ms per reading, and zero durations: byte-identical logs."""

    def __init__(self, ticks: int = 0) -> None:
        self._ticks = ticks
        self._second: int | None = None
        self._head = ""

    @classmethod
    def after(cls, ts: str) -> LogicalClock:
        """A clock whose next reading is 1 ms after `ts` (to continue an existing log)."""
        t = datetime.fromisoformat(ts.replace("Z", "+00:00"))
        return cls(int((t - EPOCH) / timedelta(milliseconds=1)) + 1)

    def now(self) -> str:
        # The same text as iso(EPOCH + ticks ms), with everything up to the second formatted
        # once per second: this runs for every event, and a request's events share their
        # second (tests/test_clock.py compares the two over any ticks).
        ticks = self._ticks
        self._ticks = ticks + 1
        ms = ticks % 1000
        second = ticks // 1000
        if second != self._second:
            day, s = divmod(second, 86_400)
            m, s = divmod(s, 60)
            h, m = divmod(m, 60)
            date = (EPOCH + timedelta(days=day)).date().isoformat()
            self._second, self._head = second, f"{date}T{h:02d}:{m:02d}:{s:02d}."
        return self._head + _MILLIS[ms]

    def mark(self) -> float:
        return 0.0

    def elapsed_ms(self, start: float) -> float:
        return 0.0


class Ids(Protocol):
    """Makes event ids for one session."""

    def event_id(self, session_id: str, seq: int) -> str: ...


class CounterIds:
    """Deterministic ids: `<session>-e<seq>`."""

    def event_id(self, session_id: str, seq: int) -> str:
        if type(seq) is int and 0 <= seq < len(_SEQS):  # a session's first 1024 events
            return f"{session_id}-e{_SEQS[seq]}"
        return f"{session_id}-e{seq:04d}"


class RandomIds:
    """Time-ordered random ids: RFC 9562 UUIDv7 strings (see `uuid7`)."""

    def event_id(self, session_id: str, seq: int) -> str:
        return str(uuid7())


@final  # no subclass: re-running its own __init__ after a fork (below) is sound
class _V7:
    """RFC 9562 §6.2 method 1: a 42-bit counter (rand_a and the top 30 bits of rand_b) seeded
    randomly each new millisecond, below 2**41 so at least 2**41 ids fit in one millisecond.
    If the wall clock steps back or the counter overflows, the last millisecond is kept (or
    advanced by one), so ids from one process are strictly increasing."""

    def __init__(self) -> None:
        self._lock = threading.Lock()  # sessions may append from several threads
        self._ms = -1
        self._counter = 0

    def next(self) -> uuid.UUID:
        with self._lock:
            ms = time.time_ns() // 1_000_000
            if ms > self._ms:
                self._ms, self._counter = ms, int.from_bytes(os.urandom(6), "big") >> 7
            else:
                self._counter += 1
                if self._counter >> 42:  # 2**41 ids in one millisecond: borrow the next one
                    self._ms, self._counter = self._ms + 1, int.from_bytes(os.urandom(6), "big") >> 7
            ms, counter = self._ms, self._counter
        tail = int.from_bytes(os.urandom(4), "big")
        value = ((ms & (1 << 48) - 1) << 80 | 0x7 << 76 | (counter >> 30) << 64
                 | 0b10 << 62 | (counter & (1 << 30) - 1) << 32 | tail)
        return uuid.UUID(int=value)


_V7_SOURCE = _V7()
# A forked child starts a fresh sequence: parent and child then share no (ms, counter) prefix.
os.register_at_fork(after_in_child=_V7_SOURCE.__init__)


def uuid7() -> uuid.UUID:
    """A new UUIDv7 (version 7, variant 10): 48-bit Unix milliseconds, then a counter, then
    32 random bits; strictly increasing within this process (Python 3.14's `uuid.uuid7`
    uses the same layout)."""
    return _V7_SOURCE.next()


def random_session_id() -> str:
    """A new session id for a non-deterministic run: date plus random hex."""
    return datetime.now(UTC).strftime("%Y%m%d-%H%M%S-") + os.urandom(3).hex()


def first_free(taken: Callable[[int], bool]) -> int:
    """The counted id after the run s0001, s0002, … that the runtime allocated: doubling
    n until s<n> is free, then bisecting, so O(log N) existence checks for N sessions where
    listing them all was O(N). Ids the runtime allocates have no holes, so this is the
    highest one + 1; in a workspace where sessions were deleted by hand it is a hole the
    search lands on (still unused, and the same for every process looking)."""
    lo, hi = 0, 1  # taken(lo) (0 stands for "before s0001"), hi not yet checked
    while taken(hi):
        lo, hi = hi, hi * 2
    while hi - lo > 1:  # taken(lo), not taken(hi)
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if taken(mid) else (lo, mid)
    return hi

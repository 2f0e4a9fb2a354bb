"""Time and identity. Deterministic mode uses a logical clock and counters (DESIGN)."""

from __future__ import annotations

import os
import time
from datetime import UTC, datetime, timedelta
from typing import Protocol

EPOCH = datetime(2026, 1, 1, tzinfo=UTC)


def iso(dt: datetime) -> str:
    """ISO-8601 UTC with millisecond precision and a Z suffix."""
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


class LogicalClock:
    """A fixed epoch plus 1 ms per reading, and zero durations: byte-identical logs."""

    def __init__(self, ticks: int = 0) -> None:
        self._ticks = ticks

    @classmethod
    def after(cls, ts: str) -> LogicalClock:
        """A clock whose next reading is 1 ms after `ts` (to continue an existing log)."""
        t = datetime.fromisoformat(ts.replace("Z", "+00:00"))
        return cls(int((t - EPOCH) / timedelta(milliseconds=1)) + 1)

    def now(self) -> str:
        t = EPOCH + timedelta(milliseconds=self._ticks)
        self._ticks += 1
        return iso(t)

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
        return f"{session_id}-e{seq:04d}"


class RandomIds:
    """Time-ordered random ids in the shape of UUIDv7 (48-bit ms time, then random bits)."""

    def event_id(self, session_id: str, seq: int) -> str:
        ms = int(time.time() * 1000)
        rnd = int.from_bytes(os.urandom(10), "big")
        value = (ms << 80) | (0x7 << 76) | (rnd & ((1 << 76) - 1))
        h = f"{value:032x}"
        return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def random_session_id() -> str:
    """A new session id for a non-deterministic run: date plus random hex."""
    return datetime.now(UTC).strftime("%Y%m%d-%H%M%S-") + os.urandom(3).hex()

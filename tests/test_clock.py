"""The logical clock (deterministic profiles): 1 ms per reading from a fixed epoch, and the
text of each reading exactly `iso()` of that instant (byte-identical logs depend on it)."""

from __future__ import annotations

from datetime import timedelta

from hypothesis import given
from hypothesis import strategies as st

from agentos_kernel.clock import EPOCH, CounterIds, LogicalClock, iso

# From before the epoch (a log continued with LogicalClock.after an earlier ts) to year 9999.
TICKS = st.integers(-(10**12), 250_000 * 86_400_000)


@given(start=TICKS, readings=st.integers(1, 5))
def test_each_reading_is_iso_of_its_instant(start: int, readings: int) -> None:
    clock = LogicalClock(start)
    for n in range(readings):
        assert clock.now() == iso(EPOCH + timedelta(milliseconds=start + n))


def test_readings_cross_midnight_and_continue_after_a_logged_ts() -> None:
    clock = LogicalClock(86_400_000 - 2)
    assert [clock.now() for _ in range(3)] == [
        "2026-01-01T23:59:59.998Z", "2026-01-01T23:59:59.999Z", "2026-01-02T00:00:00.000Z"]
    assert LogicalClock.after("2026-01-02T00:00:00.000Z").now() == "2026-01-02T00:00:00.001Z"


@given(session_id=st.text(max_size=12), seq=st.one_of(st.integers(-5, 1100), st.integers()))
def test_a_counted_id_is_the_formatted_one(session_id: str, seq: int) -> None:
    """CounterIds takes a seq's digits from a table made once (issue 24): the same text as
    formatting it, inside the table and past it."""
    assert CounterIds().event_id(session_id, seq) == f"{session_id}-e{seq:04d}"
    assert CounterIds().event_id(session_id, True) == f"{session_id}-e{True:04d}"

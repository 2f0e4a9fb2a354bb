"""A session's log opened and indexed in one read (what the widgets do on opening).

`ReplayIndex(LogEvents(path))` reads the log twice: the scan that finds every STRIDE-th
line's offset, then the index's pass that parses each line. `open_indexed` has the scan
parse the lines it reads (`LogEvents.parsing`) and the index fold them as they come: the
same LogEvents and ReplayIndex, every check and error as before, each byte read once.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from ..events import TornTail
from .index import CHECKPOINT_EVERY, ReplayIndex
from .logview import LogEvents


class _PassIndex(ReplayIndex):
    """A ReplayIndex whose pass folds the batches the opening scan parsed."""

    def __init__(self, events: LogEvents, batches: Iterator[tuple[int, Iterable[Any]]],
                 every: int) -> None:
        self._batches = batches
        super().__init__(events, every)

    def _values(self) -> Iterator[tuple[int, Iterable[Any]]]:
        return self._batches


def open_indexed(path: Path | str, every: int = CHECKPOINT_EVERY,
                 on_torn: Callable[[TornTail], None] | None = None) -> tuple[LogEvents, ReplayIndex]:
    """`(events := LogEvents(path, on_torn), ReplayIndex(events, every))`, the log read once."""
    if every < 1:
        raise ValueError(f"every must be at least 1, not {every}")
    events, batches = LogEvents.parsing(path, on_torn)
    try:
        index = _PassIndex(events, batches, every)
    except Exception:
        # a line that is JSON but not an event stops the pass before the scan's end: finish
        # the scan, so a torn last line is reported as opening the log alone reports it
        for _ in batches:
            pass
        raise
    return events, index

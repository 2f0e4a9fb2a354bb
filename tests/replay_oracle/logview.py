"""A session's log held as its bytes, each event parsed when it is asked for.

`read_log` builds every Event up front: at 100k events that is about 170 MB of Python
objects and 1.5 s. The widgets only ever show one event at a time, so `LogEvents` keeps
the file's bytes (the log's own size) and the offset of each line, and parses an event
on `[i]`. It reads what `read_log` reads: blank lines skipped, a torn final line set
aside and reported (TornTailWarning or `on_torn`), any other line that is not an event
a LogError naming the file and line (when that line is first parsed).
"""

from __future__ import annotations

from array import array
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import orjson

from agentos_kernel.store.events import (
    OPTIONAL_FIELDS,
    REQUIRED_FIELDS,
    Event,
    LogError,
    TornTail,
    report_torn,
)
from agentos_kernel.store.replay.logview import LogEvents as NewLogEvents

_EVENT_KEYS = ({*REQUIRED_FIELDS}, {*REQUIRED_FIELDS, *OPTIONAL_FIELDS})
Row = tuple[str, str, str, str, Any]
"""What a fold needs of an event: id, session_id, type, actor, payload."""


class LogEvents(Sequence[Event]):
    """The events of one JSONL log as a read-only sequence, parsed on demand."""

    def __init__(self, path: Path | str, on_torn: Callable[[TornTail], None] | None = None) -> None:
        self.path = Path(path)
        buf = self.path.read_bytes()
        self._view = memoryview(buf)
        starts, ends, lines = array("q"), array("q"), array("q")
        pos, lineno, size = 0, 0, len(buf)
        while pos < size:
            lineno += 1
            nl = buf.find(b"\n", pos)
            end = size if nl < 0 else nl + 1
            # Canonical lines start with "{": only anything else can be a blank line.
            if buf[pos] == 0x7B or buf[pos:end].strip():
                starts.append(pos)
                ends.append(end)
                lines.append(lineno)
            pos = end
        self._starts, self._ends, self._lines = starts, ends, lines
        if starts and not buf.endswith(b"\n") and not self._parses(len(starts) - 1):
            last = len(starts) - 1  # the final segment is not JSON: a torn line, set aside
            report_torn(TornTail(self.path, lines[last], starts[last], ends[last] - starts[last]), on_torn)
            del starts[last], ends[last], lines[last]

    def _parses(self, i: int) -> bool:
        try:
            orjson.loads(self._view[self._starts[i]:self._ends[i]])
        except orjson.JSONDecodeError:
            return False
        return True

    def __len__(self) -> int:
        return len(self._starts)

    def where(self, i: int) -> str:
        """`path:line` of the i-th event (0-based), for error messages."""
        return f"{self.path}:{self._lines[i]}"

    def record(self, i: int) -> Any:
        try:
            return orjson.loads(self._view[self._starts[i]:self._ends[i]])
        except orjson.JSONDecodeError as exc:
            raise LogError(f"{self.where(i)}: -: not JSON ({exc})") from None

    def span(self, lo: int = 0, hi: int | None = None) -> tuple[memoryview, int]:
        hi = len(self) if hi is None else hi
        if hi <= lo:
            return self._view[0:0], 0
        return self._view[self._starts[lo]:self._ends[hi - 1]], self._starts[lo]

    def records(self, lo: int = 0, hi: int | None = None, batch: int = 8192) -> Iterator[Any]:
        """The JSON values of lines lo..hi-1, parsed `batch` lines per orjson call (a figure
        over 100k events: one call per line costs more than the parsing). Memory is one
        batch at a time. A batch that does not parse whole is read line by line, so a bad
        line still raises the LogError naming its file and line."""
        hi = len(self) if hi is None else hi
        for a in range(lo, hi, batch):
            b = min(a + batch, hi)
            # Canonical JSON escapes newlines inside strings, so lines join with commas.
            chunk = bytes(self._view[self._starts[a]:self._ends[b - 1]]).rstrip(b"\r\n")
            try:
                values = orjson.loads(b"[" + chunk.replace(b"\n", b",") + b"]")
            except orjson.JSONDecodeError:
                values = None  # a blank line inside the batch, or a line that is not JSON
            if type(values) is not list or len(values) != b - a:
                values = [self.record(i) for i in range(a, b)]
            yield from values

    __getitem__ = NewLogEvents.__getitem__  # the same code: an Event of record(i), at where(i)

    def rows(self, lo: int = 0, hi: int | None = None) -> Iterator[Row]:
        """(id, session_id, type, actor, payload) of events lo..hi-1, each line checked as
        an event (LogError naming file, line and field) but no Event built."""
        for i in range(lo, len(self) if hi is None else hi):
            d = self.record(i)
            if type(d) is not dict or d.keys() not in _EVENT_KEYS or type(d["type"]) is not str \
                    or type(d["actor"]) is not str:
                Event.from_dict(d, where=self.where(i))  # raises the error that names the field
            yield d["id"], d["session_id"], d["type"], d["actor"], d["payload"]


def rows_of(events: Sequence[Event], lo: int = 0, hi: int | None = None) -> Iterator[Row]:
    """`rows` for any sequence of events: LogEvents parses lines, others are read as is."""
    if isinstance(events, LogEvents):
        yield from events.rows(lo, hi)
        return
    for i in range(lo, len(events) if hi is None else hi):
        ev = events[i]
        yield ev.id, ev.session_id, ev.type, ev.actor, ev.payload

"""A session's log read on demand: an offset every STRIDE events, each event parsed when it
is asked for.

`read_log` builds every Event up front: at 100k events that is about 170 MB of Python
objects and 1.5 s. The widgets only ever show one event at a time, so `LogEvents` keeps
the file offset and line number of every STRIDE-th event (16 bytes per STRIDE events: a
million-event log costs 250 kB, not its 300 MB of bytes) and reads the block of STRIDE
lines an event is in when it is asked for (the last block read is kept: stepping reads
each block once). It reads what `read_log` reads: blank lines skipped, a torn final line
set aside and reported (TornTailWarning or `on_torn`), any other line that is not an
event a LogError naming the file and line (when that line is first parsed). Only the
bytes present when it was opened are read: lines appended later are not part of it, and
a block that no longer holds the lines it held is a LogError, never a wrong event.
"""

from __future__ import annotations

import os
from array import array
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import suppress
from pathlib import Path
from typing import Any, overload

import orjson

from ..events import EVENT_KEYS, Event, LogError, TornTail, report_torn

_Block = tuple[int, bytes, list[int], list[int], list[int]]
Row = tuple[str, str, str, str, Any]
"""What a fold needs of an event: id, session_id, type, actor, payload."""

STRIDE = 64
"""Events between two indexed offsets: a step reads one block of this many lines."""
ROWS_BATCH = 4 * STRIDE
"""Lines `rows` reads and parses per batch (each line on its own): a few MB of values at once."""
CACHED = 8
"""Blocks kept read (a step reads the event's block and folds from a mark up to 4 blocks back)."""
_MASK = STRIDE - 1
assert not STRIDE & _MASK, "STRIDE is a power of two"
_CHUNK = 1 << 18
# Bytes read at a time while indexing: memory while opening is this, whatever the log's size.
_PARSED_CHUNK = 1 << 16  # ... and by `parsing`: its values still in the CPU's caches when folded


def _is_event(buf: bytes, pos: int, end: int) -> bool:
    # Canonical lines start with "{": only anything else can be a blank line.
    return buf[pos] == 0x7B or bool(buf[pos:end].strip())


class LogEvents(Sequence[Event]):
    """The events of one JSONL log as a read-only sequence, parsed on demand."""

    def __init__(self, path: Path | str, on_torn: Callable[[TornTail], None] | None = None) -> None:
        self.path = Path(path)
        list(self._open(on_torn, parse=False))  # the scan alone: it yields nothing

    @classmethod
    def parsing(cls, path: Path | str, on_torn: Callable[[TornTail], None] | None = None
                ) -> tuple[LogEvents, Iterator[tuple[int, Iterable[Any]]]]:
        """A LogEvents and its `batches()`, from one read: the scan parses what it reads, whole
        once the iterator is; from a read with a line that is not JSON (or blank) on, it is
        `__init__`'s scan and `batches` reads those lines after it (its errors, warnings)."""
        self = cls.__new__(cls)
        self.path = Path(path)
        return self, self._open(on_torn, parse=True)

    def _open(self, on_torn: Callable[[TornTail], None] | None,
              parse: bool) -> Iterator[tuple[int, Iterable[Any]]]:
        self._starts, self._lines = starts, lines = array("Q"), array("Q")
        self._cache: dict[int, _Block] = {}
        # events, blank lines (a line's number is their sum); the last event line's start, end, number
        count = blanks = offset = parsed = last_at = last_end = last_line = 0
        chunk = size = _PARSED_CHUNK if parse else _CHUNK  # parsing 256 kB: 1.24x the fold; 64 kB: 1.10x
        fd = os.open(self.path, os.O_RDONLY)
        try:
            while True:
                # Each read starts at the first line not yet indexed (one copy of each byte)
                buf = os.pread(fd, size, offset)
                if not buf:
                    break
                cut = buf.rfind(b"\n") + 1 if len(buf) == size else len(buf)  # all at the end
                if not cut:  # a line longer than a read: read more of it
                    size *= 2
                    continue
                values = None
                if parse and parsed == count and buf[cut - 1] == 0x0A:
                    parts = buf.split(b"\n")
                    parts.pop()  # the unfinished line, or the empty one after the last newline
                    with suppress(orjson.JSONDecodeError):  # else scanned, and read after it
                        values = list(map(orjson.loads, parts))
                if values is not None:  # every line JSON: none blank, each an event
                    lens = list(map(len, parts))  # the offsets from the split
                    for j in range(-count & _MASK, len(parts), STRIDE):
                        starts.append(offset + sum(lens[:j]) + j)
                        lines.append(count + blanks + j + 1)
                    last_at, last_end, last_line = offset + cut - 1 - lens[-1], offset + cut, \
                        count + blanks + len(parts)
                    a, count = count, count + len(parts)
                    parsed, self._len, self._end = count, count, offset + cut
                    offset, size = offset + cut, chunk
                    self._cache.pop((a - 1) // STRIDE, None)  # a block `where` read cut at a
                    yield a, values
                    continue
                pos, last, find = 0, -1, buf.find
                # A loop a line, as lean as it goes (it is a tenth of opening a widget): canonical
                # lines start with "{"; only anything else can be blank (as _is_event, inlined).
                while pos < cut:
                    end = find(b"\n", pos, cut) + 1 or cut
                    if buf[pos] == 0x7B or buf[pos:end].strip():
                        if not count & _MASK:
                            starts.append(offset + pos)
                            lines.append(count + blanks + 1)
                        count += 1
                        last = pos
                    else:
                        blanks += 1
                    pos = end
                if last >= 0:
                    last_at, last_end = offset + last, offset + (find(b"\n", last, cut) + 1 or cut)
                    last_line = count + blanks - buf.count(b"\n", last, cut) + (buf[cut - 1] == 0x0A)
                offset, size = offset + cut, chunk
        finally:
            os.close(fd)
        self._len, self._end, self._cache = count, offset, {}
        if count and not self._ended_by_newline() and not self._parses(count - 1):
            # the final segment is not JSON: a torn line, set aside
            report_torn(TornTail(self.path, last_line, last_at, last_end - last_at), on_torn)
            # (an offset indexed at the torn line, if any, ends the block before it: unused)
            self._len, self._end, self._cache = count - 1, last_at, {}
        if parse and parsed < self._len:
            yield from self._batches(parsed, self._len, ROWS_BATCH)

    def _ended_by_newline(self) -> bool:
        if not self._end:
            return True
        return self._pread(self._end - 1, 1) == b"\n"

    def _pread(self, offset: int, size: int) -> bytes:
        fd = os.open(self.path, os.O_RDONLY)
        try:
            return os.pread(fd, size, offset)
        finally:
            os.close(fd)

    def _block(self, b: int) -> _Block:
        """Block b: (b, its bytes, and each event's start, end (in those bytes) and line
        number), read once and kept while it is one of the last CACHED blocks asked for."""
        hit = self._cache.get(b)
        if hit is not None:
            return hit
        lo = self._starts[b]
        hi = self._starts[b + 1] if b + 1 < len(self._starts) else self._end
        buf = self._pread(lo, hi - lo)
        starts, ends, lines = [], [], []
        pos, lineno, size = 0, self._lines[b] - 1, len(buf)
        while pos < size:
            nl = buf.find(b"\n", pos)
            end = size if nl < 0 else nl + 1
            lineno += 1
            if _is_event(buf, pos, end):
                starts.append(pos)
                ends.append(end)
                lines.append(lineno)
            pos = end
        want = min(STRIDE, self._len - b * STRIDE)
        if len(buf) != hi - lo or len(starts) != want or (starts and starts[0] != 0):
            raise LogError(f"{self.path}:{self._lines[b]}: changed since it was opened: "
                           "open the session again")
        if len(self._cache) >= CACHED:
            del self._cache[next(iter(self._cache))]
        block = self._cache[b] = (b, buf, starts, ends, lines)
        return block

    def _line(self, i: int) -> tuple[bytes, int, int, int]:
        """(block bytes, start, end, line number) of event i."""
        b, buf, starts, ends, lines = self._block(i // STRIDE)
        j = i - b * STRIDE
        return buf, starts[j], ends[j], lines[j]

    def _parses(self, i: int) -> bool:
        buf, start, end, _ = self._line(i)
        try:
            orjson.loads(buf[start:end])
        except orjson.JSONDecodeError:
            return False
        return True

    def __len__(self) -> int:
        return self._len

    def where(self, i: int) -> str:
        """`path:line` of the i-th event (0-based), for error messages."""
        return f"{self.path}:{self._line(i)[3]}"

    def record(self, i: int) -> Any:
        """The i-th line's JSON value (LogError if it is not JSON)."""
        buf, start, end, lineno = self._line(i)
        try:
            return orjson.loads(buf[start:end])
        except orjson.JSONDecodeError as exc:
            raise LogError(f"{self.path}:{lineno}: -: not JSON ({exc})") from None

    def span(self, lo: int = 0, hi: int | None = None) -> tuple[bytes, int]:
        """The bytes of lines lo..hi-1 as they are in the file (blank lines between them
        included), and the file offset they start at."""
        hi = len(self) if hi is None else hi
        if hi <= lo:
            return b"", 0
        b, _, starts, _, _ = self._block(lo // STRIDE)
        start = self._starts[b] + starts[lo - b * STRIDE]
        b, _, _, ends, _ = self._block((hi - 1) // STRIDE)
        end = self._starts[b] + ends[hi - 1 - b * STRIDE]
        return self._pread(start, end - start), start

    def records(self, lo: int = 0, hi: int | None = None, batch: int = 8192) -> Iterator[Any]:
        """The JSON values of lines lo..hi-1, `batch` lines read at once and each parsed on
        its own (never joined into one array: two lines that are JSON only together would
        parse as two values). Memory is one batch at a time. A batch that does not parse
        whole is read line by line, so a bad line still raises the LogError naming its file
        and line."""
        for _, values in self._batches(lo, len(self) if hi is None else hi, batch):
            yield from values

    def batches(self, lo: int = 0, hi: int | None = None,
                batch: int = ROWS_BATCH) -> Iterator[tuple[int, Iterable[Any]]]:
        """(a, the JSON values of lines a..) for each batch of `batch` lines of lo..hi-1, each
        line parsed on its own, none checked as an event (`rows` checks them): what a pass
        over the whole log folds, without a tuple made and unpacked for each event."""
        return self._batches(lo, len(self) if hi is None else hi, batch)

    def _batches(self, lo: int, hi: int, batch: int) -> Iterator[tuple[int, Iterable[Any]]]:
        """(a, the values of lines a..) for each batch of lines lo..hi-1."""
        fd = os.open(self.path, os.O_RDONLY)  # one descriptor for the whole pass
        try:
            for a in range(lo, hi, batch):
                b = min(a + batch, hi)
                if not a % STRIDE and (not b % STRIDE or b == len(self)):  # whole blocks: no parse
                    start = self._starts[a // STRIDE]
                    end = self._starts[b // STRIDE] if b < len(self) else self._end
                    chunk = os.pread(fd, end - start, start)
                else:
                    chunk = self.span(a, b)[0]
                # Each line parsed on its own: lines joined with commas into one array parse as
                # many values as lines also when one line opens a string or a bracket that the
                # next closes and that one holds two events (neither line JSON alone).
                lines = chunk.split(b"\n")
                if lines[-1] == b"":  # the newline that ends the last line (no copy stripped)
                    lines.pop()
                if len(lines) != b - a:  # blank lines after the last (whitespace) or inside
                    lines = chunk.rstrip().split(b"\n")
                try:
                    values = list(map(orjson.loads, lines)) if len(lines) == b - a else None
                except orjson.JSONDecodeError:
                    values = None  # a line that is not JSON (or a blank one inside the batch)
                if values is not None:
                    yield a, values
                else:  # line by line, lazily: the first bad line raises as a reader meets it
                    yield a, (self.record(i) for i in range(a, b))
        finally:
            os.close(fd)

    @overload
    def __getitem__(self, i: int) -> Event: ...

    @overload
    def __getitem__(self, i: slice) -> list[Event]: ...

    def __getitem__(self, i: int | slice) -> Event | list[Event]:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        if i < 0:
            i += len(self)
        if not 0 <= i < len(self):
            raise IndexError(f"event {i} of a log of {len(self)}")
        return Event.from_dict(self.record(i), where=self.where(i))

    def rows(self, lo: int = 0, hi: int | None = None) -> Iterator[Row]:
        """(id, session_id, type, actor, payload) of events lo..hi-1, each line checked as
        an event (LogError naming file, line and field) but no Event built."""
        hi = len(self) if hi is None else hi
        # a few lines from the blocks kept; more in batches of ROWS_BATCH lines (a reference
        # request's events parse to ~10 kB each: 8192 at once held 80 MB)
        batches = [(lo, (self.record(i) for i in range(lo, hi)))] if hi - lo < STRIDE \
            else self._batches(lo, hi, ROWS_BATCH)
        for a, values in batches:
            for i, d in enumerate(values, a):
                if type(d) is not dict or d.keys() not in EVENT_KEYS or type(d["type"]) is not str \
                        or type(d["actor"]) is not str:
                    Event.from_dict(d, where=self.where(i))  # raises the error naming the field
                yield d["id"], d["session_id"], d["type"], d["actor"], d["payload"]


def rows_of(events: Sequence[Event], lo: int = 0, hi: int | None = None) -> Iterator[Row]:
    """`rows` for any sequence of events: LogEvents parses lines, others are read as is."""
    if isinstance(events, LogEvents):
        return events.rows(lo, hi)
    return ((ev.id, ev.session_id, ev.type, ev.actor, ev.payload)
            for ev in (events[i] for i in range(lo, len(events) if hi is None else hi)))

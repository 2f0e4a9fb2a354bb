"""The widgets' opening pass (ReplayIndex over a LogEvents) in its faster form: it folds the
parsed lines as they come (no row tuple per event, one file descriptor for the pass) and
still refuses what it refused, at the same line and with the same error, as the index it
replaced (tests/replay_oracle) and as a reader that parses each line on its own. Guards are
counts, never timings."""

from __future__ import annotations

import functools
import os
import random
import tempfile
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from agentos_kernel.store.events import LogError, TornTail
from agentos_kernel.store.replay import logview
from agentos_kernel.store.replay.index import ReplayIndex
from agentos_kernel.store.replay.logview import ROWS_BATCH, LogEvents
from agentos_kernel.testing import write_long_session

from .replay_oracle.index import ReplayIndex as OldReplayIndex
from .replay_oracle.logview import LogEvents as OldLogEvents
from .test_replay_ondemand import _event_log, _generated


def _opened(cls_index: type, cls_log: type, path: Path) -> Any:
    """The snapshot after every event (and a few on the way), or the error opening raised."""
    torn: list[TornTail] = []
    try:
        index = cls_index(cls_log(path, on_torn=torn.append))
        n = len(index)
        return torn, n, [index.snapshot(k) for k in sorted({0, n // 3, n // 2, n})]
    except (LogError, ValueError, TypeError, KeyError) as exc:
        return torn, type(exc).__name__, str(exc)


@pytest.mark.parametrize("seed", range(40))
def test_opening_a_mangled_log_gives_what_the_old_index_gave(tmp_path: Path, seed: int) -> None:
    """Blank, whitespace and CRLF lines, torn, unterminated and corrupt lines: the same
    snapshots, or the same error naming the same line."""
    path = _generated(tmp_path, seed)
    assert _opened(ReplayIndex, LogEvents, path) == _opened(OldReplayIndex, OldLogEvents, path)


@pytest.mark.parametrize("seed", range(6))
def test_a_bad_event_or_payload_fails_the_pass_as_before(tmp_path: Path, seed: int) -> None:
    """An event that is no event (a missing field, an extra one, a type that is no string, a
    line that is a list) or a payload the fold cannot read (usage that is no number), put
    anywhere: the pass raises what the old one raised, for the first of them in the log."""
    rnd = random.Random(seed)
    path = _event_log(tmp_path, seed, rnd.randint(300, 900))
    lines = path.read_bytes().splitlines(keepends=True)
    for _ in range(rnd.randint(1, 3)):
        k = rnd.randrange(len(lines))
        d = orjson.loads(lines[k])
        kind = rnd.choice(["missing", "extra", "type", "list", "usage", "actor"])
        if kind == "missing":
            del d["parent_id"]
        elif kind == "extra":
            d["more"] = 1
        elif kind == "type":
            d["type"] = 7
        elif kind == "actor":
            d["actor"] = None
        elif kind == "usage":
            d["type"], d["payload"] = "llm.response", {"usage": {"input_tokens": "many"}}
        lines[k] = orjson.dumps([d] if kind == "list" else d) + b"\n"
    path.write_bytes(b"".join(lines))
    assert _opened(ReplayIndex, LogEvents, path) == _opened(OldReplayIndex, OldLogEvents, path)


def test_the_pass_makes_no_row_per_event_and_opens_the_log_once(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """The pass folds the parsed lines where they are (LogEvents.rows, a 5-tuple made and
    unpacked per event, is not called) through one descriptor (was: an open per batch)."""
    path = write_long_session(tmp_path, "s", 10 * ROWS_BATCH + 3)
    events = LogEvents(path)
    calls = {"rows": 0, "open": 0}
    rows, real_open = LogEvents.rows, os.open

    def counted_rows(self: LogEvents, *a: Any) -> Any:
        calls["rows"] += 1
        return rows(self, *a)

    def counted_open(*a: Any, **k: Any) -> int:
        calls["open"] += 1
        return real_open(*a, **k)

    monkeypatch.setattr(LogEvents, "rows", counted_rows)
    monkeypatch.setattr(os, "open", counted_open)
    index = ReplayIndex(events)
    monkeypatch.undo()
    assert calls == {"rows": 0, "open": 1}
    assert index.snapshot(len(index)) == OldReplayIndex(OldLogEvents(path)).snapshot(len(index))


# -- each line parsed on its own: random splits and joins of a log's lines -----------------

_LOG_LINES = 3 * ROWS_BATCH + 5


@functools.cache
def _canonical_lines() -> tuple[bytes, ...]:
    with tempfile.TemporaryDirectory() as tmp:
        return tuple(write_long_session(Path(tmp), "s", _LOG_LINES).read_bytes().splitlines())


def _per_line(data: bytes) -> tuple[str, Any]:
    """What a reader that parses each non-blank line on its own finds: the values, or the
    number of the first line that is not JSON."""
    values = []
    for n, line in enumerate(data.split(b"\n"), 1):
        if line.strip():
            try:
                values.append(orjson.loads(line))
            except orjson.JSONDecodeError:
                return "bad line", n
    return "values", values


def _log_events(path: Path) -> tuple[str, Any]:
    try:
        return "values", list(LogEvents(path).records(batch=ROWS_BATCH))
    except LogError as exc:
        return "bad line", int(str(exc).split(":")[1])


_EDITS = st.lists(st.tuples(st.sampled_from(["split", "join", "comma-join"]),
                            st.integers(0, _LOG_LINES - 2), st.integers(1, 10_000)), min_size=1, max_size=4)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(edits=_EDITS)
@example(edits=[("split", ROWS_BATCH + 7, 330), ("comma-join", ROWS_BATCH + 8, 1)])
def test_lines_split_and_joined_at_random_read_as_each_line_alone(
        tmp_path: Path, edits: list[tuple[str, int, int]]) -> None:
    """A line cut in two (often inside a string: the first half opens it, the second closes
    it) and lines run together (with or without a comma): LogEvents gives each line's own
    value or refuses the first line that is not JSON alone, never two halves read as events
    (the joined-array parse took `..."x` + `y"},{...}` for two events)."""
    lines = list(_canonical_lines())
    for kind, k, at in edits:
        k = min(k, len(lines) - 2)
        if kind == "split" and len(lines[k]) > 1:
            cut = at % (len(lines[k]) - 1) + 1
            lines[k:k + 1] = [lines[k][:cut], lines[k][cut:]]
        elif kind != "split":
            lines[k:k + 2] = [lines[k] + (b"," if kind == "comma-join" else b"") + lines[k + 1]]
    path = tmp_path / "edited.jsonl"
    data = b"\n".join(lines) + b"\n"
    path.write_bytes(data)
    assert _log_events(path) == _per_line(data)


# -- the opening scan: each byte read once, lines across reads of any size ------------------


@pytest.mark.parametrize("seed", range(40))
def test_the_scan_across_reads_of_any_size_indexes_what_the_old_one_did(
        tmp_path: Path, seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Reads of 1 byte to a few kB (each line then spans reads, and most are longer than a
    read: the read grows until it holds one), on the mangled logs: the same length, torn
    tail, line numbers, events and spans as the whole-bytes LogEvents."""
    path = _generated(tmp_path, seed)
    monkeypatch.setattr(logview, "_CHUNK", random.Random(seed).choice([1, 2, 7, 64, 300, 1000, 4096]))
    torn: list[TornTail] = []
    new = LogEvents(path, on_torn=torn.append)
    monkeypatch.undo()
    old_torn: list[TornTail] = []
    old = OldLogEvents(path, on_torn=old_torn.append)
    assert (len(new), torn) == (len(old), old_torn)
    for i in range(len(old)):
        assert new.where(i) == old.where(i)
        try:
            assert new[i] == old[i]
        except LogError as exc:
            with pytest.raises(LogError, match=str(exc).split(":")[1]):
                old[i]
    assert new.span()[0] == bytes(old.span()[0])


def test_the_scan_reads_each_byte_of_the_log_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Opening reads the file's bytes once, each read starting at the first line not yet
    indexed (a read's unfinished last line is read again by the next; was: a read, that line
    joined to the next read and each read's complete lines copied out: three copies of the
    log), plus the byte that says whether the last line is ended."""
    path = write_long_session(tmp_path, "s", 2000)
    read: list[int] = []
    real = os.pread

    def counted(fd: int, n: int, at: int) -> bytes:
        got = real(fd, n, at)
        read.append(len(got))
        return got

    monkeypatch.setattr(os, "pread", counted)
    events = LogEvents(path)
    monkeypatch.undo()
    longest = max(map(len, path.read_bytes().splitlines()))
    assert len(events) == 2000
    assert path.stat().st_size < sum(read) <= path.stat().st_size + 1 + len(read) * longest

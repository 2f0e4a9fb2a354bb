"""A log opened and indexed in one read (`open_indexed`: the opening scan parses the lines it
reads) against the two reads it replaced (`ReplayIndex(LogEvents(path))`): on generated logs
(blank, whitespace and CRLF lines, torn, unterminated and corrupt lines, lines that are JSON
but no event), with reads of several sizes, the same offsets, length, torn line, errors,
snapshots, layers and hook runs; and each byte of a clean log read once."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest

from agentos_kernel.store.events import LogError, TornTail
from agentos_kernel.store.replay import logview
from agentos_kernel.store.replay.index import CHECKPOINT_EVERY, ReplayIndex
from agentos_kernel.store.replay.logview import LogEvents
from agentos_kernel.store.replay.opened import open_indexed
from agentos_kernel.testing import write_long_session

from .test_replay_ondemand import HOOKS, _event_log, _generated

CHUNKS = [700, 4096, 1 << 18]
"""Bytes a read of the opening scan takes: a line longer than a read, a few lines, the default."""


def _both(path: Path, every: int) -> tuple[Any, Any]:
    """(what the two reads give, what one read gives): the pair, its torn lines, or the error."""
    out = []
    for opened in (False, True):
        torn: list[TornTail] = []
        try:
            if opened:
                events, index = open_indexed(path, every, on_torn=torn.append)
            else:
                events = LogEvents(path, on_torn=torn.append)
                index = ReplayIndex(events, every)
        except (LogError, ValueError, TypeError) as exc:
            out.append((type(exc).__name__, str(exc), torn))
        else:
            out.append((events, index, torn))
    return out[0], out[1]


def _same(old: Any, new: Any, rnd: random.Random) -> None:
    if isinstance(old[0], str):
        assert new == old
        return
    (oe, oi, ot), (ne, ni, nt) = old, new
    assert nt == ot
    assert (ne._starts, ne._lines, len(ne), ne._end) == (oe._starts, oe._lines, len(oe), oe._end)
    assert list(ne) == list(oe)
    n = len(oi)
    assert len(ni) == n and ni._codes == oi._codes and ni._marks == oi._marks
    assert ni._layer_marks == oi._layer_marks and ni._by_hook == oi._by_hook
    for k in rnd.sample(range(n + 1), min(n + 1, 60)):
        assert ni.snapshot(k) == oi.snapshot(k), k
        assert ni.layer_counts(k) == oi.layer_counts(k), k
    for i in rnd.sample(range(n), min(n, 60)):
        assert [ni.hook_run(i, h) for h in HOOKS] == [oi.hook_run(i, h) for h in HOOKS]


@pytest.mark.parametrize("chunk", CHUNKS)
@pytest.mark.parametrize("seed", range(40))
def test_one_read_opens_what_two_reads_opened(tmp_path: Path, seed: int, chunk: int,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(logview, "_CHUNK", chunk)
    monkeypatch.setattr(logview, "_PARSED_CHUNK", chunk)
    rnd = random.Random(seed)
    path = _generated(tmp_path, seed) if seed % 2 else _event_log(tmp_path, seed, rnd.randint(1, 900))
    if seed % 5 == 0:  # a line that is JSON but no event, somewhere
        lines = path.read_bytes().splitlines(keepends=True)
        lines.insert(rnd.randrange(len(lines) + 1), rnd.choice([b"[1, 2]\n", b'{"id": "x"}\n', b"7\n"]))
        path.write_bytes(b"".join(lines))
    if seed % 7 == 3:  # and a torn last line after it
        path.write_bytes(path.read_bytes() + b'{"id": "half')
    old, new = _both(path, rnd.choice([1, 5, 64, CHECKPOINT_EVERY]))
    _same(old, new, rnd)


def test_an_empty_log_and_a_bad_every(tmp_path: Path) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b"")
    old, new = _both(empty, CHECKPOINT_EVERY)
    _same(old, new, random.Random(0))
    assert len(new[0]) == 0
    with pytest.raises(ValueError, match="every must be at least 1"):
        open_indexed(empty, 0)


def counted_reads(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The sizes of the reads LogEvents makes from now on (os.pread counted)."""
    read: list[int] = []
    real = logview.os.pread

    def pread(fd: int, n: int, at: int) -> bytes:
        got = real(fd, n, at)
        read.append(len(got))
        return got

    monkeypatch.setattr(logview.os, "pread", pread)
    return read


def test_each_byte_of_a_clean_log_is_read_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write_long_session(tmp_path, "s", 3000)
    size = path.stat().st_size
    read = counted_reads(monkeypatch)
    ReplayIndex(LogEvents(path))
    assert sum(read) >= 2 * size  # the scan, then the pass
    read.clear()
    events, index = open_indexed(path)
    # each line once (a read's unfinished last line again by the next), the last byte again
    assert size < sum(read) < 1.02 * size
    assert len(index) == len(events) == 3000

"""The on-demand LogEvents and the bounded ReplayIndex against the forms they replaced
(tests/replay_oracle: the whole file's bytes held, a fold of every event kept): generated
logs (blank and whitespace lines, CRLF, torn, unterminated and corrupt lines, blocks of every
length), read at random positions in random order, must give the same events, line numbers,
bytes, errors and snapshots."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest

from agentos_kernel.store.events import LogError, TornTail
from agentos_kernel.store.replay.logview import STRIDE, LogEvents
from agentos_kernel.testing import write_long_session

from .replay_oracle.logview import LogEvents as OldLogEvents

SEEDS = range(40)


def _generated(tmp: Path, seed: int) -> Path:
    """A chained log of 2..5 blocks' worth of events, mangled as a seed says."""
    rnd = random.Random(seed)
    n = rnd.choice([2, 3, STRIDE - 1, STRIDE, STRIDE + 1, 2 * STRIDE, rnd.randint(2, 5 * STRIDE)])
    lines = write_long_session(tmp / "src", f"s{seed}", n).read_bytes().splitlines(keepends=True)
    out: list[bytes] = []
    for line in lines:
        r = rnd.random()
        if r < 0.05:
            out.append(rnd.choice([b"\n", b"   \n", b"\t\r\n", b"\r\n"]))
        if r > 0.97:
            line = line.replace(b"\n", b"\r\n")
        out.append(line)
    tail = rnd.choice(["none", "none", "torn", "unterminated", "space", "bad", "bad-last", "blank-end"])
    if tail == "torn":
        out.append(b'{"id": "half')
    elif tail == "unterminated":
        out[-1] = out[-1].rstrip(b"\r\n")
    elif tail == "space":
        out.append(b"   ")
    elif tail == "bad":
        out.insert(rnd.randrange(len(out)), b"{not json\n")
    elif tail == "bad-last":
        out.append(b"{not json\n")
        out.append(b"  ")
    elif tail == "blank-end":
        out.append(b"\n\n")
    path = tmp / f"log{seed}.jsonl"
    path.write_bytes(b"".join(out))
    return path


def _outcome(fn: Any) -> Any:
    """What a call gives: its value, or the error it raises (type and message)."""
    try:
        value = fn()
    except (LogError, IndexError) as exc:
        return type(exc).__name__, str(exc)
    return bytes(value) if isinstance(value, memoryview) else value


def _open(cls: type, path: Path) -> tuple[Any, list[TornTail]]:
    torn: list[TornTail] = []
    return cls(path, on_torn=torn.append), torn


@pytest.mark.parametrize("seed", SEEDS)
def test_log_events_read_what_the_whole_bytes_read(tmp_path: Path, seed: int) -> None:
    path = _generated(tmp_path, seed)
    old, old_torn = _open(OldLogEvents, path)
    new, new_torn = _open(LogEvents, path)
    assert new_torn == old_torn and len(new) == len(old)
    rnd = random.Random(seed)
    n = len(old)
    positions = list(range(n))
    rnd.shuffle(positions)
    for i in positions:  # random order: blocks read, dropped and read again
        assert _outcome(lambda i=i: new.where(i)) == _outcome(lambda i=i: old.where(i))
        assert _outcome(lambda i=i: new.record(i)) == _outcome(lambda i=i: old.record(i))
        assert _outcome(lambda i=i: new[i]) == _outcome(lambda i=i: old[i])
    for _ in range(30):
        lo = rnd.randrange(n + 1)
        hi = rnd.randrange(lo, n + 1)
        assert _outcome(lambda lo=lo, hi=hi: new.span(lo, hi)) == \
            _outcome(lambda lo=lo, hi=hi: tuple(bytes(x) if isinstance(x, memoryview) else x
                                                for x in old.span(lo, hi)))
        batch = rnd.choice([1, 7, STRIDE, 8192])
        assert _outcome(lambda lo=lo, hi=hi, b=batch: list(new.records(lo, hi, b))) == \
            _outcome(lambda lo=lo, hi=hi, b=batch: list(old.records(lo, hi, b)))
        assert _outcome(lambda lo=lo, hi=hi: list(new.rows(lo, hi))) == \
            _outcome(lambda lo=lo, hi=hi: list(old.rows(lo, hi)))
    assert _outcome(lambda: new[-1] if n else None) == _outcome(lambda: old[-1] if n else None)


def test_a_log_rewritten_after_it_was_opened_is_refused_not_misread(tmp_path: Path) -> None:
    path = write_long_session(tmp_path, "s", 3 * STRIDE)
    events = LogEvents(path)
    first = events[0]
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join([lines[0], b"\n", *lines[1:]]))  # every later offset moves by one
    assert events[0] == first  # the block read before is kept
    with pytest.raises(LogError, match=rf"{path.name}:{STRIDE + 1}: changed since it was opened"):
        events[STRIDE + 5]


def test_lines_appended_after_opening_are_not_part_of_it(tmp_path: Path) -> None:
    path = write_long_session(tmp_path, "s", STRIDE + 3)
    events = LogEvents(path)
    with path.open("ab") as f:
        f.write(path.read_bytes().splitlines(keepends=True)[-1])
    assert len(events) == STRIDE + 3 and events[-1].seq == STRIDE + 3
    assert len(list(events.records())) == STRIDE + 3


@pytest.mark.parametrize("n", [STRIDE - 1, STRIDE, 2 * STRIDE])
def test_a_torn_line_at_a_block_start_is_set_aside(tmp_path: Path, n: int) -> None:
    path = write_long_session(tmp_path, "s", n)
    with path.open("ab") as f:
        f.write(b'{"id": "half')
    old, old_torn = _open(OldLogEvents, path)
    new, new_torn = _open(LogEvents, path)
    assert new_torn == old_torn and len(old_torn) == 1 and len(new) == len(old) == n
    assert list(new) == list(old) and list(new.records()) == list(old.records())

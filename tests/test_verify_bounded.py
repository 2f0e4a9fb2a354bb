"""verify in bounded state (integrity_scan.py): the fast path for a canonical chained line
reports exactly what the general path does, a duplicated event is still named with the line
it was first written at though ids and seqs of our writer's logs are no longer kept, and the
traced memory of a verify does not grow with the log. Counts bytes, never seconds."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentos_kernel.store import integrity, integrity_seen
from agentos_kernel.store.events import canonical
from agentos_kernel.store.integrity import verify_lines, verify_log
from agentos_kernel.testing import write_long_session

from .helpers import Run
from .test_replay_summary import _peak
from .test_verify import Lines, bare, edited, rechain, write


@pytest.fixture
def log(canonical_run: Run) -> Lines:
    return canonical_run.log_path.read_bytes().splitlines(keepends=True)


def _general(monkeypatch: pytest.MonkeyPatch, data: Lines) -> object:
    with monkeypatch.context() as m:
        m.setattr(integrity, "FAST", False)
        return verify_lines(data, Path("x.jsonl")).to_dict()


_OPS = st.lists(st.tuples(st.sampled_from(["delete", "copy", "copy-rechain", "blank", "swap", "edit",
                                            "respell", "dupkey", "renumber", "rechain", "id"]),
                          st.integers(0, 40), st.integers(0, 40)), max_size=3)


def _rechained(data: Lines, start: int) -> Lines:
    """`rechain` from `start`, or the lines as they are when one on the way is not an event."""
    try:
        return rechain(data, start)
    except (orjson.JSONDecodeError, TypeError, AttributeError):
        return data


def _apply(data: Lines, ops: list[tuple[str, int, int]]) -> Lines:
    for op, a, b in ops:
        if not data:
            break
        i, j = a % len(data), b % len(data)
        if op == "delete":
            data = data[:i] + data[i + 1:]
        elif op == "copy":
            data = [*data[:j], data[i], *data[j:]]
        elif op == "copy-rechain":
            data = _rechained([*data[:j], data[i], *data[j:]], j)
        elif op == "blank":
            data = [*data[:i], b"\n", *data[i:]]
        elif op == "swap":
            data[i], data[j] = data[j], data[i]
        elif data[i].strip() and op in ("edit", "respell", "dupkey", "renumber", "id"):
            obj = orjson.loads(data[i])
            if op == "edit":
                data = edited(data, i, actor="someone")
            elif op == "respell":
                data[i] = orjson.dumps(obj) + b"\n" if list(obj) != sorted(obj) else \
                    canonical(obj).replace(b'":', b'": ', 1) + b"\n"
            elif op == "dupkey":
                data[i] = data[i].replace(b'{"actor":', b'{"actor":"x","actor":', 1)
            elif op == "renumber":
                data = edited(data, i, seq=j + 1)
            else:
                data = edited(data, i, id=f"{obj.get('session_id')}-e{j + 1:04d}")
        elif op == "rechain":
            data = _rechained(data, i)
    return data


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=_OPS)
def test_the_fast_path_reports_what_the_general_path_does(log: Lines, monkeypatch: pytest.MonkeyPatch,
                                                          ops: list[tuple[str, int, int]]) -> None:
    for base in (list(log), _with_ids(log, _rising(len(log)))):  # the writer's ids, rising ids
        data = _apply(base, ops)
        assert verify_lines(data, Path("x.jsonl")).to_dict() == _general(monkeypatch, data)


def test_a_copied_event_renumbered_and_rechained_is_named_by_its_id_past_a_blank_line(
        log: Lines, tmp_path: Path) -> None:
    # Line 20 is line 18's event (seq 17) copied and given seq 19 ... with the chain recomputed
    # from it on: only the id says it is a copy; a blank line shifts the lines after line 3.
    data = [*log[:3], b"\n", *log[3:]]
    copy = orjson.loads(data[17])
    data = rechain([*data[:19], canonical({**copy, "seq": 19}) + b"\n",
                    *(canonical({**orjson.loads(x), "seq": orjson.loads(x)["seq"] + 1}) + b"\n"
                      for x in data[19:])], 19)
    report = verify_log(write(tmp_path, data))
    assert report.problem is not None
    assert (report.problem.kind, report.problem.line, report.problem.seq) == ("duplicated", 20, 19)
    assert f"repeats event {copy['id']!r}, first written at line 18" in report.problem.message
    assert report.blank is not None and report.blank.line == 4


def test_an_id_that_is_not_the_writers_is_kept_and_its_copy_found(log: Lines, tmp_path: Path) -> None:
    sid = orjson.loads(log[0])["session_id"]
    # Line 3 carries the id the writer gives seq 7; line 7 keeps its own: the same id twice.
    data = rechain(edited(log, 2, id=f"{sid}-e0007"), 2)
    report = verify_log(write(tmp_path, data))
    assert report.problem is not None and (report.problem.kind, report.problem.line) == ("duplicated", 7)
    assert "first written at line 3" in report.problem.message


def test_a_log_without_seq_or_chain_still_finds_a_repeated_id(log: Lines, tmp_path: Path) -> None:
    plain = bare(log)
    report = verify_log(write(tmp_path, [*plain, plain[4]]))
    assert report.problem is not None and (report.problem.kind, report.problem.line) == ("duplicated", 33)
    assert "first written at line 5" in report.problem.message


def test_verify_memory_does_not_grow_with_the_log(tmp_path: Path) -> None:
    short, long = write_long_session(tmp_path, "a", 1000), write_long_session(tmp_path, "b", 8000)
    verify_log(short)  # warm: imports, interned strings
    assert verify_log(long).ok
    assert _peak(lambda: verify_log(long)) - _peak(lambda: verify_log(short)) < 20_000


def _with_ids(data: Lines, ids: list[str]) -> Lines:
    """The log with each event's id replaced (parent links followed), its chain recomputed."""
    new = {}
    out = []
    for line, eid in zip(data, ids, strict=True):
        obj = orjson.loads(line)
        new[obj["id"]] = eid
        obj["id"], obj["parent_id"] = eid, new.get(obj["parent_id"], obj["parent_id"])
        out.append(canonical(obj) + b"\n")
    return rechain(out)


def _rising(k: int) -> list[str]:
    """Ids that rise as a live run's UUIDv7s do (and do not end in the seq)."""
    return [f"0190{i:012x}-7abc-x" for i in range(1, k + 1)]


def test_rising_ids_are_not_kept_and_a_copy_among_them_is_found(log: Lines, tmp_path: Path) -> None:
    data = _with_ids(log, _rising(len(log)))
    assert verify_log(write(tmp_path, data)).ok
    copy = orjson.loads(data[9])  # line 10's event again at line 21, renumbered and rechained
    tampered = rechain([*data[:20], canonical({**copy, "seq": 21}) + b"\n",
                        *(canonical({**orjson.loads(x), "seq": orjson.loads(x)["seq"] + 1}) + b"\n"
                          for x in data[20:])], 20)
    for report in (verify_log(write(tmp_path, tampered)), verify_lines(tampered, Path("x.jsonl"))):
        assert report.problem is not None
        assert (report.problem.kind, report.problem.line) == ("duplicated", 21), report.problem
        assert "first written at line 10" in report.problem.message


def test_ids_in_no_order_are_kept_and_a_copy_found(log: Lines, tmp_path: Path) -> None:
    ids = [f"id-{(i * 7919) % 1009}-z" for i in range(1, len(log) + 1)]  # distinct, not rising
    ids[25] = ids[4]
    report = verify_log(write(tmp_path, _with_ids(log, ids)))
    assert report.problem is not None and (report.problem.kind, report.problem.line) == ("duplicated", 26)
    assert "first written at line 5" in report.problem.message


def test_verify_memory_does_not_grow_with_a_log_of_rising_ids(tmp_path: Path) -> None:
    logs = []
    for name, k in (("a", 1000), ("b", 8000)):
        data = write_long_session(tmp_path, name, k).read_bytes().splitlines(keepends=True)
        logs.append(write(tmp_path, _with_ids(data, _rising(k)), f"{name}.jsonl"))
    short, long = logs
    verify_log(short)
    assert verify_log(long).ok
    assert _peak(lambda: verify_log(long)) - _peak(lambda: verify_log(short)) < 20_000


def test_the_writers_ids_of_a_thousand_seqs_are_made_once(tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    # Scan.run starts again after each line the general way takes (the first of each actor and
    # type: a dozen restarts in the first thousand); each restart reuses the thousand ids made
    # for the first (integrity_seen.thousand), made again per restart before (issue 24: most of
    # verifying a short log). 2,100 events: the thousands from 0, 1000 and 2000, once each.
    made: list[int] = []
    real = integrity_seen.thousand_ids
    monkeypatch.setattr(integrity_seen, "thousand_ids", lambda p, w, s: made.append(s) or real(p, w, s))
    getattr(integrity_seen.thousand, "cache_clear", lambda: None)()
    report = verify_log(write_long_session(tmp_path, "a", 2100))
    assert report.ok and report.events == 2100
    assert made == [0, 1000, 2000]

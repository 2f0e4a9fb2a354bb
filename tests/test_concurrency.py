"""Concurrency (issue 13): one writer per session (an OS lock naming its holder's pid),
race-free session ids for processes starting together, nothing lost over 1,000 sessions,
and RFC 9562 UUIDv7 event ids. Writers are real processes (tests/writer_proc.py)."""

from __future__ import annotations

import gc
import itertools
import json
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import yaml

from agentos_kernel import Err, ErrorCode, Runtime
from agentos_kernel import clock as clock_mod
from agentos_kernel import kernel as kernel_mod
from agentos_kernel.clock import RandomIds, uuid7
from agentos_kernel.store.events import read_log, verify_chain
from agentos_kernel.store.jsonl import JsonlEventStore
from agentos_kernel.store.lock import SessionLocked

from .helpers import Cli

WRITER = Path(__file__).with_name("writer_proc.py")
CANONICAL = "hello, greet Ada"


class Writer:
    """A writer process started by `writer_proc.py`, ready once `pid` is read."""

    def __init__(self, *args: object) -> None:
        self.proc = subprocess.Popen([sys.executable, str(WRITER), *map(str, args)],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()
        assert line, f"writer {args} died before it was ready (exit {self.proc.wait()})"
        self.pid = json.loads(line)["pid"]

    def go(self) -> None:
        self.proc.stdin.write("go\n")
        self.proc.stdin.flush()

    def result(self) -> object:
        out, _ = self.proc.communicate(timeout=60)
        assert self.proc.returncode == 0, f"writer {self.pid} exited {self.proc.returncode}"
        return json.loads(out.splitlines()[-1])


@pytest.fixture
def held(workspace: Path) -> Iterator[Writer]:
    """Session `s0001` of `workspace`, opened (session.start written) by another process."""
    w = Writer("hold", workspace, "s0001")
    yield w
    if w.proc.poll() is None:
        w.proc.kill()
        w.proc.wait()


# -- one writer per session ------------------------------------------------------------

def test_a_second_writer_process_gets_session_locked_naming_the_holder(
        workspace: Path, held: Writer) -> None:
    rt = Runtime.from_workspace(workspace)
    log = rt.store.path("s0001")
    before = log.read_bytes()
    refused = rt.handle_user_request(CANONICAL, session_id="s0001")
    assert isinstance(refused, Err)
    assert refused.error.code == ErrorCode.SESSION_LOCKED and refused.error.session_id is None
    assert f"session s0001 is being written by pid {held.pid} " in refused.error.message
    assert log.read_bytes() == before, "the refused writer wrote nothing"

    held.go()
    assert held.result() == {"closed": "s0001"}
    again = rt.handle_user_request(CANONICAL, session_id="s0001")  # closed now: it simply exists
    assert isinstance(again, Err) and again.error.code == ErrorCode.SESSION_EXISTS
    events = list(read_log(log))
    assert (events[0].type, events[-1].type) == ("session.start", "session.close")
    assert verify_chain(events) is None
    assert os.listdir(log.parent) == [log.name], "the lock is the folder's: no file is left"


def test_the_cli_shows_session_locked_as_one_line_and_exits_2(
        workspace: Path, held: Writer, cli: Cli) -> None:
    code, out, err = cli("--workspace", workspace, "run", CANONICAL, "--session", "s0001")
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and f"is being written by pid {held.pid}" in err


def test_amend_is_refused_while_another_process_writes_the_session(
        workspace: Path, held: Writer) -> None:
    rt = Runtime.from_workspace(workspace)
    log = rt.store.path("s0001")
    before = log.read_bytes()
    with pytest.raises(SessionLocked, match=f"pid {held.pid}"):
        rt.amend("s0001", "s0001-e0001", "prompt", "x", "typo")
    assert log.read_bytes() == before
    held.go()
    held.result()
    amended = rt.amend("s0001", "s0001-e0001", "prompt", "x", "typo")
    assert list(read_log(log))[-1] == amended


def test_a_second_runtime_in_the_same_process_is_refused_too(workspace: Path) -> None:
    first, second = Runtime.from_workspace(workspace), Runtime.from_workspace(workspace)
    session = first.start_session(CANONICAL, "mine")
    refused = second.open_session("mine")
    assert isinstance(refused, Err) and refused.error.code == ErrorCode.SESSION_LOCKED
    assert f"pid {os.getpid()} (this process)" in refused.error.message
    again = first.open_session("mine")  # the same runtime is a second writer as well
    assert isinstance(again, Err) and again.error.code == ErrorCode.SESSION_LOCKED
    with pytest.raises(SessionLocked):  # and so is an amendment while the session runs
        first.amend("mine", "mine-e0001", "prompt", "x", "typo")
    session.log.close()
    second.amend("mine", "mine-e0001", "prompt", "x", "typo")
    assert [e.seq for e in second.events("mine")] == [1, 2]


def test_a_crashed_writer_leaves_its_events_and_no_lock(workspace: Path) -> None:
    w = Writer("crash", workspace, "s0001")
    assert w.proc.wait(timeout=30) == -9
    rt = Runtime.from_workspace(workspace)
    log = rt.store.path("s0001")
    assert os.listdir(log.parent) == [log.name], "killed: the log stays, nothing else does"
    assert [e.type for e in read_log(log)] == ["session.start"]
    amended = rt.amend("s0001", "s0001-e0001", "prompt", "x", "after the crash")
    assert amended.seq == 2 and verify_chain(list(read_log(log))) is None


def test_a_writer_dropped_without_close_releases_when_collected(workspace: Path) -> None:
    rt = Runtime.from_workspace(workspace)
    rt.start_session(CANONICAL, "dropped")  # never closed
    other = Runtime.from_workspace(workspace)
    assert other.open_session("dropped").error.code == ErrorCode.SESSION_LOCKED
    del rt
    gc.collect()
    assert other.store.exists("dropped") and other.amend("dropped", "dropped-e0001", "prompt",
                                                         "x", "the writer was dropped").seq == 2


@pytest.mark.parametrize("where", ["provider", "session.start"])
def test_a_session_that_fails_to_start_gives_its_claim_back(
        workspace: Path, monkeypatch: pytest.MonkeyPatch, where: str) -> None:
    rt = Runtime.from_workspace(workspace)

    def broken(*args: object) -> None:
        raise OSError("disk full")

    if where == "provider":  # the provider cannot be built: open_session hands nothing back
        rt.provider_factory = broken
    else:  # the first append fails: start_session hands nothing back
        monkeypatch.setattr(kernel_mod.hashlib, "sha256", broken)
    with pytest.raises(OSError, match="disk full"):
        rt.start_session(CANONICAL, "s0001")
    monkeypatch.undo()
    session = Runtime.from_workspace(workspace).start_session(CANONICAL, "s0001")
    assert not isinstance(session, Err), session
    session.log.close()


def test_claims_racing_with_releases_never_give_two_holders(tmp_path: Path) -> None:
    """A release removes the empty session directory (still holding its lock); a claimer that
    opened the old directory, or made it just before, must not end up holding a dead lock
    beside a live one (or fail)."""
    holding: list[int] = []
    overlaps: list[int] = []

    def claimer(n: int) -> int:
        store, wins = JsonlEventStore(tmp_path / "sessions"), 0
        for _ in range(2000):
            try:
                store.create("x")
            except SessionLocked:
                continue
            holding.append(n)
            if len(holding) > 1:
                overlaps.append(n)
            time.sleep(0.0002)  # hold it a moment, so that others race this holder
            holding.remove(n)
            store.close("x")  # nothing written: the id stays free for the next claim
            wins += 1
        return wins

    with ThreadPoolExecutor(4) as pool:
        wins = list(pool.map(claimer, range(4)))
    assert overlaps == [] and sum(wins) > 0
    assert not (tmp_path / "sessions" / "x").exists()


# -- id allocation ---------------------------------------------------------------------

def _with_random_profile(workspace: Path) -> None:
    doc = yaml.safe_load((workspace / "agentos.yaml").read_text())
    doc["profiles"]["live"] = {**doc["profiles"]["scripted"], "deterministic": False}
    (workspace / "agentos.yaml").write_text(yaml.safe_dump(doc))


@pytest.mark.parametrize("profile", ["scripted", "live"])
def test_eight_processes_starting_together_get_distinct_ids_and_clean_logs(
        workspace: Path, profile: str) -> None:
    _with_random_profile(workspace)
    per_process = 4
    writers = [Writer("run", workspace, profile, per_process) for _ in range(8)]
    for w in writers:  # every one has loaded: start them at once
        w.go()
    ids = [sid for w in writers for sid in w.result()]
    assert len(ids) == 8 * per_process and len(set(ids)) == len(ids)
    rt = Runtime.from_workspace(workspace)
    assert rt.store.sessions() == sorted(ids)
    if profile == "scripted":  # counted ids: none skipped, none doubled
        assert sorted(ids) == [f"s{n:04d}" for n in range(1, 8 * per_process + 1)]
    for sid in ids:
        events = list(read_log(rt.store.path(sid)))
        assert verify_chain(events) is None, sid
        assert {e.session_id for e in events} == {sid}
        types = [e.type for e in events]
        assert types.count("session.start") == 1 and types[0] == "session.start"
        assert types.count("session.close") == 1 and types[-1] == "session.close"
        assert events[-1].payload["ok"] is True
        if profile == "live":
            parsed = [uuid.UUID(e.id) for e in events]
            assert all(u.version == 7 and u.variant == uuid.RFC_4122 for u in parsed)
            assert parsed == sorted(parsed) and len(set(parsed)) == len(parsed)


def test_a_random_id_that_is_taken_is_skipped(workspace: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    _with_random_profile(workspace)
    rt = Runtime.from_workspace(workspace, profile="live")
    held = rt.open_session("twin")  # claimed, nothing written yet
    drawn = iter(["twin", "twin", "other"])
    monkeypatch.setattr(kernel_mod, "random_session_id", lambda: next(drawn))
    session = rt.open_session()
    assert not isinstance(session, Err) and session.session_id == "other"
    held.log.close()
    session.log.close()


def test_a_thousand_sessions_in_a_row_lose_nothing(workspace: Path) -> None:
    doc = yaml.safe_load((workspace / "agentos.yaml").read_text())
    doc["profiles"]["scripted"]["fsync"] = "never"  # this counts ids and files; fsync is tested by count
    (workspace / "agentos.yaml").write_text(yaml.safe_dump(doc))
    rt = Runtime.from_workspace(workspace)
    fds = len(os.listdir("/proc/self/fd"))
    for _ in range(1000):
        session = rt.start_session(CANONICAL)
        with rt.guarded(session):
            session.log.append("session.close", "system", {"ok": True, "output": "done"})
    assert len(os.listdir("/proc/self/fd")) == fds, "every session's file and lock are released"
    ids = [f"s{n:04d}" for n in range(1, 1001)]
    assert rt.store.sessions() == ids
    for sid in ids:
        events = list(read_log(rt.store.path(sid)))
        assert [e.type for e in events] == ["session.start", "session.close"], sid
        assert events[-1].chain is not None and verify_chain(events) is None
        assert os.listdir(rt.store.path(sid).parent) == [".events.jsonl"], sid


# -- UUIDv7 ----------------------------------------------------------------------------

def test_random_ids_are_rfc_9562_uuid7_strictly_increasing() -> None:
    before = clock_mod.time.time_ns() // 1_000_000
    ids = [RandomIds().event_id("s", n) for n in range(100_000)]
    after = clock_mod.time.time_ns() // 1_000_000
    parsed = [uuid.UUID(i) for i in ids]
    assert all(u.version == 7 and u.variant == uuid.RFC_4122 for u in parsed)
    assert all(a < b for a, b in itertools.pairwise(parsed))
    assert all(a < b for a, b in itertools.pairwise(ids)), "the strings sort as well"
    assert before <= parsed[0].int >> 80 <= parsed[-1].int >> 80 <= after  # 48-bit Unix ms


def test_uuid7_stays_increasing_when_the_clock_steps_back_or_the_counter_is_full(
        monkeypatch: pytest.MonkeyPatch) -> None:
    now = [1_800_000_000_000_000_000]
    monkeypatch.setattr(clock_mod.time, "time_ns", lambda: now[0])
    first = uuid7()
    now[0] -= 5_000_000_000  # the wall clock steps back five seconds
    second = uuid7()
    assert second > first and second.int >> 80 == first.int >> 80
    clock_mod._V7_SOURCE._counter = (1 << 42) - 1  # a full counter borrows the next millisecond
    third = uuid7()
    assert third > second and third.int >> 80 == (second.int >> 80) + 1
    assert third.version == 7 and third.variant == uuid.RFC_4122

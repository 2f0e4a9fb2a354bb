"""Many writers at once on the PostgreSQL store (issue 14): threads sharing the process's pool
and separate processes, each on its own sessions, lose no event and keep every session's order
and chain; a session held by another process is refused naming that process's pid."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from agentos_kernel.store.events import Event, chain_of, verify_chain
from agentos_kernel.store.integrity import verify_lines
from agentos_kernel.store.lock import SessionLocked
from agentos_kernel.store.postgres.store import PostgresEventStore

from ..helpers import REPO
from ..pg_server import PgDatabase

psycopg = pytest.importorskip("psycopg", reason='needs psycopg 3: pip install -e ".[test]"')

THREADS, SESSIONS_EACH, EVENTS = 6, 2, 15
PROCS = 3

WRITER = """
import sys
from agentos_kernel.store.postgres.store import PostgresEventStore
from tests.store.test_pg_concurrency import write_session
dsn, tag = sys.argv[1], sys.argv[2]
store = PostgresEventStore(dsn, pool_max=2)
for k in range({sessions}):
    write_session(store, f"{{tag}}-s{{k}}", {events})
"""

HOLDER = """
import sys
from agentos_kernel.store.postgres.store import PostgresEventStore
store = PostgresEventStore(sys.argv[1])
store.create("held")
print("holding", flush=True)
sys.stdin.readline()
"""


def write_session(store: PostgresEventStore, sid: str, n: int) -> None:
    """Append `n` chained events to a new session `sid`, as SessionLog would."""
    store.create(sid)
    prev = None
    for i in range(1, n + 1):
        ev = Event(id=f"{sid}-e{i}", session_id=sid, ts="2026-01-01T00:00:00Z", type="test.event",
                   actor="tester", payload={"i": i}, seq=i)
        ev = Event(**{**ev.to_dict(), "chain": chain_of(prev, ev)})
        store.append(ev)
        prev = ev.chain
    store.close(sid)


def test_threads_and_processes_append_at_once_and_lose_nothing(pg_db: PgDatabase) -> None:
    dsn = pg_db.student(f"many_{pg_db.name}")
    env_path = {"PYTHONPATH": str(REPO)}
    procs = [subprocess.Popen([sys.executable, "-c", WRITER.format(sessions=SESSIONS_EACH, events=EVENTS),
                               dsn, f"p{i}"], cwd=REPO, env={**os.environ, **env_path},
                              stderr=subprocess.PIPE, text=True) for i in range(PROCS)]
    store = PostgresEventStore(dsn, pool_max=3)  # fewer connections than threads: they queue
    errors: list[BaseException] = []

    def worker(t: int) -> None:
        try:
            for k in range(SESSIONS_EACH):
                write_session(PostgresEventStore(dsn, pool_max=3), f"t{t}-s{k}", EVENTS)
        except BaseException as exc:  # reported below, in the test thread
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(THREADS)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(120)
    for p in procs:
        assert p.wait(120) == 0, p.stderr.read() if p.stderr else ""
    assert errors == []
    sessions = store.sessions()
    assert len(sessions) == (THREADS + PROCS) * SESSIONS_EACH
    with psycopg.connect(pg_db.admin_dsn) as conn:
        total = conn.execute("SELECT count(*) FROM agentos.events").fetchone()[0]
    assert total == (THREADS + PROCS) * SESSIONS_EACH * EVENTS, "0 events lost"
    for sid in sessions:
        events = list(store.read(sid))
        assert [e.seq for e in events] == list(range(1, EVENTS + 1))
        assert verify_chain(events) is None
        assert verify_lines(store.lines(sid), Path(sid)).ok


def test_a_session_held_by_another_process_is_refused_naming_its_pid(pg_db: PgDatabase) -> None:
    dsn = pg_db.student(f"held_{pg_db.name}")
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, dsn], cwd=REPO, text=True,
                              env={**os.environ, "PYTHONPATH": str(REPO)},
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "holding"
        with pytest.raises(SessionLocked, match=f"being written by pid {holder.pid}") as info:
            PostgresEventStore(dsn).create("held")
        assert info.value.pid == holder.pid
    finally:
        holder.communicate("\n", timeout=30)
    store = PostgresEventStore(dsn)  # the holder closed without writing: free again
    store.create("held")
    store.close("held")

"""Issue 20: one writer per session in PostgreSQL, without letting one student block another.
A claim was an advisory lock on a hash of 'agentos-session:<owner>/<id>', which any role can
take: bob could hold alice's key and her runs got SESSION_LOCKED (counted ids skipped). A
claim is now a lock on the session's row in agentos.sessions, which row-level security lets
only its owner take (schema version 2, pg_lock.py); it still excludes two writers of one
owner and is dropped by the server when the holder's connection ends."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from agentos_kernel import Runtime
from agentos_kernel.errors import Ok
from agentos_kernel.store.events import canonical
from agentos_kernel.store.lock import SessionLocked
from agentos_kernel.store.postgres import schema as pg_schema
from agentos_kernel.store.postgres.store import PostgresEventStore, close_pools

from ..helpers import CANONICAL, REPO, Cli
from ..pg_server import ADMIN, PgDatabase, PgServer
from .test_pg_isolation import ev
from .test_pg_runtime import use_postgres

psycopg = pytest.importorskip("psycopg", reason='needs psycopg 3: pip install -e ".[test]"')

HOLDER = """
import sys
from agentos_kernel.store.postgres.store import PostgresEventStore
store = PostgresEventStore(sys.argv[1])
store.create(sys.argv[2])
print("holding", flush=True)
sys.stdin.readline()
"""


@pytest.fixture
def alice_bob(pg_db: PgDatabase) -> tuple[str, str, str]:
    """Two students' DSNs, and alice's role name."""
    alice = f"alice_{pg_db.name}"
    return pg_db.student(alice), pg_db.student(f"bob_{pg_db.name}"), alice


def test_bob_cannot_block_alices_session_with_the_issues_sql(alice_bob: tuple[str, str, str]) -> None:
    alice_dsn, bob_dsn, alice = alice_bob
    # lock_timeout: were a lock granted that waits on another's claim, it fails here, not hangs
    with psycopg.connect(bob_dsn, autocommit=True, options="-c lock_timeout=2s") as bob, \
            psycopg.connect(bob_dsn) as bob_tx:
        # The red team's SQL, as written (alice's role named): it runs, and holds nothing of hers.
        bob.execute("SELECT pg_advisory_lock(hashtextextended(%s, 0))", (f"agentos-session:{alice}/s0050",))
        earlier = PostgresEventStore(alice_dsn)  # her session and its row exist; bob tries the row
        earlier.append(ev("s0050", 1))
        earlier.close("s0050")
        assert bob_tx.execute("SELECT * FROM agentos.sessions WHERE owner = %s FOR UPDATE NOWAIT",
                              (alice,)).fetchall() == [], "row-level security: not bob's to lock"
        with pytest.raises(psycopg.errors.InsufficientPrivilege), bob.transaction():
            bob.execute("LOCK TABLE agentos.sessions IN EXCLUSIVE MODE")  # UPDATE is on one column only
        with pytest.raises(psycopg.errors.InsufficientPrivilege, match="row-level security"):
            bob.execute("INSERT INTO agentos.sessions (owner, session_id) VALUES (%s, 's0051')", (alice,))
        assert bob.execute("UPDATE agentos.sessions SET session_id = 'x'").rowcount == 0
        store = PostgresEventStore(alice_dsn)  # alice, while bob holds all of that
        store.create("s0051")
        store.append(ev("s0051", 1))
        store.close("s0051")
        store.reopen("s0050")
        store.append(ev("s0050", 2))
        store.close("s0050")
        assert [e.id for e in store.read("s0050")] == ["s0050-e1", "s0050-e2"]


def test_alices_run_succeeds_and_keeps_its_counted_id_while_bob_holds_her_key(
        workspace: Path, alice_bob: tuple[str, str, str], monkeypatch: pytest.MonkeyPatch,
        cli: Cli) -> None:
    alice_dsn, bob_dsn, alice = alice_bob
    use_postgres(workspace)
    monkeypatch.setenv("AGENTOS_PG_DSN", alice_dsn)
    with psycopg.connect(bob_dsn, autocommit=True) as bob:
        for sid in ("s0001", "s0050"):  # her next counted id, and the issue's
            bob.execute("SELECT pg_advisory_lock(hashtextextended(%s, 0))",
                        (f"agentos-session:{alice}/{sid}",))
        result = Runtime.from_workspace(workspace).handle_user_request(CANONICAL)
        assert isinstance(result, Ok) and result.value.session_id == "s0001", result  # no id skipped
        code, _, err = cli("--workspace", workspace, "run", "--session", "s0050", CANONICAL)
        assert code == 0, err
    assert PostgresEventStore(alice_dsn).sessions() == ["s0001", "s0050"]


def test_an_instructor_reads_a_students_sessions_but_cannot_lock_them(
        pg_db: PgDatabase, alice_bob: tuple[str, str, str]) -> None:
    alice_dsn, _, alice = alice_bob
    teacher = pg_db.instructor(f"prof_{pg_db.name}")
    PostgresEventStore(alice_dsn).create("s0001")
    with psycopg.connect(teacher) as conn:
        assert conn.execute("SELECT count(*) FROM agentos.sessions WHERE owner = %s",
                            (alice,)).fetchone() == (1,)
        assert conn.execute("SELECT * FROM agentos.sessions WHERE owner = %s FOR UPDATE NOWAIT",
                            (alice,)).fetchall() == []


def test_the_claim_still_excludes_two_writers_of_one_owner(alice_bob: tuple[str, str, str]) -> None:
    alice_dsn, _, _ = alice_bob
    first = PostgresEventStore(alice_dsn)
    first.create("s0001")
    with pytest.raises(SessionLocked, match=f"being written by pid {os.getpid()}") as info:
        PostgresEventStore(alice_dsn).create("s0001")  # another store: its own connection
    assert info.value.pid == os.getpid()
    with psycopg.connect(alice_dsn) as psql:  # alice by hand, in psql: no pid to name
        first.close("s0001")
        assert psql.execute("SELECT 1 FROM agentos.sessions WHERE session_id = 's0001' "
                            "FOR UPDATE").fetchone() == (1,)
        with pytest.raises(SessionLocked, match="an unknown pid"):
            PostgresEventStore(alice_dsn).reopen("s0001")
    again = PostgresEventStore(alice_dsn)
    again.append(ev("s0001", 1))  # the first store wrote nothing: a new log, from pos 1
    again.close("s0001")


def test_a_killed_holder_leaves_the_session_claimable(alice_bob: tuple[str, str, str]) -> None:
    alice_dsn, _, _ = alice_bob
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, alice_dsn, "s0007"], cwd=REPO, text=True,
                              env={**os.environ, "PYTHONPATH": str(REPO)},
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert holder.stdout is not None and holder.stdout.readline().strip() == "holding"
    with pytest.raises(SessionLocked, match=f"pid {holder.pid}"):
        PostgresEventStore(alice_dsn).create("s0007")
    holder.send_signal(signal.SIGKILL)
    holder.wait(30)
    store = PostgresEventStore(alice_dsn)
    for _ in range(200):  # the server ends the dead client's backend once it sees the socket close
        try:
            store.create("s0007")
            break
        except SessionLocked:
            time.sleep(0.05)
    else:
        pytest.fail("the killed holder's claim was never dropped")
    store.close("s0007")


def test_the_sessions_table_is_never_updated_or_deleted(pg_db: PgDatabase,
                                                        alice_bob: tuple[str, str, str]) -> None:
    alice_dsn, _, _ = alice_bob
    store = PostgresEventStore(alice_dsn)
    store.append(ev("s0001", 1))
    store.close("s0001")
    with psycopg.connect(alice_dsn, autocommit=True) as conn:
        with pytest.raises(psycopg.errors.RaiseException, match="append-only"):  # the trigger, then RLS
            conn.execute("UPDATE agentos.sessions SET session_id = 's0002'")
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("DELETE FROM agentos.sessions")
    with psycopg.connect(pg_db.admin_dsn, autocommit=True) as conn:
        with pytest.raises(psycopg.errors.RaiseException, match=r"agentos\.sessions is append-only"):
            conn.execute("DELETE FROM agentos.sessions")
        with pytest.raises(psycopg.errors.RaiseException, match=r"agentos\.events is append-only"):
            conn.execute("DELETE FROM agentos.events")  # the trigger's message for events is as before


def test_a_database_at_version_1_is_migrated_and_its_sessions_go_on(
        pg_server: PgServer, monkeypatch: pytest.MonkeyPatch) -> None:
    from agentos_kernel.store.postgres.roles import add_role

    name = f"agentos_v1_{os.getpid()}"
    with psycopg.connect(pg_server.admin_dsn, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}"')
        conn.execute(f'CREATE DATABASE "{name}"')
    admin = pg_server.dsn(ADMIN, pg_server.password, name)
    try:
        with monkeypatch.context() as m:  # the schema as it was before this change
            m.setattr(pg_schema, "MIGRATIONS", pg_schema.MIGRATIONS[:1])
            assert [v.version for v in pg_schema.migrate(admin)] == [1]
        role = f"carol_{os.getpid()}"
        add_role(admin, role, "pw-carol")
        carol = pg_server.dsn(role, "pw-carol", name)
        with psycopg.connect(carol, autocommit=True) as conn:  # a session written before
            first = ev("s0001", 1)
            conn.execute("INSERT INTO agentos.events (session_id, pos, id, type, ts, line) "
                         "VALUES ('s0001', 1, %s, %s, %s, %s)",
                         (first.id, first.type, first.ts, canonical(first.to_dict()).decode()))
        with pytest.raises(psycopg.errors.UndefinedTable, match="run `agentos store migrate`"):
            PostgresEventStore(carol).reopen("s0001")
        assert [v.version for v in pg_schema.migrate(admin)] == [2]
        assert pg_schema.schema_version(admin) == pg_schema.LATEST == 2
        store = PostgresEventStore(carol)
        store.reopen("s0001")  # its row is made at its first claim
        store.append(ev("s0001", 2))
        store.close("s0001")
        assert [e.seq for e in store.read("s0001")] == [1, 2]
    finally:
        close_pools()
        with psycopg.connect(pg_server.admin_dsn, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def test_a_student_cannot_block_migrate(pg_db: PgDatabase, alice_bob: tuple[str, str, str]) -> None:
    """`migrate` once waited on an advisory key that any role may take."""
    _, bob_dsn, _ = alice_bob
    with psycopg.connect(bob_dsn) as bob:
        bob.execute("SELECT pg_advisory_lock(%s)", (pg_schema._MIGRATE_LOCK,))
        bob.execute("SELECT * FROM agentos.schema_version")  # and a read held open in a transaction
        waiting = pg_db.admin_dsn + "?options=-c%20lock_timeout%3D5s"  # blocked: an error, not a hang
        assert pg_schema.migrate(waiting) == []


def test_a_servers_idle_in_transaction_timeout_does_not_end_a_claim(
        pg_db: PgDatabase, alice_bob: tuple[str, str, str]) -> None:
    alice_dsn, _, alice = alice_bob
    with psycopg.connect(pg_db.admin_dsn, autocommit=True) as conn:  # as a DBA might, for everyone
        conn.execute(f'ALTER ROLE "{alice}" SET idle_in_transaction_session_timeout = 200')
    store = PostgresEventStore(alice_dsn)
    store.create("s0001")
    time.sleep(1)  # five times the timeout, idle between two appends
    with pytest.raises(SessionLocked):
        PostgresEventStore(alice_dsn).create("s0001")
    store.append(ev("s0001", 1))
    store.close("s0001")


def test_verify_holds_a_sessions_rows_to_its_id(alice_bob: tuple[str, str, str],
                                                monkeypatch: pytest.MonkeyPatch, cli: Cli) -> None:
    """Issue 20's `misplaced`, in the database: rows of s0002 holding a log of s0001."""
    alice_dsn, _, _ = alice_bob
    store = PostgresEventStore(alice_dsn)
    store.append(ev("s0001", 1))
    store.close("s0001")
    line = next(iter(store.lines("s0001"))).rstrip(b"\n").decode()
    with psycopg.connect(alice_dsn, autocommit=True) as conn:  # by hand, as a student may
        conn.execute("INSERT INTO agentos.events (session_id, pos, id, type, ts, line) "
                     "VALUES ('s0002', 1, 'x', 't', 'ts', %s)", (line,))
    monkeypatch.setenv("AGENTOS_PG_DSN", alice_dsn)
    code, out, _ = cli("verify", "postgres:AGENTOS_PG_DSN")
    assert code == 1 and "s0002:1: misplaced: line 1 belongs to session 's0001'" in out
    assert "1 of 2 logs verify" in out

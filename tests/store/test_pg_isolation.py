"""What the database enforces, whoever connects (issue 14): a student role reads only its own
sessions, nobody (not even the table's owner, a superuser) updates, deletes or truncates an
event, a log's rows only ever continue in order; an instructor role reads every student's.
Each refusal is asserted as the SQL error the server raises."""

from __future__ import annotations

import threading
import time

import pytest

from agentos_kernel.store.events import Event
from agentos_kernel.store.postgres.schema import LATEST, migrate, schema_version
from agentos_kernel.store.postgres.store import PostgresEventStore

from ..helpers import Cli
from ..pg_server import PgDatabase

psycopg = pytest.importorskip("psycopg", reason='needs psycopg 3: pip install -e ".[test]"')


def ev(sid: str, n: int) -> Event:
    return Event(id=f"{sid}-e{n}", session_id=sid, ts=f"2026-01-01T00:00:0{n}Z", type="test.event",
                 actor="tester", payload={"n": n}, seq=n)


@pytest.fixture
def alice_bob(pg_db: PgDatabase) -> tuple[str, str]:
    """Two students, each with one session `s0001` of two events (the same id: no clash)."""
    dsns = pg_db.student(f"alice_{pg_db.name}"), pg_db.student(f"bob_{pg_db.name}")
    for dsn in dsns:
        store = PostgresEventStore(dsn)
        store.append(ev("s0001", 1))
        store.append(ev("s0001", 2))
        store.close("s0001")
    return dsns


def test_a_student_sees_only_their_own_rows_even_in_raw_sql(pg_db: PgDatabase,
                                                            alice_bob: tuple[str, str]) -> None:
    alice, _ = alice_bob
    with psycopg.connect(alice) as conn:
        owners = {r[0] for r in conn.execute("SELECT owner FROM agentos.events")}
        assert owners == {f"alice_{pg_db.name}"}, "RLS hides bob's rows from alice's SELECT"
        hidden = conn.execute("SELECT count(*) FROM agentos.events WHERE owner = %s",
                              (f"bob_{pg_db.name}",)).fetchone()[0]
        assert hidden == 0
    store = PostgresEventStore(alice, owner=f"bob_{pg_db.name}")
    assert store.sessions() == [], "naming bob as the owner shows alice nothing of his"
    with pytest.raises(KeyError):
        store.read("s0001")


def test_a_student_cannot_write_as_another_owner(pg_db: PgDatabase, alice_bob: tuple[str, str]) -> None:
    alice, _ = alice_bob
    with psycopg.connect(alice) as conn, pytest.raises(psycopg.errors.InsufficientPrivilege,
                                                       match="row-level security policy"):
        conn.execute("INSERT INTO agentos.events (owner, session_id, pos, id, type, ts, line) "
                     "VALUES (%s, 'x1', 1, 'e', 't', 'ts', '{}')", (f"bob_{pg_db.name}",))


@pytest.mark.parametrize("sql", ["UPDATE agentos.events SET line = '{}'",
                                 "DELETE FROM agentos.events",
                                 "TRUNCATE agentos.events"])
def test_a_student_may_not_update_delete_or_truncate(alice_bob: tuple[str, str], sql: str) -> None:
    alice, _ = alice_bob
    with psycopg.connect(alice) as conn, pytest.raises(psycopg.errors.InsufficientPrivilege,
                                                       match="permission denied for table events"):
        conn.execute(sql)


@pytest.mark.parametrize("sql", ["UPDATE agentos.events SET line = '{}'",
                                 "DELETE FROM agentos.events WHERE pos = 2",
                                 "TRUNCATE agentos.events"])
def test_even_the_tables_owner_hits_the_append_only_trigger(pg_db: PgDatabase, alice_bob: tuple[str, str],
                                                            sql: str) -> None:
    with psycopg.connect(pg_db.admin_dsn) as conn:
        with pytest.raises(psycopg.errors.RaiseException, match=r"agentos\.events is append-only"):
            conn.execute(sql)
        conn.rollback()
        assert conn.execute("SELECT count(*) FROM agentos.events").fetchone()[0] == 4


def test_rows_continue_in_order_only(pg_db: PgDatabase, alice_bob: tuple[str, str]) -> None:
    alice, _ = alice_bob
    insert = ("INSERT INTO agentos.events (session_id, pos, id, type, ts, line) "
              "VALUES ('s0001', %s, 'e', 't', 'ts', '{}')")
    with psycopg.connect(alice, autocommit=True) as conn:
        for pos in (5, 2):  # a gap, a rewrite of an earlier place
            with pytest.raises(psycopg.errors.RaiseException, match=f"continues at position 3, not {pos}"):
                conn.execute(insert, (pos,))


def test_two_writers_racing_for_the_same_place_one_loses(alice_bob: tuple[str, str]) -> None:
    """Both pass the in-order trigger before either commits: the primary key refuses the second."""
    alice, _ = alice_bob
    insert = ("INSERT INTO agentos.events (session_id, pos, id, type, ts, line) "
              "VALUES ('s0001', 3, %s, 't', 'ts', '{}')")
    errors: list[BaseException] = []

    def second() -> None:
        with psycopg.connect(alice, autocommit=True) as conn:
            try:
                conn.execute(insert, ("late",))
            except psycopg.Error as exc:
                errors.append(exc)

    with psycopg.connect(alice) as first:
        first.execute(insert, ("early",))
        racer = threading.Thread(target=second)
        racer.start()
        time.sleep(0.3)  # the second insert now waits on the first's uncommitted key
        first.commit()
        racer.join(10)
    assert [type(e) for e in errors] == [psycopg.errors.UniqueViolation]


def test_an_instructor_reads_every_students_sessions(pg_db: PgDatabase, alice_bob: tuple[str, str]) -> None:
    teacher = pg_db.instructor(f"teacher_{pg_db.name}")
    store = PostgresEventStore(teacher)
    assert store.owners() == sorted([f"alice_{pg_db.name}", f"bob_{pg_db.name}"])
    assert store.sessions() == [], "the instructor's own sessions: none yet"
    bobs = PostgresEventStore(teacher, owner=f"bob_{pg_db.name}")
    assert bobs.sessions() == ["s0001"]
    assert [e.id for e in bobs.read("s0001")] == ["s0001-e1", "s0001-e2"]
    with pytest.raises(PermissionError, match="read-only"):
        bobs.append(ev("s0001", 3))
    with psycopg.connect(teacher) as conn, pytest.raises(psycopg.errors.InsufficientPrivilege):
        conn.execute("DELETE FROM agentos.events")


def test_migrate_is_versioned_and_idempotent(pg_db: PgDatabase) -> None:
    assert schema_version(pg_db.admin_dsn) == LATEST
    assert migrate(pg_db.admin_dsn) == [], "already current: nothing applied again"


def test_store_sessions_as_a_student_names_what_it_cannot_read(
        pg_db: PgDatabase, alice_bob: tuple[str, str], monkeypatch: pytest.MonkeyPatch,
        cli: Cli) -> None:
    monkeypatch.setenv("AGENTOS_PG_DSN", alice_bob[1])
    code, out, err = cli("store", "sessions", "postgres:AGENTOS_PG_DSN")
    assert (code, out.split()) == (0, ["s0001"])
    code, out, err = cli("store", "sessions", f"postgres:AGENTOS_PG_DSN/alice_{pg_db.name}")
    assert code == 0 and out == "", out  # row-level security: alice's rows are not bob's to see
    assert "no sessions that this role can read" in err

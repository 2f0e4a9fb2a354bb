"""The EventStore contract (L4): every store implementation must pass this one class.

Each implementation is one factory in STORES: it builds an empty store and says how to read
back the stored bytes of each event of a session, in order. The PostgreSQL one runs against a
real server (tests/pg_server.py) and skips, saying why, where none can be started.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path

import pytest

from agentos_kernel.store.events import Event, EventStore
from agentos_kernel.store.jsonl import JsonlEventStore
from agentos_kernel.store.lock import SessionExists, SessionLocked


@dataclass
class StoreUnderTest:
    """A store plus a way to see what it physically holds (to prove append-only)."""

    store: EventStore
    records: Callable[[str], list[bytes]]
    """The stored form of each event of a session, in order (bytes as persisted)."""
    twin: Callable[[], EventStore]
    """Another store on the same storage: a second writer (another process's, say)."""


def _jsonl(tmp_path: Path) -> StoreUnderTest:
    store = JsonlEventStore(tmp_path / "sessions")

    def records(session_id: str) -> list[bytes]:
        return store.path(session_id).read_bytes().splitlines(keepends=True)

    return StoreUnderTest(store, records, lambda: JsonlEventStore(tmp_path / "sessions"))


def _postgres(request: pytest.FixtureRequest) -> StoreUnderTest:
    """A fresh migrated database (tests/pg_server.py), as one student role: the rows it holds
    are read back with the superuser's connection, past the store."""
    import psycopg

    from agentos_kernel.store.postgres.store import PostgresEventStore

    db = request.getfixturevalue("pg_db")
    dsn = db.student(f"contract_{db.name}")

    def records(session_id: str) -> list[bytes]:
        with psycopg.connect(db.admin_dsn) as conn:
            rows = conn.execute("SELECT line FROM agentos.events WHERE session_id = %s ORDER BY pos",
                                (session_id,)).fetchall()
        return [r[0].encode() + b"\n" for r in rows]

    return StoreUnderTest(PostgresEventStore(dsn), records, lambda: PostgresEventStore(dsn))


STORES: dict[str, Callable[[pytest.FixtureRequest, Path], StoreUnderTest]] = {
    "jsonl": lambda request, tmp_path: _jsonl(tmp_path),
    "postgres": lambda request, tmp_path: _postgres(request),
}


@pytest.fixture(params=sorted(STORES))
def sut(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[StoreUnderTest]:
    made = STORES[request.param](request, tmp_path)
    yield made
    for sid in made.store.sessions():
        made.store.close(sid)


def ev(session_id: str, n: int, **payload: object) -> Event:
    return Event(id=f"{session_id}-e{n}", session_id=session_id, ts=f"2026-01-01T00:00:00.{n:03d}Z",
                 type="test.event", actor="tester", payload={"n": n, **payload},
                 parent_id=f"{session_id}-e{n - 1}" if n > 1 else None, seq=n)


class TestEventStoreContract:
    def test_read_returns_appended_events_in_order_and_equal(self, sut: StoreUnderTest) -> None:
        written = [ev("s1", n) for n in range(1, 6)]
        for e in written:
            sut.store.append(e)
        assert list(sut.store.read("s1")) == written

    def test_sessions_do_not_mix(self, sut: StoreUnderTest) -> None:
        sut.store.append(ev("a", 1))
        sut.store.append(ev("b", 1))
        sut.store.append(ev("a", 2))
        assert [e.id for e in sut.store.read("a")] == ["a-e1", "a-e2"]
        assert [e.id for e in sut.store.read("b")] == ["b-e1"]

    def test_read_streams_lazily(self, sut: StoreUnderTest) -> None:
        for n in range(1, 4):
            sut.store.append(ev("s1", n))
        stream = sut.store.read("s1")
        assert iter(stream) is stream, "read() must return an iterator, not a materialised list"
        assert next(stream).id == "s1-e1"
        assert [e.id for e in stream] == ["s1-e2", "s1-e3"]

    def test_tail_is_the_last_event_or_none(self, sut: StoreUnderTest) -> None:
        assert sut.store.tail("s1") is None
        sut.store.append(ev("s1", 1))
        sut.store.append(ev("s1", 2))
        assert sut.store.tail("s1") == ev("s1", 2)

    def test_sessions_are_sorted(self, sut: StoreUnderTest) -> None:
        assert sut.store.sessions() == []
        for sid in ("s3", "a1", "s10", "b2"):
            sut.store.append(ev(sid, 1))
        assert sut.store.sessions() == sorted(["s3", "a1", "s10", "b2"])

    def test_exists(self, sut: StoreUnderTest) -> None:
        assert not sut.store.exists("s1")
        sut.store.append(ev("s1", 1))
        assert sut.store.exists("s1")
        assert not sut.store.exists("s2")

    def test_append_after_close_reopens(self, sut: StoreUnderTest) -> None:
        sut.store.append(ev("s1", 1))
        sut.store.close("s1")
        sut.store.append(ev("s1", 2))
        sut.store.close("s1")
        sut.store.close("s1")  # closing twice, or a closed session, is harmless
        assert [e.id for e in sut.store.read("s1")] == ["s1-e1", "s1-e2"]

    def test_earlier_records_are_byte_identical_after_later_appends(self, sut: StoreUnderTest) -> None:
        sut.store.append(ev("s1", 1, note="first"))
        sut.store.append(ev("s1", 2))
        before = sut.records("s1")
        sut.store.append(ev("s1", 3, note="x" * 1000))
        sut.store.close("s1")
        sut.store.append(ev("s1", 4))
        after = sut.records("s1")
        assert len(after) == 4
        assert after[:2] == before

    def test_unicode_payload_round_trips(self, sut: StoreUnderTest) -> None:
        e = ev("s1", 1, text="안녕하세요 — “quotes” \u2028 ✓")
        sut.store.append(e)
        assert list(sut.store.read("s1")) == [e]

    def test_unknown_session_raises_key_error_naming_it(self, sut: StoreUnderTest) -> None:
        with pytest.raises(KeyError, match="no-such-session"):
            sut.store.read("no-such-session")

    @pytest.mark.parametrize("bad", ["../x", "a/b", "..", "", ".hidden", "x" * 65, "a\\b", "s 1"])
    def test_bad_session_ids_are_rejected(self, sut: StoreUnderTest, bad: str) -> None:
        with pytest.raises(ValueError, match="invalid session id"):
            sut.store.append(replace(ev("ok", 1), session_id=bad))
        with pytest.raises(ValueError, match="invalid session id"):
            sut.store.read(bad)
        with pytest.raises(ValueError, match="invalid session id"):
            sut.store.exists(bad)
        assert sut.store.sessions() == []

    # -- one writer per session (issue 13) --
    def test_a_claimed_session_refuses_a_second_writer(self, sut: StoreUnderTest) -> None:
        sut.store.create("s1")
        other = sut.twin()
        with pytest.raises(SessionLocked, match="session s1 is being written by pid"):
            other.create("s1")
        with pytest.raises(SessionLocked):
            other.append(ev("s1", 1))
        with pytest.raises(SessionLocked):
            sut.store.create("s1")  # the same store twice is two writers too
        sut.store.append(ev("s1", 1))
        assert len(sut.records("s1")) == 1, "only the claimer's event was written"

    def test_a_new_session_is_one_without_a_log(self, sut: StoreUnderTest) -> None:
        sut.store.create("s1")
        sut.store.close("s1")  # claimed, nothing written: still free
        sut.store.create("s1")
        sut.store.append(ev("s1", 1))
        sut.store.close("s1")
        with pytest.raises(SessionExists, match="s1"):
            sut.twin().create("s1")
        assert sut.store.sessions() == ["s1"]

    def test_reopen_claims_an_existing_log_to_append(self, sut: StoreUnderTest) -> None:
        with pytest.raises(KeyError, match="s1"):
            sut.store.reopen("s1")
        sut.store.append(ev("s1", 1))
        with pytest.raises(SessionLocked):
            sut.twin().reopen("s1")
        sut.store.close("s1")
        other = sut.twin()
        other.reopen("s1")
        other.append(ev("s1", 2))
        other.close("s1")
        assert [e.id for e in sut.store.read("s1")] == ["s1-e1", "s1-e2"]

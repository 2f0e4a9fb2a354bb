"""L4 store in PostgreSQL: `PostgresEventStore`, the same EventStore as JSONL, for a whole
class on one server (issue 14; docs/class-server.md).

A row holds the event's exact JSONL line (its canonical bytes, the ones the hash chain
covers), never a jsonb re-encoding, so a log read back is byte-identical to the file the
JSONL store would have written; `id`, `type`, `ts` are copied into columns to query by.

Policies:
- One writer per session: claiming a session (`create`, `reopen`, the first `append`) takes
  a session-level advisory lock keyed by (role, session id) on a connection this store keeps
  for its claims, held until `close`. The server drops it when that connection ends (a killed
  kernel never leaves a session locked). In the database, the primary key
  (owner, session_id, pos) and the in-order trigger refuse any interleaved write anyway.
- One connection pool per process and DSN (`pool_max` connections); one transaction per
  append (each event is committed before `append` returns: nothing is batched). Commits
  are synchronous, so a committed event survives a crash of the server, except with the
  profile's `fsync: never`, which turns synchronous_commit off for this store's connections.
- Owners: a role writes its own rows only (row-level security). `owner=` names whose
  sessions this store reads (an instructor reading a student's); such a store is read-only.
"""

from __future__ import annotations

import atexit
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

from .durability import Durability
from .events import Event, canonical, check_session_id, line_event
from .sessionlock import SessionExists, SessionLocked

EXTRA_HINT = 'pip install "agentos-kernel[postgres]" (psycopg 3 and psycopg-pool)'
_APP = "agentos-kernel pid"
_PAGE = 500  # rows per read query: reads stream in pages, holding no connection between them
_pools: dict[tuple[str, int, bool], Any] = {}
_pools_lock = threading.Lock()


def _psycopg() -> Any:
    try:
        import psycopg
    except ImportError as exc:
        raise ImportError(f"the postgres event store needs psycopg 3 ({exc}): {EXTRA_HINT}") from None
    return psycopg


def connect(dsn: str, **kwargs: Any) -> Any:
    """One psycopg connection (autocommit unless told otherwise), tagged with our pid."""
    kwargs.setdefault("autocommit", True)
    return _psycopg().connect(dsn, application_name=f"{_APP} {os.getpid()}", **kwargs)


def pool_for(dsn: str, size: int, synchronous: bool = True) -> Any:
    """The process's pool for `dsn` (made on first use, closed at exit). Its connections are
    in autocommit: each INSERT is one transaction, committed in one round trip; with
    `synchronous=False` they commit without waiting for the WAL flush."""
    _psycopg()
    try:
        from psycopg_pool import ConnectionPool
    except ImportError as exc:
        raise ImportError(f"the postgres event store needs psycopg-pool ({exc}): {EXTRA_HINT}") from None
    key = (dsn, size, synchronous)
    with _pools_lock:
        pool = _pools.get(key)
        if pool is None or pool.closed:
            connect(dsn).close()  # a bad DSN or password fails here, saying so, not after a pool timeout
            kwargs: dict[str, Any] = {"application_name": f"{_APP} {os.getpid()}", "autocommit": True}
            if not synchronous:
                kwargs["options"] = "-c synchronous_commit=off"
            pool = _pools[key] = ConnectionPool(dsn, min_size=1, max_size=size, open=True,
                                                name=f"agentos-{len(_pools)}", kwargs=kwargs)
        return pool


@atexit.register
def close_pools() -> None:
    """Close every pool this process opened (tests call it between databases)."""
    with _pools_lock:
        pools = list(_pools.values())
        _pools.clear()
    for pool in pools:
        pool.close()


def _lock_key(owner: str, session_id: str) -> str:
    return f"agentos-session:{owner}/{session_id}"


class PostgresEventStore:
    """The sessions of one role (or, read-only, of `owner`) in the database at `dsn`."""

    def __init__(self, dsn: str, *, pool_max: int = 4, durability: Durability | None = None,
                 owner: str | None = None, name: str = "postgres") -> None:
        self.dsn = dsn
        self.pool_max = pool_max
        self.durability = durability or Durability()
        self.name = name
        """How messages name this store, e.g. `postgres:AGENTOS_PG_DSN` (never the DSN)."""
        self._owner = owner
        self._me: str | None = None
        self._claims: dict[str, int] = {}  # claimed session -> its next pos
        self._lock_conn: Any = None
        self._mutex = threading.Lock()

    # -- who ---------------------------------------------------------------------------
    @property
    def me(self) -> str:
        """The role this store connects as (current_user)."""
        if self._me is None:
            with self._pool().connection() as conn:
                self._me = conn.execute("SELECT current_user").fetchone()[0]
        return self._me

    @property
    def owner(self) -> str:
        """Whose sessions this store reads: `owner=`, else the connecting role."""
        return self._owner or self.me

    def path(self, session_id: str) -> Path:
        """A name for the session in messages (`postgres:ENV/owner/id`), never a file."""
        return Path(f"{self.name}/{self.owner}/{_checked(session_id)}")

    def _pool(self) -> Any:
        return pool_for(self.dsn, self.pool_max, self.durability.fsync != "never")

    # -- claims ------------------------------------------------------------------------
    def create(self, session_id: str) -> None:
        self._claim(session_id, new=True)

    def reopen(self, session_id: str) -> None:
        self._claim(session_id, new=False)

    def _claim(self, session_id: str, new: bool | None) -> int:
        _checked(session_id)
        if self.owner != self.me:
            raise PermissionError(f"{self.name}: the sessions of {self.owner!r} are read-only to "
                                  f"{self.me!r}: a role appends only to its own sessions")
        with self._mutex:
            if session_id in self._claims:  # this store writes it already: a second writer here
                raise SessionLocked(session_id, os.getpid(), self.path(session_id))
            if self._lock_conn is None or self._lock_conn.closed:
                self._lock_conn = connect(self.dsn)
            key = _lock_key(self.me, session_id)
            got = self._lock_conn.execute("SELECT pg_try_advisory_lock(hashtextextended(%s, 0))",
                                          (key,)).fetchone()[0]
            if not got:
                raise SessionLocked(session_id, self._holder(key), self.path(session_id))
            try:
                last = self._lock_conn.execute(
                    "SELECT coalesce(max(pos), 0) FROM agentos.events WHERE owner = %s AND session_id = %s",
                    (self.me, session_id)).fetchone()[0]
                if new is not None and bool(last) == new:
                    if new:
                        raise SessionExists(f"session {session_id!r} already exists "
                                            f"({self.path(session_id)})")
                    raise KeyError(f"no session {session_id!r} in {self.name} (role {self.me})")
            except BaseException:
                self._unlock(key)
                raise
            self._claims[session_id] = last + 1
            return last + 1

    def _holder(self, key: str) -> int | None:
        """The OS pid of the process holding the lock (from its connection's application_name),
        when the server lets this role see it."""
        row = self._lock_conn.execute(
            "SELECT a.application_name FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid "
            "WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1 "
            "AND l.classid = ((hashtextextended(%s, 0) >> 32) & 4294967295)::bigint::text::oid "
            "AND l.objid = (hashtextextended(%s, 0) & 4294967295)::bigint::text::oid "
            "AND l.pid <> pg_backend_pid() LIMIT 1", (key, key)).fetchone()
        text = (row[0] or "") if row else ""
        tail = text.removeprefix(_APP).strip()
        return int(tail) if text.startswith(_APP) and tail.isdigit() else None

    def _unlock(self, key: str) -> None:
        self._lock_conn.execute("SELECT pg_advisory_unlock(hashtextextended(%s, 0))", (key,))

    def close(self, session_id: str) -> None:
        with self._mutex:
            if self._claims.pop(session_id, None) is None:
                return
            if self._lock_conn is None or self._lock_conn.closed:
                return  # its lock went with the connection
            try:
                self._unlock(_lock_key(self.me, session_id))
            except _psycopg().Error:  # the connection broke: the server dropped its locks with it
                self._lock_conn.close()
            if not self._claims or self._lock_conn.closed:  # nothing held: give the connection back
                self._lock_conn.close()
                self._lock_conn = None

    # -- writing -----------------------------------------------------------------------
    def append(self, event: Event) -> None:
        _checked(event.session_id)
        self._insert(event.session_id, event.id, event.type, event.ts,
                     canonical(event.to_dict()).decode())

    def append_line(self, session_id: str, line: bytes) -> None:
        """Append one JSONL line exactly as given (`agentos store copy`: a log copied as it
        is, canonical or not). LogError when it is not one event of `session_id`."""
        ev = line_event(line, _checked(session_id), str(self.path(session_id)))
        self._insert(session_id, ev.id, ev.type, ev.ts, line.removesuffix(b"\n").decode())

    def _insert(self, session_id: str, eid: str, type_: str, ts: str, line: str) -> None:
        pos = self._claims.get(session_id) or self._claim(session_id, None)
        with self._pool().connection() as conn:  # autocommit: the INSERT is its own transaction
            conn.execute("INSERT INTO agentos.events (session_id, pos, id, type, ts, line) "
                         "VALUES (%s, %s, %s, %s, %s, %s)", (session_id, pos, eid, type_, ts, line))
        self._claims[session_id] = pos + 1

    # -- reading -----------------------------------------------------------------------
    def lines(self, session_id: str) -> Iterator[bytes]:
        """The session's stored lines, each with its newline: the JSONL file's bytes, in
        pages (KeyError when it has none)."""
        if not self.exists(session_id):
            raise KeyError(f"no session {session_id!r} in {self.name} (owner {self.owner})")
        return self._pages(session_id)

    def _pages(self, session_id: str) -> Iterator[bytes]:
        after = 0
        while True:
            with self._pool().connection() as conn:
                rows = conn.execute(
                    "SELECT pos, line FROM agentos.events WHERE owner = %s AND session_id = %s "
                    "AND pos > %s ORDER BY pos LIMIT %s", (self.owner, session_id, after, _PAGE)).fetchall()
            for pos, line in rows:
                yield line.encode() + b"\n"
                after = pos
            if len(rows) < _PAGE:
                return

    def read(self, session_id: str) -> Iterator[Event]:
        lines = self.lines(session_id)
        where = self.path(session_id)
        return (Event.from_dict(orjson.loads(line), where=f"{where}:{n}")
                for n, line in enumerate(lines, 1))

    def tail(self, session_id: str) -> Event | None:
        with self._pool().connection() as conn:
            row = conn.execute("SELECT line FROM agentos.events WHERE owner = %s AND session_id = %s "
                               "ORDER BY pos DESC LIMIT 1", (self.owner, _checked(session_id))).fetchone()
        if row is None:
            return None
        return Event.from_dict(orjson.loads(row[0]), where=str(self.path(session_id)))

    def sessions(self) -> list[str]:
        with self._pool().connection() as conn:
            rows = conn.execute("SELECT DISTINCT session_id FROM agentos.events WHERE owner = %s",
                                (self.owner,)).fetchall()
        return sorted(r[0] for r in rows)

    def owners(self) -> list[str]:
        """Every owner whose sessions this role can read: itself, or the class for an instructor."""
        with self._pool().connection() as conn:
            return sorted(r[0] for r in conn.execute("SELECT DISTINCT owner FROM agentos.events"))

    def exists(self, session_id: str) -> bool:
        with self._pool().connection() as conn:
            return conn.execute("SELECT 1 FROM agentos.events WHERE owner = %s AND session_id = %s "
                                "LIMIT 1", (self.owner, _checked(session_id))).fetchone() is not None


def _checked(session_id: str) -> str:
    problem = check_session_id(session_id)
    if problem:
        raise ValueError(problem)
    return session_id

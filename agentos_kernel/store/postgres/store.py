"""L4 store in PostgreSQL: `PostgresEventStore`, the same EventStore as JSONL, for a whole
class on one server (issue 14; docs/class-server.md).

A row holds the event's exact JSONL line (its canonical bytes, the ones the hash chain
covers), never a jsonb re-encoding, so a log read back is byte-identical to the file the
JSONL store would have written; `id`, `type`, `ts` are copied into columns to query by.

Policies:
- One writer per session: claiming a session (`create`, `reopen`, the first `append`) locks
  the session's row in agentos.sessions, which only its owner may lock (lock.py), in a
  transaction on a connection of the claim's own, held until `close`. The server drops it
  when that connection ends (a killed kernel never leaves a session locked). In the database,
  the primary key (owner, session_id, pos) and the in-order trigger refuse any interleaved
  write anyway.
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

from ..durability import Durability
from ..events import Event, canonical, check_session_id, line_event
from ..lock import SessionExists, SessionLocked
from .lock import APP as _APP
from .lock import SessionClaim

EXTRA_HINT = 'pip install "agentos-kernel[postgres]" (psycopg 3 and psycopg-pool)'
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
        self._claims: dict[str, SessionClaim] = {}  # claimed session -> its claim (next pos)
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

    def _claim(self, session_id: str, new: bool | None) -> SessionClaim:
        _checked(session_id)
        if self.owner != self.me:
            raise PermissionError(f"{self.name}: the sessions of {self.owner!r} are read-only to "
                                  f"{self.me!r}: a role appends only to its own sessions")
        with self._mutex:
            if session_id in self._claims:  # this store writes it already: a second writer here
                raise SessionLocked(session_id, os.getpid(), self.path(session_id))
            claim = SessionClaim.take(self._claim_connection, session_id, self.path(session_id))
            try:
                if new is not None and (claim.next_pos > 1) == new:
                    if new:
                        raise SessionExists(f"session {session_id!r} already exists "
                                            f"({self.path(session_id)})")
                    raise KeyError(f"no session {session_id!r} in {self.name} (role {self.me})")
            except BaseException:
                claim.release()
                raise
            self._claims[session_id] = claim
            return claim

    def _claim_connection(self) -> Any:
        # The claim's transaction is idle between appends by design: a server-wide
        # idle_in_transaction_session_timeout must not end it (and the claim with it).
        return connect(self.dsn, options="-c idle_in_transaction_session_timeout=0")

    def close(self, session_id: str) -> None:
        with self._mutex:
            claim = self._claims.pop(session_id, None)
        if claim is not None:
            claim.release()

    # -- writing -----------------------------------------------------------------------
    def append(self, event: Event, line: bytes | None = None) -> None:
        _checked(event.session_id)
        self._insert(event.session_id, event.id, event.type, event.ts,
                     (line or canonical(event.to_dict())).decode())

    def append_line(self, session_id: str, line: bytes) -> None:
        """Append one JSONL line exactly as given (`agentos store copy`: a log copied as it
        is, canonical or not). LogError when it is not one event of `session_id`."""
        ev = line_event(line, _checked(session_id), str(self.path(session_id)))
        self._insert(session_id, ev.id, ev.type, ev.ts, line.removesuffix(b"\n").decode())

    def _insert(self, session_id: str, eid: str, type_: str, ts: str, line: str) -> None:
        claim = self._claims.get(session_id) or self._claim(session_id, None)
        pos = claim.next_pos
        with self._pool().connection() as conn:  # autocommit: the INSERT is its own transaction
            conn.execute("INSERT INTO agentos.events (session_id, pos, id, type, ts, line) "
                         "VALUES (%s, %s, %s, %s, %s, %s)", (session_id, pos, eid, type_, ts, line))
        claim.next_pos = pos + 1

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

"""One writer per session in PostgreSQL: a claim is a lock on the session's row in
`agentos.sessions`, which row-level security lets only its owner take (issue 20).

Until schema version 2 a claim was a session-level advisory lock keyed by a hash of
'agentos-session:<owner>/<id>': any role may take any advisory key (the functions are
PUBLIC), so a student could take another's and block her runs (SESSION_LOCKED, ids skipped).
A row lock obeys the table's policies instead: `SELECT … FOR UPDATE` locks only rows the
role may both see and update, and the UPDATE policy is `owner = current_user` (WITH CHECK
false: nothing is ever updated), so no student, nor an instructor, can lock another's row.
FOR UPDATE needs an UPDATE privilege: it is granted on one column only, since a table-wide
UPDATE would also allow `LOCK TABLE … EXCLUSIVE` (blocking every claim of the class).

What the advisory lock gave is kept: the claim lives in a transaction on a connection of
its own, so the server drops it when that connection ends (a killed kernel never leaves a
session locked); `NOWAIT` refuses a second writer at once, naming the holder's OS pid from
its connection's application_name, found through the row's locker (xmax) in pg_locks.
The price: an open transaction per claimed session ("idle in transaction"), which holds
back vacuum's horizon in this database while it lasts (docs/class-server.md).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..lock import SessionLocked

APP = "agentos-kernel pid"
"""The start of every connection's application_name: `agentos-kernel pid <os pid>`."""

_LOCK = ("SELECT (SELECT coalesce(max(pos), 0) FROM agentos.events e WHERE e.owner = s.owner "
         "AND e.session_id = s.session_id) FROM agentos.sessions s "
         "WHERE s.owner = current_user AND s.session_id = %s FOR UPDATE NOWAIT")
_HOLDER = ("SELECT a.application_name FROM agentos.sessions s "
           "JOIN pg_locks l ON l.locktype = 'transactionid' AND l.transactionid = s.xmax "
           "AND l.mode = 'ExclusiveLock' AND l.granted "
           "JOIN pg_stat_activity a ON a.pid = l.pid "
           "WHERE s.owner = current_user AND s.session_id = %s AND l.pid <> pg_backend_pid() LIMIT 1")
_OLD_SCHEMA = ("agentos.sessions does not exist: the database's schema is older than this "
               "agentos-kernel (claims are row locks since version 2); run `agentos store migrate` "
               "as the course's admin (docs/class-server.md)")


class SessionClaim:
    """A held claim on one session: its row locked in a transaction on its own connection."""

    def __init__(self, conn: Any, next_pos: int) -> None:
        self._conn = conn
        self.next_pos = next_pos
        """The position the session's next event takes (1 for a new session)."""

    @classmethod
    def take(cls, connect: Any, session_id: str, where: Path) -> SessionClaim:
        """Lock `session_id`'s row (made if missing) for the connecting role: SessionLocked
        naming the holder when another connection has it. `connect()` opens the connection
        (autocommit), `where` names the session in messages."""
        import psycopg

        conn = connect()
        try:
            # Its own transaction, committed at once: a row inserted in the claim's open
            # transaction would make a second claimer wait on it instead of being refused.
            conn.execute("INSERT INTO agentos.sessions (session_id) VALUES (%s) ON CONFLICT DO NOTHING",
                         (session_id,))
            conn.autocommit = False  # from here on, one transaction: the claim's lifetime
            row = conn.execute(_LOCK, (session_id,)).fetchone()
        except psycopg.errors.LockNotAvailable:
            conn.rollback()
            conn.autocommit = True
            holder = _holder(conn, session_id)
            conn.close()
            raise SessionLocked(session_id, holder, where) from None
        except psycopg.errors.UndefinedTable:
            conn.close()
            raise psycopg.errors.UndefinedTable(_OLD_SCHEMA) from None
        except BaseException:
            conn.close()
            raise
        if row is None:  # the row is there (inserted above, never deleted) but not ours to lock
            conn.close()
            raise PermissionError(f"{where}: the session's row cannot be locked by this role")
        return cls(conn, int(row[0]) + 1)

    @property
    def alive(self) -> bool:
        """The claim's connection is open (the server keeps the lock while it is)."""
        return not self._conn.closed

    def release(self) -> None:
        """Drop the claim: closing the connection ends its transaction and the row lock."""
        self._conn.close()


def _holder(conn: Any, session_id: str) -> int | None:
    """The OS pid of the process whose connection locks the row (None when it cannot be told,
    e.g. it let go in between)."""
    row = conn.execute(_HOLDER, (session_id,)).fetchone()
    text = (row[0] or "") if row else ""
    tail = text.removeprefix(APP).strip()
    return int(tail) if text.startswith(APP) and tail.isdigit() else None

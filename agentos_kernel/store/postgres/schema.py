"""The PostgreSQL event store's schema, as numbered migrations (`agentos store migrate`).

What the database itself enforces, whoever connects (docs/class-server.md):

- Row-level security: a role reads and writes only rows whose `owner` is itself; a member
  of `agentos_instructor` reads every row (and still writes only its own). Forced, so the
  table's owner is held to the policies too (a superuser bypasses RLS by definition).
- Append-only: UPDATE, DELETE and TRUNCATE are not granted to anyone, and a trigger refuses
  them even for the table's owner or a superuser (who could only drop the trigger: DDL, which
  the hash chain and an anchored head still expose).
- Per-session order: a row's `pos` must be the session's next position (1, 2, 3 …; a trigger
  and the primary key (owner, session_id, pos)), so two writers can never interleave a log.
- One writer per session (version 2): a claim locks the session's row in agentos.sessions,
  which only its owner may lock (lock.py); no role can block another's session.

Each migration runs once, in one transaction, and is recorded in `agentos.schema_version`.
Two concurrent `migrate`s wait for each other: on a database that has the schema, through an
EXCLUSIVE lock on agentos.schema_version (which a student, holding SELECT on it only, cannot
take nor block); on a new one, through an advisory lock (no student role exists yet).
"""

from __future__ import annotations

from dataclasses import dataclass

SCHEMA = "agentos"
STUDENT_GROUP = "agentos_student"
INSTRUCTOR_GROUP = "agentos_instructor"
_MIGRATE_LOCK = 0x6167656E746F73  # "agentos": the advisory lock key of `migrate`

_V1 = r"""
DO $$ BEGIN
  IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'agentos_student') THEN
    CREATE ROLE agentos_student NOLOGIN;
  END IF;
  IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'agentos_instructor') THEN
    CREATE ROLE agentos_instructor NOLOGIN;
  END IF;
END $$;

CREATE TABLE agentos.events (
  owner      text NOT NULL DEFAULT current_user,
  session_id text NOT NULL
             CHECK (session_id ~ '^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$' AND strpos(session_id, '..') = 0),
  pos        bigint NOT NULL CHECK (pos >= 1),
  id         text NOT NULL,
  type       text NOT NULL,
  ts         text NOT NULL,
  line       text NOT NULL,
  stored_at  timestamptz NOT NULL DEFAULT clock_timestamp(),
  PRIMARY KEY (owner, session_id, pos)
);
COMMENT ON TABLE agentos.events IS
  'One row per event; line is the exact JSONL line (canonical JSON, no newline) whose bytes are chained.';
CREATE INDEX events_type ON agentos.events (type);

CREATE FUNCTION agentos.refuse_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'agentos.events is append-only: % refused for every role', TG_OP
    USING HINT = 'correct an event by appending event.amended (agentos amend)';
END $$;
CREATE TRIGGER events_append_only BEFORE UPDATE OR DELETE ON agentos.events
  FOR EACH ROW EXECUTE FUNCTION agentos.refuse_change();
CREATE TRIGGER events_no_truncate BEFORE TRUNCATE ON agentos.events
  FOR EACH STATEMENT EXECUTE FUNCTION agentos.refuse_change();

CREATE FUNCTION agentos.next_in_order() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE want bigint;
BEGIN
  SELECT coalesce(max(pos), 0) + 1 INTO want FROM agentos.events
   WHERE owner = NEW.owner AND session_id = NEW.session_id;
  IF NEW.pos <> want THEN
    RAISE EXCEPTION 'agentos.events: session %/% continues at position %, not %',
      NEW.owner, NEW.session_id, want, NEW.pos
      USING HINT = 'one writer per session: another writer appended since this one read the log';
  END IF;
  RETURN NEW;
END $$;
CREATE TRIGGER events_in_order BEFORE INSERT ON agentos.events
  FOR EACH ROW EXECUTE FUNCTION agentos.next_in_order();

ALTER TABLE agentos.events ENABLE ROW LEVEL SECURITY;
ALTER TABLE agentos.events FORCE ROW LEVEL SECURITY;
CREATE POLICY events_read ON agentos.events FOR SELECT
  USING (owner = current_user OR (SELECT pg_has_role(current_user, 'agentos_instructor', 'MEMBER')));
CREATE POLICY events_write ON agentos.events FOR INSERT WITH CHECK (owner = current_user);

REVOKE ALL ON SCHEMA agentos FROM PUBLIC;
REVOKE ALL ON agentos.events, agentos.schema_version FROM PUBLIC;
GRANT USAGE ON SCHEMA agentos TO agentos_student, agentos_instructor;
GRANT SELECT, INSERT ON agentos.events TO agentos_student, agentos_instructor;
GRANT SELECT ON agentos.schema_version TO agentos_student, agentos_instructor;
"""


@dataclass(frozen=True)
class Migration:
    """One schema step, applied once."""

    version: int
    """Its number: applied in order, recorded in agentos.schema_version."""
    name: str
    """What it does, in a few words."""
    sql: str
    """The statements, run in one transaction."""


# Claims were session-level advisory locks keyed by a hash of the owner and id: any role may
# take any advisory key, so a student could block another's session. A row lock obeys RLS.
_V2 = r"""
CREATE OR REPLACE FUNCTION agentos.refuse_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION '%.% is append-only: % refused for every role', TG_TABLE_SCHEMA, TG_TABLE_NAME, TG_OP
    USING HINT = 'correct an event by appending event.amended (agentos amend)';
END $$;

CREATE TABLE agentos.sessions (
  owner      text NOT NULL DEFAULT current_user,
  session_id text NOT NULL
             CHECK (session_id ~ '^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$' AND strpos(session_id, '..') = 0),
  created_at timestamptz NOT NULL DEFAULT clock_timestamp(),
  PRIMARY KEY (owner, session_id)
);
COMMENT ON TABLE agentos.sessions IS
  'One row per (owner, session id). A writer claims a session by locking its row '
  '(SELECT ... FOR UPDATE NOWAIT) for as long as it writes; only the owner may lock it.';
CREATE TRIGGER sessions_append_only BEFORE UPDATE OR DELETE ON agentos.sessions
  FOR EACH ROW EXECUTE FUNCTION agentos.refuse_change();
CREATE TRIGGER sessions_no_truncate BEFORE TRUNCATE ON agentos.sessions
  FOR EACH STATEMENT EXECUTE FUNCTION agentos.refuse_change();

ALTER TABLE agentos.sessions ENABLE ROW LEVEL SECURITY;
ALTER TABLE agentos.sessions FORCE ROW LEVEL SECURITY;
CREATE POLICY sessions_read ON agentos.sessions FOR SELECT
  USING (owner = current_user OR (SELECT pg_has_role(current_user, 'agentos_instructor', 'MEMBER')));
CREATE POLICY sessions_new ON agentos.sessions FOR INSERT WITH CHECK (owner = current_user);
-- FOR UPDATE locks the rows that the SELECT and UPDATE policies both let through: one's own.
-- WITH CHECK (false): the row is only ever locked, never updated.
CREATE POLICY sessions_lock ON agentos.sessions FOR UPDATE
  USING (owner = current_user) WITH CHECK (false);

REVOKE ALL ON agentos.sessions FROM PUBLIC;
GRANT SELECT, INSERT ON agentos.sessions TO agentos_student, agentos_instructor;
-- FOR UPDATE needs UPDATE on one column. Not on the table: that would allow LOCK TABLE ...
-- EXCLUSIVE, and one student could block every claim of the class.
GRANT UPDATE (session_id) ON agentos.sessions TO agentos_student, agentos_instructor;
"""


MIGRATIONS: tuple[Migration, ...] = (
    Migration(1, "events table, student/instructor roles, row-level security, append-only triggers", _V1),
    Migration(2, "sessions table: a claim is a row lock only its owner may take", _V2),
)
LATEST = MIGRATIONS[-1].version

_BOOTSTRAP = """
CREATE SCHEMA IF NOT EXISTS agentos;
CREATE TABLE IF NOT EXISTS agentos.schema_version (
  version    integer PRIMARY KEY,
  name       text NOT NULL,
  applied_at timestamptz NOT NULL DEFAULT now()
);
"""


def migrate(dsn: str) -> list[Migration]:
    """Bring the database at `dsn` to the latest schema; the migrations applied now (none when
    it is current). Run it as the role that is to own the schema (a superuser or the course's
    database owner: it creates the group roles)."""
    from .store import connect

    applied: list[Migration] = []
    with connect(dsn) as conn, conn.transaction():
        if conn.execute("SELECT to_regclass('agentos.schema_version')").fetchone()[0] is None:
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (_MIGRATE_LOCK,))  # a new database
        conn.execute(_BOOTSTRAP)
        conn.execute("LOCK TABLE agentos.schema_version IN EXCLUSIVE MODE")
        done = {row[0] for row in conn.execute("SELECT version FROM agentos.schema_version")}
        for m in MIGRATIONS:
            if m.version in done:
                continue
            conn.execute(m.sql)
            conn.execute("INSERT INTO agentos.schema_version (version, name) VALUES (%s, %s)",
                         (m.version, m.name))
            applied.append(m)
    return applied


def schema_version(dsn: str) -> int | None:
    """The database's schema version, or None when it was never migrated."""
    from .store import connect

    with connect(dsn) as conn:
        if conn.execute("SELECT to_regclass('agentos.schema_version')").fetchone()[0] is None:
            return None
        row = conn.execute("SELECT max(version) FROM agentos.schema_version").fetchone()
        return row[0]

"""Course roles in the PostgreSQL event store: one login role per student (a member of
`agentos_student`, so row-level security shows it only its own sessions) and instructor
roles (members of `agentos_instructor`, who read every student's sessions).
`agentos store add-student` calls `add_role`; docs/class-server.md has the SQL it runs."""

from __future__ import annotations

import re

from .schema import INSTRUCTOR_GROUP, STUDENT_GROUP

_ROLE = re.compile(r"^[a-z0-9_][a-z0-9_]{0,62}$")


def check_role_name(name: str) -> str | None:
    """None when `name` is usable as a role (lowercase letters, digits, `_`; at most 63), else why."""
    if not isinstance(name, str) or not _ROLE.fullmatch(name):
        return (f"invalid role name {name!r}: use 1-63 lowercase letters, digits or '_', "
                "e.g. a student number")
    if name.startswith("pg_") or name in (STUDENT_GROUP, INSTRUCTOR_GROUP):
        return f"invalid role name {name!r}: reserved (pg_*, {STUDENT_GROUP}, {INSTRUCTOR_GROUP})"
    return None


def add_role(admin_dsn: str, name: str, password: str | None, *, instructor: bool = False) -> bool:
    """Create login role `name` in the student (or instructor) group; True when it was new.
    An existing role gets the group and the new password (so re-running it is harmless).
    Needs a role with CREATEROLE (the one that ran `agentos store migrate`)."""
    from psycopg import sql

    from .store import connect

    problem = check_role_name(name)
    if problem:
        raise ValueError(problem)
    group = INSTRUCTOR_GROUP if instructor else STUDENT_GROUP
    ident = sql.Identifier(name)
    with connect(admin_dsn) as conn, conn.transaction():
        exists = conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (name,)).fetchone()
        verb = sql.SQL("ALTER") if exists else sql.SQL("CREATE")
        if password is None:
            conn.execute(sql.SQL("{} ROLE {} LOGIN").format(verb, ident))
        else:
            conn.execute(sql.SQL("{} ROLE {} LOGIN PASSWORD {}").format(verb, ident, sql.Literal(password)))
        conn.execute(sql.SQL("GRANT {} TO {}").format(sql.Identifier(group), ident))
    return not exists

"""Which EventStore a profile's sessions go to (`event_store:` in agentos.yaml), and the
`--store` targets of the CLI (`agentos store copy`, `grade`, `audit`, `verify`).

A store target is either a folder of sessions (`sessions/`, `<id>/.events.jsonl` each) or
`postgres:ENV[/OWNER]`: the database whose connection string is in environment variable ENV
(never the string itself on a command line), the connecting role's own sessions, or OWNER's
(an instructor reading a student's). psycopg is imported only when a postgres store is used.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import ContractError, Problem
from .events import EventStore
from .jsonl import JsonlEventStore

if TYPE_CHECKING:
    from ..config import RuntimeProfile
    from .postgres.store import PostgresEventStore

PG_PREFIX = "postgres:"
_TARGET = re.compile(r"^postgres:([A-Z_][A-Z0-9_]*)(?:/([a-z0-9_][a-z0-9_]{0,62}))?$")


def dsn_from_env(env: str, where: str, field: str) -> str:
    """The connection string in `env`; ContractError naming `where`/`field` and the fix when unset."""
    dsn = os.environ.get(env, "")
    if not dsn:
        raise ContractError([Problem(where, field, f"{env} is not set; export the PostgreSQL "
                                     f"connection string there (export {env}=postgresql://ROLE@HOST/DB) "
                                     "or use event_store: {kind: jsonl}")])
    return dsn


def open_store(profile: RuntimeProfile, sessions: Path, where: str = "agentos.yaml",
               workspace: Path | None = None) -> JsonlEventStore | PostgresEventStore:
    """The store of `profile`'s sessions: JSONL under `sessions`, or PostgreSQL at the DSN in
    `event_store.dsn_env` (ContractError naming `where`, the profile and the variable when it
    is unset). A JSONL store is confined to `workspace` (default: the folder holding
    `sessions`): ContractError when `sessions` is a link leading out of it, unless the
    profile allows it (`sessions_may_link_out`; then sessions lie in where it leads)."""
    cfg = profile.event_store
    if cfg.kind == "jsonl":
        confine = Path(sessions) if cfg.sessions_may_link_out else Path(workspace or Path(sessions).parent)
        return JsonlEventStore(sessions, profile.durability, confine=confine)
    field = f"profiles.{profile.name}.event_store.dsn_env"
    if not cfg.dsn_env:
        raise ContractError([Problem(where, field, "a postgres event store needs dsn_env")])
    from .postgres.store import PostgresEventStore

    return PostgresEventStore(dsn_from_env(cfg.dsn_env, where, field), pool_max=cfg.pool_max,
                              durability=profile.durability, name=f"{PG_PREFIX}{cfg.dsn_env}")


def is_pg_target(target: str) -> bool:
    """True when `target` names a PostgreSQL store (`postgres:...`), well-formed or not."""
    return target.startswith(PG_PREFIX)


def pg_store_of(target: str, pool_max: int = 4) -> PostgresEventStore:
    """The store `postgres:ENV[/OWNER]` names; ValueError saying the syntax, or naming the unset variable."""
    m = _TARGET.fullmatch(target)
    if m is None:
        raise ValueError(f"{target!r}: a PostgreSQL store is postgres:ENV or postgres:ENV/OWNER (ENV an "
                         "environment variable holding the connection string, OWNER a role name)")
    env, owner = m.groups()
    if not os.environ.get(env):
        raise ValueError(f"{target}: {env} is not set; export the connection string there "
                         f"(export {env}=postgresql://ROLE@HOST/DB)")
    from .postgres.store import PostgresEventStore

    return PostgresEventStore(os.environ[env], pool_max=pool_max, owner=owner, name=f"{PG_PREFIX}{env}")


def pg_stores_of(target: str, pool_max: int = 4) -> list[PostgresEventStore]:
    """The stores a target of `verify` and `audit` names: `postgres:ENV[/OWNER]` (one), or
    `postgres:ENV/*`, the whole store: one per owner the connecting role may read, sorted (an
    instructor's role: the class). ValueError as `pg_store_of`."""
    if not target.endswith("/*"):
        return [pg_store_of(target, pool_max)]
    whole = pg_store_of(target[:-2], pool_max)
    return [pg_store_of(f"{target[:-2]}/{owner}", pool_max) for owner in whole.owners()]


def store_of(target: str) -> EventStore:
    """The store a CLI target names: `postgres:ENV[/OWNER]`, else a folder of sessions."""
    if is_pg_target(target):
        return pg_store_of(target)
    return JsonlEventStore(Path(target))


def db_error(exc: BaseException) -> str | None:
    """A one-line message for a database's refusal (connection, permission, a trigger) or a
    missing `[postgres]` extra, for the CLI; None for any other exception."""
    from .postgres.store import EXTRA_HINT

    if isinstance(exc, ImportError) and EXTRA_HINT in str(exc):
        return str(exc)
    if type(exc).__module__.split(".")[0] in ("psycopg", "psycopg_pool"):
        return f"postgres: {type(exc).__name__}: {' '.join(str(exc).split())}"
    return None

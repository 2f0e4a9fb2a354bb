"""A student's server on the class JupyterHub (deploy/jupyterhub_config.py, docs/jupyterhub.md).

`prepare_student` runs in the hub before each single-user server starts (its
`pre_spawn_hook`): it makes the student's home an agentos workspace (`agentos init`), and on
a class server with PostgreSQL it gives the student their own login role (row-level security
shows that role only its own sessions), a fresh password for this server, and a default
profile `class` whose `event_store` reads the DSN from AGENTOS_PG_DSN. It returns the
environment the server starts with; the hub's own admin DSN is never part of it.
psycopg is imported only on the PostgreSQL path.
"""

from __future__ import annotations

import re
import secrets
from pathlib import Path

from ..config import CONFIG_NAME
from ..workspace import create_workspace

DSN_ENV = "AGENTOS_PG_DSN"
CLASS_PROFILE = "class"
_PROFILE = f"""\
  # The class server's store (added by the hub: agentos_kernel/classroom/hub.py): your sessions go to
  # PostgreSQL as your own database role, which sees only your sessions.
  {CLASS_PROFILE}:
    provider: scripted
    model: scripted-1
    deterministic: true
    max_rework: 2
    prices: {{input_per_mtok: 3.0, output_per_mtok: 15.0}}
    event_store: {{kind: postgres, dsn_env: {DSN_ENV}, pool_max: 2}}
"""


class HubSetupError(ValueError):
    """A student's server cannot be prepared; the message names the user and the fix."""


def student_workspace(home: Path) -> Path:
    """`agentos init` into `home` unless it already holds a workspace (a second spawn keeps the
    student's files and sessions); returns `home`."""
    if not (home / CONFIG_NAME).is_file():
        create_workspace(home)
    return home


def use_class_store(workspace: Path, dsn_env: str = DSN_ENV) -> None:
    """Add the `class` profile (scripted, PostgreSQL store at the DSN in `dsn_env`) to the
    workspace's agentos.yaml and make it the default; nothing changes when it is there already."""
    config = workspace / CONFIG_NAME
    text = config.read_text(encoding="utf-8")
    if re.search(rf"^  {CLASS_PROFILE}:\s*$", text, re.MULTILINE):
        return
    profile = _PROFILE if dsn_env == DSN_ENV else _PROFILE.replace(DSN_ENV, dsn_env)
    text, n = re.subn(r"^profiles:[ \t]*\n", lambda m: m.group(0) + profile, text, count=1,
                      flags=re.MULTILINE)
    text, m = re.subn(r"^default_profile:.*$", f"default_profile: {CLASS_PROFILE}", text, count=1,
                      flags=re.MULTILINE)
    if n != 1 or m != 1:
        raise HubSetupError(f"{config}: no top-level 'profiles:' or 'default_profile:' to extend; "
                            "restore it with `agentos init` into an empty directory")
    config.write_text(text, encoding="utf-8")


def student_dsn(admin_dsn: str, role: str, password: str) -> str:
    """The admin DSN's server and database, as `role` with `password`."""
    from psycopg.conninfo import make_conninfo

    return make_conninfo(admin_dsn, user=role, password=password)


def prepare_student(home: Path | str, username: str, admin_dsn: str | None = None) -> dict[str, str]:
    """Make `home` the student's workspace; with `admin_dsn` (a role that may create roles, on a
    database `agentos store migrate` has set up) also their database role and the `class`
    profile. Returns the environment to add to their server: {AGENTOS_PG_DSN: their DSN}, or {}."""
    ws = student_workspace(Path(home))
    if admin_dsn is None:
        return {}
    from ..store.postgres.roles import add_role, check_role_name

    problem = check_role_name(username)
    if problem:
        raise HubSetupError(f"user {username!r}: {problem}; the hub's usernames are the students' "
                            "database roles (Authenticator.username_map can map them)")
    password = secrets.token_urlsafe(24)  # new for each server: an old DSN stops working
    add_role(admin_dsn, username, password)
    use_class_store(ws)
    return {DSN_ENV: student_dsn(admin_dsn, username, password)}

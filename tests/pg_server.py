"""A real, throwaway PostgreSQL server for the tests (issue 14): Debian's `postgresql`
binaries (`initdb`, `pg_ctl`) in a temp dir, listening on 127.0.0.1 on a free port, stopped
at the end of the test session.

Use it with `pytest_plugins = ["tests.pg_server"]` (tests/conftest.py registers it) and the
fixtures below; where no server can be started they SKIP naming the reason (no binaries, no
psycopg, initdb or pg_ctl failed: its log is quoted), never silently.

- `pg_server` (session): a `PgServer`: `.dsn(user, password)`, `.admin_dsn`, `.port`, `.stop()`.
- `pg_admin_dsn` (function): the DSN of a fresh, migrated database (a new one per test: tests
  never see each other's rows or roles' sessions), connecting as the superuser.
- `pg_db` (function): a `PgDatabase` for that database: `.admin_dsn`, `.student(name)` ->
  a DSN for a new student role, `.instructor(name)` -> one for a new instructor role.

initdb refuses to run as root: as root the server runs as the `postgres` OS user when there
is one, else as `nobody`; its data dir and socket are in a private temp dir chowned to it.
Host connections need a password (scram-sha-256), so a role is only what its DSN says.
"""

from __future__ import annotations

import contextlib
import glob
import itertools
import os
import pwd
import secrets
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ADMIN = "agentos_admin"
_START_TIMEOUT_S = 60


def find_bindir() -> Path | None:
    """The newest /usr/lib/postgresql/<v>/bin holding initdb and pg_ctl, else None."""
    def version(initdb: str) -> int:
        v = Path(initdb).parent.parent.name
        return int(v) if v.isdigit() else 0

    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=version)
    for initdb in reversed(found):
        bindir = Path(initdb).parent
        if (bindir / "pg_ctl").is_file():
            return bindir
    which = shutil.which("initdb")
    return Path(which).parent if which and shutil.which("pg_ctl") else None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _run_as() -> str | None:
    """The OS user the server runs as: None (ourselves) unless we are root."""
    if os.geteuid() != 0:
        return None
    for name in ("postgres", "nobody"):
        with contextlib.suppress(KeyError):
            pwd.getpwnam(name)
            return name
    return None


class ServerUnavailable(RuntimeError):
    """The server could not be started; the message says why."""


@dataclass
class PgServer:
    """A running server started by `PgServer.start`."""

    bindir: Path
    """Where initdb/pg_ctl/postgres are."""
    root: Path
    """The private temp dir: data/, the unix socket, server.log, the admin password file."""
    port: int
    """TCP port on 127.0.0.1."""
    password: str
    """The superuser's password."""
    user: str | None
    """The OS user it runs as (None: this process's user)."""

    @classmethod
    def start(cls, max_connections: int = 100, fsync: bool = False) -> PgServer:
        """initdb + pg_ctl start; ServerUnavailable saying why (with the log's tail)."""
        bindir = find_bindir()
        if bindir is None:
            raise ServerUnavailable("no PostgreSQL server binaries (initdb, pg_ctl) in "
                                    "/usr/lib/postgresql/*/bin nor on PATH: apt-get install postgresql")
        user = _run_as()
        if os.geteuid() == 0 and user is None:
            raise ServerUnavailable("running as root and there is neither a `postgres` nor a "
                                    "`nobody` OS user to run initdb as (initdb refuses root)")
        root = Path(tempfile.mkdtemp(prefix="agentos-pg-"))
        password = secrets.token_hex(16)
        (root / "pw").write_text(password + "\n")
        if user is not None:
            pw = pwd.getpwnam(user)
            for p in (root, root / "pw"):
                os.chown(p, pw.pw_uid, pw.pw_gid)
        server = cls(bindir, root, _free_port(), password, user)
        server._sh([str(bindir / "initdb"), "-D", str(root / "data"), "-U", ADMIN, "-E", "UTF8",
                    "--locale=C.UTF-8", "--auth-local=trust", "--auth-host=scram-sha-256",
                    f"--pwfile={root / 'pw'}"], "initdb")
        opts = (f"-c listen_addresses=127.0.0.1 -p {server.port} -k {root} "
                f"-c max_connections={max_connections} -c fsync={'on' if fsync else 'off'}")
        server._sh([str(bindir / "pg_ctl"), "-D", str(root / "data"), "-o", opts,
                    "-l", str(root / "server.log"), "-w", "-t", str(_START_TIMEOUT_S), "start"],
                   "pg_ctl start")
        return server

    def _sh(self, argv: list[str], what: str) -> None:
        if self.user is not None:
            argv = ["runuser", "-u", self.user, "--", *argv]
        done = subprocess.run(argv, capture_output=True, text=True, cwd=self.root, check=False)
        if done.returncode != 0:
            log = self.root / "server.log"
            tail = log.read_text(errors="replace")[-1500:] if log.exists() else ""
            shutil.rmtree(self.root, ignore_errors=True)
            raise ServerUnavailable(f"{what} failed (exit {done.returncode}): "
                                    f"{(done.stderr or done.stdout).strip()[-1500:]} {tail}".strip())

    def dsn(self, user: str, password: str, dbname: str = "postgres") -> str:
        """A libpq URI for `user` on this server (over TCP, so the password is checked)."""
        return f"postgresql://{user}:{password}@127.0.0.1:{self.port}/{dbname}"

    @property
    def admin_dsn(self) -> str:
        """The superuser's DSN on the `postgres` database."""
        return self.dsn(ADMIN, self.password)

    def stop(self) -> None:
        """pg_ctl stop (fast) and remove the temp dir."""
        with contextlib.suppress(ServerUnavailable):
            self._sh([str(self.bindir / "pg_ctl"), "-D", str(self.root / "data"), "-m", "fast",
                      "-w", "stop"], "pg_ctl stop")
        shutil.rmtree(self.root, ignore_errors=True)


_dbs = itertools.count(1)


@dataclass
class PgDatabase:
    """One fresh database on the server, migrated (`agentos store migrate`)."""

    server: PgServer
    """The server it lives on."""
    name: str
    """The database name."""

    @property
    def admin_dsn(self) -> str:
        """The superuser on this database (owns the schema; still hits the append-only trigger)."""
        return self.server.dsn(ADMIN, self.server.password, self.name)

    def student(self, name: str) -> str:
        """Create student role `name` (agentos.pg_roles.add_role) and return its DSN here."""
        return self._role(name, instructor=False)

    def instructor(self, name: str) -> str:
        """Create an instructor role `name` (sees every student's sessions); its DSN here."""
        return self._role(name, instructor=True)

    def _role(self, name: str, instructor: bool) -> str:
        from agentos_kernel.store.postgres.roles import add_role

        password = secrets.token_hex(8)
        add_role(self.admin_dsn, name, password, instructor=instructor)
        return self.server.dsn(name, password, self.name)


def _psycopg_or_skip() -> None:
    try:
        import psycopg  # noqa: F401
        import psycopg_pool  # noqa: F401
    except ImportError as exc:
        pytest.skip(f"PostgreSQL tests need psycopg 3 and psycopg-pool ({exc}): "
                    'pip install -e ".[test]" (or ".[postgres]")')


@pytest.fixture(scope="session")
def pg_server() -> Iterator[PgServer]:
    """A PostgreSQL server for the whole test session (skips, saying why, when none starts)."""
    _psycopg_or_skip()
    try:
        server = PgServer.start()
    except ServerUnavailable as exc:
        pytest.skip(f"no PostgreSQL server for the tests: {exc}")
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def pg_db(pg_server: PgServer) -> Iterator[PgDatabase]:
    """A new database migrated to the current schema (roles are cluster-wide: name them
    uniquely, e.g. after `pg_db.name`). The process's pools are closed after the test."""
    import psycopg

    from agentos_kernel.store.postgres.schema import migrate
    from agentos_kernel.store.postgres.store import close_pools

    name = f"agentos_t{os.getpid()}_{next(_dbs)}"
    with psycopg.connect(pg_server.admin_dsn, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    db = PgDatabase(pg_server, name)
    migrate(db.admin_dsn)
    yield db
    close_pools()


@pytest.fixture
def pg_admin_dsn(pg_db: PgDatabase) -> str:
    """The superuser's DSN on a fresh migrated database."""
    return pg_db.admin_dsn

"""The class JupyterHub (deploy/jupyterhub_config.py, docs/jupyterhub.md; issue 14): a real hub
with configurable-http-proxy on 127.0.0.1, two students log in with the password, each one's
server starts in their own workspace with their own PostgreSQL role, `%agent` runs in a kernel
on each (over the kernel websocket, as a browser would), and each sees only their own sessions,
in the database; the instructor role sees both. Select with `pytest -m jupyterhub`.

Skips, saying why, without configurable-http-proxy (`npm install -g configurable-http-proxy`;
.ci/run installs it) or without a PostgreSQL server (tests/pg_server.py)."""

from __future__ import annotations

import json
import secrets
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentos_kernel.classroom.views import class_frame, postgres_source, sessions_per_student

from .hubclient import Hub, running_hub
from .pg_server import PgDatabase

pytestmark = pytest.mark.jupyterhub
STUDENTS = ("alice", "bob")
PASSWORD = "agentos-class"

# What a student's kernel reports about itself after running %agent (one JSON line).
REPORT = """
import json, os
from agentos_kernel.kernel import Runtime
from agentos_kernel.store.postgres.store import PostgresEventStore
rt = Runtime.from_workspace()
other = {"alice": "bob", "bob": "alice"}[os.environ["USER"]]
print(json.dumps({
    "workspace": str(rt.workspace.root), "home": os.environ["HOME"], "store": rt.profile.event_store.kind,
    "role": rt.store.me, "owners": rt.store.owners(), "sessions": rt.store.sessions(),
    "other_owner": PostgresEventStore(os.environ["AGENTOS_PG_DSN"], owner=other).sessions(),
    "admin_dsn_visible": "AGENTOS_HUB_PG_ADMIN_DSN" in os.environ,
    "local_logs": sorted(os.listdir("sessions")) if os.path.isdir("sessions") else [],
}))
"""


@pytest.fixture
def proxy() -> str:
    found = shutil.which("configurable-http-proxy")
    if found is None:
        pytest.skip("configurable-http-proxy is not on PATH (the hub's proxy): "
                    "npm install -g configurable-http-proxy (node 18+; .ci/run does it)")
    return found


@pytest.fixture
def hub(proxy: str, pg_db: PgDatabase, tmp_path: Path) -> Iterator[Hub]:
    with running_hub(tmp_path / "hub", PASSWORD, secrets.token_hex(16), pg_db.admin_dsn) as running:
        yield running


def test_two_students_each_see_only_their_own_sessions_in_the_database(hub: Hub, pg_db: PgDatabase) -> None:
    wrong = hub.login("alice", "not-the-password")
    assert wrong.status == 403 and "jupyterhub-session-id" not in wrong.headers.get("cookies", "")
    for user in STUDENTS:
        ok = hub.login(user, PASSWORD)
        assert ok.status == 302, (ok.status, ok.body[:300])
        assert "jupyterhub-hub-login" in ok.headers["cookies"]  # logged in

    tokens = {user: hub.user_token(user) for user in STUDENTS}
    reports = {}
    for user in STUDENTS:
        hub.start_server(user, tokens[user])
        load, first, second, report = hub.run_in_kernel(user, tokens[user], [
            "%load_ext agentos_kernel",
            '%agent "hello, greet Ada"',
            f'%agent --session only-{user} "hello, greet Ada"',
            REPORT,
        ])
        assert "Error" not in load, load
        assert first.startswith("AgentRun s0001 ok"), first
        assert second.startswith(f"AgentRun only-{user} ok"), second
        reports[user] = json.loads(report.strip().splitlines()[-1])

    for user, r in reports.items():
        home = str((hub.state / "homes" / user).resolve())
        assert r["workspace"] == r["home"] == home, "the server starts in the student's own workspace"
        assert r["store"] == "postgres" and r["local_logs"] == [], "sessions go to the database, not files"
        assert r["role"] == user, "connected as the student's own role"
        assert r["owners"] == [user] and r["sessions"] == ["only-" + user, "s0001"], \
            "each sees only their own sessions"
        assert r["other_owner"] == [], "naming the other student as the owner shows nothing"
        assert r["admin_dsn_visible"] is False, "the hub's admin DSN never reaches a student"

    # One student's token does not open another's server.
    assert hub.call("GET", "/user/alice/api/kernels", tokens["bob"]).status == 403

    # The instructor role sees the whole class: the dashboard's class source on the database.
    frame = class_frame(postgres_source(pg_db.instructor(f"teacher_{pg_db.name}")))
    table = sessions_per_student(frame)
    assert sorted(table.index) == list(STUDENTS)
    assert table["sessions"].tolist() == [2, 2] and table["ok"].tolist() == [2, 2]
    assert sorted(frame["session_id"]) == ["only-alice", "only-bob", "s0001", "s0001"]

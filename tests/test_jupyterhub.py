"""The class JupyterHub (deploy/jupyterhub_config.py, docs/jupyterhub.md; issue 14): a real hub
with configurable-http-proxy on 127.0.0.1, two students log in with the password, each one's
server starts in their own workspace with their own PostgreSQL role, `%agent` runs in a kernel
on each (over the kernel websocket, as a browser would), and each sees only their own sessions,
in the database; the instructor role sees both. The labs go out and come back through the hub's
exchange (issue 22): each student's home gets the teaching notebooks and the lab the instructor
released, never its solutions; each submits from their kernel (alice twice) and the instructor
collects the newest of each into nbgrader's submitted/ layout. Select with `pytest -m jupyterhub`.

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
from agentos_kernel.labs.notebook.exchange import OUTBOUND, collect
from agentos_kernel.labs.notebook.nbgrader_format import BEGIN_HIDDEN, BEGIN_SOLUTION
from agentos_kernel.labs.notebook.release import release

from .helpers import REPO
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
LAB = "lab-01-tools"
NB = f"notebooks/labs/{LAB}/{LAB}.ipynb"
# What a student's kernel finds handed out, then their submission (a cell of their own added;
# alice submits twice), through the CLI as a student types it in a terminal.
SUBMIT = f"""
import json, os, subprocess, sys
import nbformat
text = open({NB!r}, encoding="utf-8").read()
given = {{"labs": sorted(os.listdir("notebooks/labs")), "tour": os.path.isfile("notebooks/00_tour.ipynb"),
         "solution": {BEGIN_SOLUTION!r} in text, "hidden": {BEGIN_HIDDEN!r} in text}}
runs = []
for n in range(2 if os.environ["USER"] == "alice" else 1):
    nb = nbformat.read({NB!r}, as_version=4)
    nb.cells.append(nbformat.v4.new_code_cell(f"answer = '{{os.environ['USER']}} {{n}}'"))
    nbformat.write(nb, {NB!r})
    r = subprocess.run([sys.executable, "-m", "agentos_kernel", "lab", "submit", {NB!r}],
                       capture_output=True, text=True)
    runs.append([r.returncode, r.stdout.strip(), r.stderr.strip()])
print(json.dumps({{"given": given, "runs": runs}}))
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

    # The instructor releases lab 01 into the hub's exchange before the students log in.
    exchange = hub.state / "exchange"
    release(REPO / "notebooks" / "labs" / LAB, exchange / OUTBOUND / LAB)

    tokens = {user: hub.user_token(user) for user in STUDENTS}
    reports, handed = {}, {}
    for user in STUDENTS:
        hub.start_server(user, tokens[user])
        load, first, second, report, submitted = hub.run_in_kernel(user, tokens[user], [
            "%load_ext agentos_kernel",
            '%agent "hello, greet Ada"',
            f'%agent --session only-{user} "hello, greet Ada"',
            REPORT,
            SUBMIT,
        ])
        assert "Error" not in load, load
        assert first.startswith("AgentRun s0001 ok"), first
        assert second.startswith(f"AgentRun only-{user} ok"), second
        reports[user] = json.loads(report.strip().splitlines()[-1])
        handed[user] = json.loads(submitted.strip().splitlines()[-1])

    for user, h in handed.items():
        assert h["given"] == {"labs": [LAB], "tour": True, "solution": False, "hidden": False}, \
            "each student got the released lab and the teaching notebooks, no solution or hidden test"
        assert [code for code, _, _ in h["runs"]] == [0] * (2 if user == "alice" else 1), h["runs"]
        assert all(f"as {user}'s {LAB}" in out for _, out, _ in h["runs"]), h["runs"]
    done = collect(exchange, hub.state / "submitted")
    assert sorted(s.student for s in done.collected) == list(STUDENTS) and not done.skipped
    for user, newest in (("alice", "alice 1"), ("bob", "bob 0")):
        text = (hub.state / "submitted" / user / LAB / f"{LAB}.ipynb").read_text(encoding="utf-8")
        assert f"answer = '{newest}'" in text, f"{user}'s newest submission is the one collected"

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

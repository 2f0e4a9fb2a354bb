"""What the class hub does before a student's server starts (agentos_kernel/classroom/hub.py), and the
dashboard's class source on the PostgreSQL store (classroom.postgres_source), without a hub."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentos_kernel.classroom.hub import DSN_ENV, HubSetupError, prepare_student, use_class_store
from agentos_kernel.classroom.views import class_frame, postgres_source, sessions_per_student
from agentos_kernel.errors import Ok
from agentos_kernel.kernel import Runtime

from .pg_server import PgDatabase


def test_without_a_database_the_home_becomes_a_jsonl_workspace(tmp_path: Path) -> None:
    home = tmp_path / "homes" / "alice"
    home.mkdir(parents=True)
    (home / ".bashrc").write_text("# the student's own file\n")
    assert prepare_student(home, "alice") == {}
    rt = Runtime.from_workspace(home)
    assert rt.workspace.root == home.resolve() and rt.profile.event_store.kind == "jsonl"
    rt.handle_user_request("hello, greet Ada")
    assert prepare_student(home, "alice") == {}, "a second spawn keeps the workspace"
    assert (home / "sessions" / "s0001" / ".events.jsonl").is_file() and (home / ".bashrc").is_file()


def test_the_class_profile_is_added_once(workspace: Path) -> None:
    use_class_store(workspace)
    once = (workspace / "agentos.yaml").read_text()
    use_class_store(workspace)
    assert (workspace / "agentos.yaml").read_text() == once
    assert "default_profile: class" in once and once.count("  class:") == 1
    cfg = Runtime.from_workspace(workspace, profile="scripted").config  # still loads, schema-checked
    store = cfg.profile("class").event_store
    assert (cfg.default_profile, store.kind, store.dsn_env) == ("class", "postgres", DSN_ENV)


def test_a_username_that_cannot_be_a_role_is_refused(tmp_path: Path) -> None:
    with pytest.raises(HubSetupError, match=r"user 'Alice-1'.*invalid role name"):
        prepare_student(tmp_path / "h", "Alice-1", "postgresql://unused@127.0.0.1/x")


def run_as(home: Path, env: dict[str, str], monkeypatch: pytest.MonkeyPatch, *session_ids: str) -> Runtime:
    monkeypatch.setenv(DSN_ENV, env[DSN_ENV])
    rt = Runtime.from_workspace(home)
    for sid in session_ids:
        assert isinstance(rt.handle_user_request("hello, greet Ada", session_id=sid), Ok)
    return rt


def test_each_student_their_own_role_and_the_instructor_sees_the_class(
        tmp_path: Path, pg_db: PgDatabase, monkeypatch: pytest.MonkeyPatch) -> None:
    names = [f"ann_{pg_db.name}", f"ben_{pg_db.name}"]
    envs = {n: prepare_student(tmp_path / n, n, pg_db.admin_dsn) for n in names}
    ann = run_as(tmp_path / names[0], envs[names[0]], monkeypatch, "lab-01-tools.1", "lab-02-hooks.1")
    ben = run_as(tmp_path / names[1], envs[names[1]], monkeypatch, "lab-01-tools.1")
    assert ann.profile.name == "class" and ann.store.me == names[0] and ben.store.me == names[1]
    assert not (tmp_path / names[0] / "sessions").exists(), "nothing written as JSONL"

    # A student's DSN as a class source: only their own sessions.
    own = class_frame(postgres_source(envs[names[1]][DSN_ENV]))
    assert own[["student", "session_id"]].values.tolist() == [[names[1], "lab-01-tools.1"]]
    # The instructor's: the whole class, per student and per lab.
    frame = class_frame(postgres_source(pg_db.instructor(f"prof_{pg_db.name}")))
    assert sessions_per_student(frame)["sessions"].to_dict() == {names[0]: 2, names[1]: 1}
    assert sorted(frame["lab"]) == ["lab-01-tools", "lab-01-tools", "lab-02-hooks"]
    assert frame["ok"].all() and frame["cost_usd"].gt(0).all()


def test_a_new_server_gets_a_new_password(tmp_path: Path, pg_db: PgDatabase) -> None:
    import psycopg  # pg_db has skipped, saying why, when it is missing

    name = f"cy_{pg_db.name}"
    first = prepare_student(tmp_path / name, name, pg_db.admin_dsn)[DSN_ENV]
    second = prepare_student(tmp_path / name, name, pg_db.admin_dsn)[DSN_ENV]
    with psycopg.connect(second) as conn:
        assert conn.execute("SELECT current_user").fetchone()[0] == name
    with pytest.raises(psycopg.OperationalError, match="password authentication failed"):
        psycopg.connect(first)

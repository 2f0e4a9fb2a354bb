"""`agentos store copy` (issue 14): JSONL -> PostgreSQL -> JSONL gives back the same bytes, for
the reference trace and for a fresh run; the copy in the database replays, verifies and audits
clean from there; what cannot be copied losslessly is refused before anything is written."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from agentos_kernel.store.postgres.store import PostgresEventStore

from ..helpers import REPO, Cli
from ..pg_server import PgDatabase

LOG = ".events.jsonl"
PG = "postgres:AGENTOS_PG_DSN"
REF = REPO / "sessions" / "example" / LOG


@pytest.fixture
def student(pg_db: PgDatabase, monkeypatch: pytest.MonkeyPatch) -> str:
    """A student role's DSN, exported as AGENTOS_PG_DSN."""
    dsn = pg_db.student(f"copy_{pg_db.name}")
    monkeypatch.setenv("AGENTOS_PG_DSN", dsn)
    return dsn


def test_the_reference_trace_round_trips_byte_identical(student: str, tmp_path: Path, cli: Cli) -> None:
    code, out, err = cli("store", "copy", REPO / "sessions", PG, "--session", "example")
    assert code == 0, err
    assert "copied example:" in out
    code, out, err = cli("store", "copy", PG, tmp_path / "back")
    assert code == 0, err
    assert (tmp_path / "back" / "example" / LOG).read_bytes() == REF.read_bytes()
    code, out, _ = cli("verify", PG)
    assert code == 0 and "example" in out, out
    code, out, _ = cli("audit", PG)
    assert code == 0 and "clean" in out, out


def test_a_fresh_run_round_trips_and_replays_from_postgres(
        student: str, workspace: Path, canonical_run: object, tmp_path: Path, cli: Cli) -> None:
    sessions = workspace / "sessions"
    assert cli("store", "copy", sessions, PG)[0] == 0
    assert cli("store", "copy", PG, tmp_path / "back")[0] == 0
    for log in sessions.glob(f"*/{LOG}"):
        assert (tmp_path / "back" / log.parent.name / LOG).read_bytes() == log.read_bytes()
    code, out, _ = cli("store", "copy", sessions, PG)  # again: nothing to do
    assert code == 0 and "0 copied, 1 already there" in out, out
    jsonl = cli("--workspace", workspace, "replay", "s0001", "--json")
    shutil.rmtree(sessions)  # from here on the events exist only in the database
    from .test_pg_runtime import use_postgres
    use_postgres(workspace)
    assert cli("--workspace", workspace, "replay", "s0001", "--json", "--strict") == jsonl
    code, out, _ = cli("--workspace", workspace, "verify", "s0001", "--profile", "scripted")
    assert code == 0 and "s0001" in out, out


def test_a_foreign_log_is_copied_as_written_not_re_encoded(student: str, tmp_path: Path, cli: Cli) -> None:
    """Another implementation's log: the eight fields only, its own key order and spacing, a
    numeric ts. Reading it re-encodes nothing on the way through the database."""
    src = tmp_path / "src" / "go1"
    src.mkdir(parents=True)
    foreign = (b'{"type": "session.start", "id": "e1", "session_id": "go1", "ts": 1767225600, '
               b'"actor": "user", "payload": {"prompt": "hi", "\\u00e9": 1}, "schema_version": "v1", '
               b'"parent_id": null}\n'
               b'{"session_id":"go1","id":"e2","ts":1767225601.5,"type":"session.close","actor":"system",'
               b'"payload":{"ok":true},"schema_version":"v1","parent_id":"e1"}\n')
    (src / LOG).write_bytes(foreign)
    assert cli("store", "copy", tmp_path / "src", PG)[0] == 0
    assert cli("store", "copy", PG, tmp_path / "back")[0] == 0
    assert (tmp_path / "back" / "go1" / LOG).read_bytes() == foreign


def test_a_torn_log_is_refused_and_nothing_is_written(student: str, tmp_path: Path, cli: Cli) -> None:
    src = tmp_path / "src" / "t1"
    src.mkdir(parents=True)
    ref = REF.read_bytes().replace(b'"session_id":"example"',
                                                                     b'"session_id":"t1"')
    (src / LOG).write_bytes(ref + b'{"id":"torn')
    code, _, err = cli("store", "copy", tmp_path / "src", PG)
    assert code == 1
    assert "last line has no newline" in err and "agentos verify t1 --repair" in err
    assert PostgresEventStore(student).sessions() == []


def test_a_different_log_at_the_destination_is_never_overwritten(student: str, tmp_path: Path,
                                                                 cli: Cli) -> None:
    assert cli("store", "copy", REPO / "sessions", PG, "--session", "example")[0] == 0
    other = tmp_path / "other" / "example"
    other.mkdir(parents=True)
    lines = REF.read_bytes().splitlines(keepends=True)
    (other / LOG).write_bytes(b"".join(lines[:3]))
    code, _, err = cli("store", "copy", tmp_path / "other", PG)
    assert code == 1 and "already holds a different log" in err


def test_an_instructor_copies_the_class_into_one_folder_per_student(pg_db: PgDatabase, tmp_path: Path,
                                                                    cli: Cli, monkeypatch: pytest.MonkeyPatch
                                                                    ) -> None:
    names = [f"ann_{pg_db.name}", f"ben_{pg_db.name}"]
    for name in names:
        monkeypatch.setenv("AGENTOS_PG_DSN", pg_db.student(name))
        assert cli("store", "copy", REPO / "sessions", PG, "--session", "example")[0] == 0
    monkeypatch.setenv("AGENTOS_PG_DSN", pg_db.instructor(f"prof_{pg_db.name}"))
    code, out, err = cli("store", "copy", "postgres:AGENTOS_PG_DSN/*", tmp_path / "class")
    assert code == 0, err
    assert sorted(p.name for p in (tmp_path / "class").iterdir()) == names
    code, out, _ = cli("audit", f"postgres:AGENTOS_PG_DSN/{names[1]}")
    assert code == 0 and f"{names[1]}/example" in out, out


def test_bad_targets_say_the_syntax_or_the_unset_variable(cli: Cli, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AGENTOS_TEST_NO_DSN", raising=False)
    code, _, err = cli("store", "copy", "postgres:AGENTOS_TEST_NO_DSN", tmp_path / "x")
    assert code == 2 and "AGENTOS_TEST_NO_DSN is not set" in err
    code, _, err = cli("store", "copy", "postgres:lower-case", tmp_path / "x")
    assert code == 2 and "postgres:ENV or postgres:ENV/OWNER" in err
    code, _, err = cli("store", "copy", tmp_path / "missing", tmp_path / "x")
    assert code == 2 and "not a folder of sessions" in err

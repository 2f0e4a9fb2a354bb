"""`agentos grade --logs postgres:ENV` (issue 14): the observability criterion reads each
student's example log from the class's PostgreSQL store (the role named like the folder)
instead of the folder; a student without one fails it, named."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from agentos_kernel.cli.grade import _store_logs
from agentos_kernel.labs.rubric.observability import check as observability_check
from agentos_kernel.store.postgres.store import PostgresEventStore

from ..helpers import Cli
from ..labs._grade_fixtures import FULL_MARKS, LOG
from ..pg_server import PgDatabase


def test_the_example_log_is_read_from_the_store(pg_db: PgDatabase, tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    student = f"s{pg_db.name}"
    folder = tmp_path / "class" / student
    shutil.copytree(FULL_MARKS, folder, ignore=shutil.ignore_patterns("__pycache__"))
    log = (folder / LOG).read_bytes()
    (folder / LOG).unlink()  # the log is in the database only
    own = PostgresEventStore(pg_db.student(student))
    own.create("example")
    for line in log.splitlines(keepends=True):
        own.append_line("example", line)
    own.close("example")

    assert not observability_check(folder).passed, "without --logs the folder has no log"
    monkeypatch.setenv("AGENTOS_PG_DSN", pg_db.instructor(f"grader_{pg_db.name}"))
    logs = _store_logs("postgres:AGENTOS_PG_DSN")
    result = observability_check(folder, logs)
    assert result.passed, result.reason

    other = tmp_path / "class" / f"nobody_{pg_db.name}"
    shutil.copytree(folder, other)
    missing = observability_check(other, logs)
    assert not missing.passed
    assert f"no session 'example' in postgres:AGENTOS_PG_DSN (owner nobody_{pg_db.name})" in missing.reason


def test_logs_must_name_the_store_only(cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENTOS_PG_DSN", "postgresql://nobody@127.0.0.1:1/x")
    code, _, err = cli("grade", tmp_path, "--logs", "postgres:AGENTOS_PG_DSN/alice")
    assert code == 2 and "name the store only (postgres:ENV)" in err

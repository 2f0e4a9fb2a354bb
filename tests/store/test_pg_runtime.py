"""A workspace whose profile stores events in PostgreSQL (issue 14): the canonical request
runs, and replay and verify read it back from the database with the same results as JSONL."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from agentos_kernel import ContractError, Runtime
from agentos_kernel.errors import Ok
from agentos_kernel.store.postgres.store import PostgresEventStore

from ..helpers import CANONICAL, Cli
from ..pg_server import PgDatabase


def use_postgres(workspace: Path, env: str = "AGENTOS_PG_DSN") -> None:
    """Point the workspace's scripted profile at the database in `env`."""
    doc = yaml.safe_load((workspace / "agentos.yaml").read_text())
    doc["profiles"]["scripted"]["event_store"] = {"kind": "postgres", "dsn_env": env, "pool_max": 2}
    (workspace / "agentos.yaml").write_text(yaml.safe_dump(doc))


def test_the_canonical_request_is_stored_in_postgres_and_replays_as_from_jsonl(
        workspace: Path, pg_db: PgDatabase, monkeypatch: pytest.MonkeyPatch) -> None:
    jsonl = Runtime.from_workspace(workspace)
    ref = jsonl.handle_user_request(CANONICAL)
    assert isinstance(ref, Ok), ref
    ref_bytes = (workspace / "sessions" / "s0001" / ".events.jsonl").read_bytes()

    use_postgres(workspace)
    monkeypatch.setenv("AGENTOS_PG_DSN", pg_db.student(f"rt_{pg_db.name}"))
    rt = Runtime.from_workspace(workspace)
    assert isinstance(rt.store, PostgresEventStore)
    result = rt.handle_user_request(CANONICAL)
    assert isinstance(result, Ok), result
    sid = result.value.session_id
    assert sid == "s0001", "ids are counted per store: the database had no session yet"
    stored = b"".join(rt.store.lines(sid))
    assert stored == ref_bytes, "the same request stores the same bytes in either store"
    assert rt.replay(sid) == jsonl.replay("s0001")
    assert rt.replay_summary(sid) == jsonl.replay_summary("s0001")


def test_an_unset_dsn_variable_is_a_contract_error_naming_it(workspace: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    use_postgres(workspace, "AGENTOS_TEST_UNSET_DSN")
    monkeypatch.delenv("AGENTOS_TEST_UNSET_DSN", raising=False)
    with pytest.raises(ContractError) as err:
        Runtime.from_workspace(workspace)
    (problem,) = err.value.problems
    assert problem.field == "profiles.scripted.event_store.dsn_env"
    assert "AGENTOS_TEST_UNSET_DSN is not set" in problem.message


def test_validate_names_an_unset_dsn_variable(workspace: Path, cli: Cli,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """As for api_key_env: a problem for the profile that would run, a warning for the others."""
    use_postgres(workspace, "AGENTOS_TEST_UNSET_DSN")
    monkeypatch.delenv("AGENTOS_TEST_UNSET_DSN", raising=False)
    code, out, err = cli("--workspace", workspace, "validate", "--profile", "scripted")
    assert code == 1
    assert "profiles.scripted.event_store.dsn_env" in out + err
    assert "AGENTOS_TEST_UNSET_DSN is not set" in out + err
    profiles = yaml.safe_load((workspace / "agentos.yaml").read_text())["profiles"]
    others = [p for p in profiles if p != "scripted"]
    code, out, err = cli("--workspace", workspace, "validate", "--profile", others[0])
    assert "AGENTOS_TEST_UNSET_DSN is not set" in out + err


def test_amend_and_fork_work_on_the_postgres_store(workspace: Path, pg_db: PgDatabase,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    from agentos_kernel.runs.fork import fork
    from agentos_kernel.store.integrity import verify_session

    use_postgres(workspace)
    monkeypatch.setenv("AGENTOS_PG_DSN", pg_db.student(f"amend_{pg_db.name}"))
    rt = Runtime.from_workspace(workspace)
    assert isinstance(rt.handle_user_request(CANONICAL), Ok)
    target = rt.events("s0001")[3].id
    amended = rt.amend("s0001", target, "actor", "planner", "mislabelled")
    assert rt.store.tail("s0001") == amended
    assert rt.replay("s0001").amendments, "replay folds the amendment from the rows"
    assert verify_session(rt.store, "s0001").ok, "the chain continues across the amendment"
    forked = fork(rt, "s0001", 10)
    assert isinstance(forked, Ok), forked
    assert verify_session(rt.store, forked.value.session_id).ok
    assert rt.store.sessions() == ["s0001", forked.value.session_id]


def test_a_wrong_password_is_one_line_naming_it(workspace: Path, pg_db: PgDatabase, cli: Cli,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    use_postgres(workspace)
    dsn = pg_db.student(f"pw_{pg_db.name}")
    monkeypatch.setenv("AGENTOS_PG_DSN", dsn.replace("@127.0.0.1", "x@127.0.0.1"))
    code, _, err = cli("--workspace", workspace, "run", CANONICAL)
    assert code == 2
    assert err.startswith("agentos: error: postgres: OperationalError:")
    assert "password authentication failed" in err and err.count("\n") == 1

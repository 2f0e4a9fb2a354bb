"""Class-day defect (issue 22): `audit` and `verify` take a whole PostgreSQL store,
`postgres:ENV/*`: every owner's sessions the connecting role may read (an instructor: the
class), each named `postgres:ENV/OWNER/ID`; a student's role reads only its own."""

from __future__ import annotations

import pytest

from ..helpers import REPO, Cli
from ..pg_server import PgDatabase

WHOLE = "postgres:AGENTOS_PG_DSN/*"


def test_audit_and_verify_read_every_owner_of_the_store(pg_db: PgDatabase, cli: Cli,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    names = [f"ann_{pg_db.name}", f"ben_{pg_db.name}"]
    for name in names:
        monkeypatch.setenv("AGENTOS_PG_DSN", pg_db.student(name))
        copied = cli("store", "copy", REPO / "sessions", "postgres:AGENTOS_PG_DSN", "--session", "example")
        assert copied[0] == 0, copied
    code, out, err = cli("verify", WHOLE)  # a student's role: only its own rows
    assert code == 0, err
    assert f"postgres:AGENTOS_PG_DSN/{names[1]}/example" in out and names[0] not in out
    monkeypatch.setenv("AGENTOS_PG_DSN", pg_db.instructor(f"prof_{pg_db.name}"))
    code, out, err = cli("verify", WHOLE)
    assert code == 0, err
    assert [line.split(":")[1] for line in out.splitlines() if "/example" in line] == \
        [f"AGENTOS_PG_DSN/{n}/example" for n in names]
    assert out.rstrip().endswith("2 of 2 logs verify")
    code, out, err = cli("audit", WHOLE)
    assert code == 0, err
    assert [line.split(":")[1] for line in out.splitlines() if line.startswith("postgres:")] == \
        [f"AGENTOS_PG_DSN/{n}/example" for n in names]
    assert out.rstrip().endswith("2 logs audited: 2 clean, 0 with gaps")
    code, out, err = cli("audit", WHOLE, "--json")
    assert code == 0 and out.count('"ok": true') == 3


def test_an_empty_store_and_a_bad_target_are_one_line(pg_db: PgDatabase, cli: Cli,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENTOS_PG_DSN", pg_db.instructor(f"prof_{pg_db.name}"))
    for command in ("verify", "audit"):
        code, out, err = cli(command, WHOLE)
        assert (code, out, err) == (2, "", f"agentos: error: {WHOLE}: holds no session\n")
    monkeypatch.delenv("AGENTOS_TEST_NO_DSN", raising=False)
    for command in ("verify", "audit"):
        code, _, err = cli(command, "postgres:AGENTOS_TEST_NO_DSN/*")
        assert code == 2 and "AGENTOS_TEST_NO_DSN is not set" in err and err.count("\n") == 1

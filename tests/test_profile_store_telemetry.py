"""The profile's `event_store` and `telemetry` (issue 14): optional properties of
runtime_profile_v1 (docs/architecture.md, "Schema evolution"), read into frozen values;
a bad entry is refused naming the field."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from agentos_kernel import ContractError, Runtime
from agentos_kernel.config import EventStoreConfig, TelemetryConfig


def _profile(workspace: Path, **extra: object) -> None:
    doc = yaml.safe_load((workspace / "agentos.yaml").read_text())
    doc["profiles"]["scripted"].update(extra)
    (workspace / "agentos.yaml").write_text(yaml.safe_dump(doc))


def test_without_them_a_profile_stores_jsonl_and_exports_nothing(workspace: Path) -> None:
    profile = Runtime.from_workspace(workspace).profile
    assert profile.event_store == EventStoreConfig("jsonl", None, 4)
    assert profile.telemetry is None


def test_both_are_read_into_their_values(workspace: Path) -> None:
    _profile(workspace, event_store={"kind": "postgres", "dsn_env": "AGENTOS_PG_DSN", "pool_max": 8},
             telemetry={"otlp_endpoint": "http://127.0.0.1:4318/v1/traces"})
    from agentos_kernel.config import load_config
    from agentos_kernel.schemas.registry import SchemaRegistry
    config = load_config(workspace / "agentos.yaml", SchemaRegistry.load(workspace / "schemas"))
    profile = config.profile("scripted")
    assert profile.event_store == EventStoreConfig("postgres", "AGENTOS_PG_DSN", 8)
    assert profile.telemetry == TelemetryConfig("http://127.0.0.1:4318/v1/traces", "agentos-kernel")


@pytest.mark.parametrize(("extra", "field"), [
    ({"event_store": {"kind": "postgres"}}, "profiles.scripted.event_store"),
    ({"event_store": {"kind": "sqlite"}}, "profiles.scripted.event_store.kind"),
    ({"event_store": {"kind": "jsonl", "dsn_env": "X"}}, "profiles.scripted.event_store"),
    ({"event_store": {"kind": "postgres", "dsn_env": "postgresql://u:pw@h/db"}},
     "profiles.scripted.event_store.dsn_env"),
    ({"telemetry": {"otlp_endpoint": "grpc://collector"}}, "profiles.scripted.telemetry.otlp_endpoint"),
    ({"telemetry": {}}, "profiles.scripted.telemetry"),
], ids=["postgres-without-dsn_env", "unknown-kind", "jsonl-with-dsn", "a-dsn-not-a-variable",
        "not-http", "no-endpoint"])
def test_a_bad_entry_is_refused_naming_the_field(workspace: Path, extra: dict[str, object],
                                                 field: str) -> None:
    _profile(workspace, **extra)
    with pytest.raises(ContractError) as err:
        Runtime.from_workspace(workspace)
    assert any(p.field == field for p in err.value.problems), err.value

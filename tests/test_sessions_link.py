"""Issue 20: a workspace's `sessions/` that is a symbolic link leading out of the workspace made
every run write outside it, silently. The JSONL store refuses it (and reads no session whose
folder leads out) unless the profile says `event_store: {kind: jsonl, sessions_may_link_out:
true}`, an optional property of runtime_profile_v1. A link that stays inside is fine."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from agentos_kernel import ContractError, Runtime
from agentos_kernel.profile import EventStoreConfig, load_config
from agentos_kernel.schemas import SchemaRegistry


def _event_store(workspace: Path, **store: object) -> None:
    doc = yaml.safe_load((workspace / "agentos.yaml").read_text())
    doc["profiles"]["scripted"]["event_store"] = store
    (workspace / "agentos.yaml").write_text(yaml.safe_dump(doc))


def test_the_opt_in_is_an_optional_property_of_a_jsonl_store(workspace: Path) -> None:
    _event_store(workspace, kind="jsonl", sessions_may_link_out=True)
    config = load_config(workspace / "agentos.yaml", SchemaRegistry.load(workspace / "schemas"))
    assert config.profile("scripted").event_store == EventStoreConfig("jsonl", None, 4, True)
    assert EventStoreConfig().sessions_may_link_out is False


@pytest.mark.parametrize("store", [{"kind": "jsonl", "sessions_may_link_out": "yes"},
                                   {"kind": "postgres", "dsn_env": "AGENTOS_PG_DSN",
                                    "sessions_may_link_out": True}], ids=["not-a-boolean", "postgres"])
def test_a_bad_opt_in_is_refused_naming_the_field(workspace: Path, store: dict[str, object]) -> None:
    _event_store(workspace, **store)
    with pytest.raises(ContractError) as err:
        Runtime.from_workspace(workspace)
    assert any(p.field.startswith("profiles.scripted.event_store") for p in err.value.problems), err.value

"""A schema's inlined form (`resolved`, sent to models with every role call) is built once
per registry and handed out as a fresh copy each time (issue 12). Counts work, not time."""

from __future__ import annotations

import pytest

from agentos_kernel import Runtime
from agentos_kernel.schemas.registry import SchemaRegistry


def test_resolved_is_inlined_once_and_each_caller_gets_its_own_copy(
        runtime: Runtime, monkeypatch: pytest.MonkeyPatch) -> None:
    schemas = runtime.schemas
    calls: list[str] = []
    real = SchemaRegistry._inlined

    def counting(self: SchemaRegistry, schema_id: str) -> dict:
        calls.append(schema_id)
        return real(self, schema_id)

    monkeypatch.setattr(SchemaRegistry, "_inlined", counting)
    first = schemas.resolved("review_aggregate_v1")
    first["properties"] = "changed by a caller"
    second = schemas.resolved("review_aggregate_v1")
    assert calls == ["review_aggregate_v1"]
    assert second == real(schemas, "review_aggregate_v1") and second["properties"] != "changed by a caller"
    with pytest.raises(KeyError, match="no_such_v1"):
        schemas.resolved("no_such_v1")

"""A loaded registry whose files are all self-contained builds no jsonschema-rs Registry of
every schema: a schema without `$ref` compiles without one, the others with one of the
schemas their `$ref`s reach, built on first use (a fresh kernel's first `%agent`, issue 24).
Differential: on generated sets of schema files, every id compiles (or fails to) and judges
every generated payload exactly as with the Registry of all the schemas, built at load as
before (which must not fail for any set the lazy form accepts)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema_rs
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from agentos_kernel import SchemaRegistry
from agentos_kernel.errors import ContractError
from agentos_kernel.schemas import registry as registry_module
from agentos_kernel.workspace import reference_dir

IDS = ["a_v1", "b_v1", "c.v1", "d-v1"]
KEYS = ["x", "y", "z"]

payloads = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5) | st.sampled_from(["", "x", "ab", "hello"]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(KEYS), inner, max_size=3),
    max_leaves=8)


def _refs() -> st.SearchStrategy[str]:
    return st.sampled_from(IDS) | st.sampled_from([f"{i}#/$defs/n" for i in IDS]) \
        | st.sampled_from(["#/$defs/n", "#", "a_v1#/properties/x", "b_v1#/nope", "a_v1#here"])


def _subschemas(depth: int) -> st.SearchStrategy[dict[str, Any]]:
    leaf = st.one_of(
        st.fixed_dictionaries({"type": st.sampled_from(["string", "integer", "object", "array", "null"])}),
        st.fixed_dictionaries({"$ref": _refs()}),
        st.fixed_dictionaries({"enum": st.lists(payloads, min_size=1, max_size=3)}),
        st.fixed_dictionaries({"minLength": st.integers(0, 3)}),
        st.fixed_dictionaries({"pattern": st.sampled_from(["^a", "b$", "[0-9]"])}),
        st.fixed_dictionaries({"$anchor": st.just("here")}),
        st.fixed_dictionaries({"$id": st.sampled_from(IDS)}),  # an embedded resource: not contained
        st.fixed_dictionaries({"$dynamicRef": st.just("#here")}),
    )
    if depth == 0:
        return leaf
    sub = _subschemas(depth - 1)
    return st.one_of(
        leaf,
        st.fixed_dictionaries({"properties": st.dictionaries(st.sampled_from(KEYS), sub, max_size=2)},
                              optional={"required": st.lists(st.sampled_from(KEYS), max_size=2, unique=True),
                                        "additionalProperties": st.booleans()}),
        st.fixed_dictionaries({"items": sub}),
        st.fixed_dictionaries({"anyOf": st.lists(sub, min_size=1, max_size=2)}),
        st.fixed_dictionaries({"$defs": st.fixed_dictionaries({"n": sub})}),
    )


schema_sets = st.dictionaries(st.sampled_from(IDS), _subschemas(2), min_size=1, max_size=4)


def _outcome(reg: SchemaRegistry, sid: str, cases: list[Any]) -> Any:
    try:
        return [[(v.path, v.message) for v in reg.violations(p, sid)] for p in cases]
    except (ValueError, jsonschema_rs.ValidationError, jsonschema_rs.ReferencingError) as exc:
        return (type(exc).__name__, str(exc))


def _write(root: Path, docs: dict[str, dict[str, Any]]) -> None:
    for old in root.glob("*.json"):
        old.unlink()
    for sid, doc in docs.items():
        (root / f"{sid}.json").write_text(json.dumps({"$id": sid, **doc}))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(docs=schema_sets, cases=st.lists(payloads, min_size=1, max_size=4))
def test_the_lazy_registry_judges_as_the_full_one(tmp_path: Path, docs: dict[str, dict[str, Any]],
                                                  cases: list[Any]) -> None:
    _write(tmp_path, docs)
    try:
        lazy = SchemaRegistry.load(tmp_path)
    except ContractError:
        return  # refused at load, before any Registry: the same either way
    full = SchemaRegistry(lazy._schemas, lazy._files)  # the Registry of every schema, as before
    event("lazy" if lazy._refs is not None else "full")
    for sid in lazy.ids():
        assert _outcome(lazy, sid, cases) == _outcome(full, sid, cases), sid


def test_only_the_schemas_a_ref_reaches_are_registered(monkeypatch: pytest.MonkeyPatch) -> None:
    built: list[list[str]] = []
    real = jsonschema_rs.Registry

    def spy(resources: list[tuple[str, Any]]) -> Any:
        built.append(sorted(uri for uri, _ in resources))
        return real(resources)

    monkeypatch.setattr(registry_module.jsonschema_rs, "Registry", spy)
    reg = SchemaRegistry.load(reference_dir() / "schemas")
    assert len(reg.ids()) > 60 and built == []  # nothing built at load
    assert reg.violations({"text": "hi"}, "tool_echo_in_v1") == []  # no $ref: no Registry
    assert built == []
    assert reg.violations({"schema_version": "v2"}, "workspace_config_v1")  # $ref -> runtime_profile_v1
    # only what its own $refs reach (delete-the-feature: one Registry of all 13 reached before)
    assert built == [["runtime_profile_v1", "workspace_config_v1"]]
    reg.violations({}, "tool_write_file_in_v1")  # its own set: one more Registry
    assert built[1:] == [["tool_write_file_in_v1", "write_claim_v1"]]
    reg.violations({"schema_version": "v2"}, "workspace_config_v1")  # compiled once: nothing new
    assert len(built) == 2


def test_an_embedded_resource_keeps_the_full_registry(tmp_path: Path) -> None:
    # b_v1 embeds a resource at the id "c_v1", which a $ref to c_v1 resolves to in the full
    # Registry (the file c_v1 is a string schema; the embedded one takes anything)
    _write(tmp_path, {"a_v1": {"$ref": "c_v1"}, "b_v1": {"$defs": {"e": {"$id": "c_v1"}}},
                      "c_v1": {"type": "string"}})
    reg = SchemaRegistry.load(tmp_path)
    full = SchemaRegistry(reg._schemas, reg._files)
    assert reg.violations(5, "a_v1") == full.violations(5, "a_v1") == []


@given(name=st.lists(st.sampled_from(["a", ".", "/", "b.c", ".."]), max_size=6).map(
    lambda parts: "".join(parts) + ".json"))
def test_a_schema_files_stem_is_paths(name: str) -> None:
    # load_one names a file by its path as listed and takes the stem from the string
    from agentos_kernel.schemas.loading import _stem

    assert _stem(name) == Path(name).stem


def test_an_escaped_key_keeps_the_full_registry(tmp_path: Path) -> None:
    # the embedded resource's `$id` written as "\u0024id": the bytes hold no second "$id"
    _write(tmp_path, {"a_v1": {"$ref": "c_v1"}, "c_v1": {"type": "string"}})
    (tmp_path / "b_v1.json").write_text('{"$id": "b_v1", "$defs": {"e": {"\\u0024id": "c_v1"}}}')
    reg = SchemaRegistry.load(tmp_path)
    assert reg._refs is None
    assert reg.violations(5, "a_v1") == SchemaRegistry(reg._schemas, reg._files).violations(5, "a_v1") == []

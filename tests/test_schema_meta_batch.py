"""SchemaRegistry.load meta-checks a workspace's draft 2020-12 schemas in one call
(`loading.all_meta_valid`) instead of one call each (issue 24, a fresh kernel's load); when
any file has a problem, or any schema fails that call, the files are loaded again each on
its own, as before, so every problem is the one it always was. Differential: the one call
says yes exactly when every per-file check does; a workspace with bad files gets the
problems of the per-file load. Counts, never times."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentos_kernel import SchemaRegistry
from agentos_kernel.errors import ContractError
from agentos_kernel.schemas import loading, registry
from agentos_kernel.workspace import reference_dir

GOOD: list[dict[str, Any]] = [
    {"type": "object", "properties": {"a": {"type": "string", "pattern": "^[a-z]+$"}}},
    {"type": "array", "items": {"enum": [1, "x", None]}, "minItems": 1},
    {"$schema": loading.DRAFT_2020_12, "$defs": {"n": {"type": "integer"}}, "$ref": "#/$defs/n"},
    {"anyOf": [{"type": "null"}, {"format": "date-time", "type": "string"}]},
    {},
]
BAD: list[dict[str, Any]] = [
    {"type": 5},                                          # not a type name
    {"pattern": "("},                                     # not a regex (a format the check asserts)
    {"properties": {"a": {"pattern": "[z-a]"}}},          # the same, nested
    {"$defs": {"n": {"$id": "http://[bad"}}},              # an $id that is no URI reference
    {"minItems": -1},
    {"required": "a"},
    {"additionalProperties": 3},
]


@settings(max_examples=400, deadline=None)
@given(docs=st.lists(st.sampled_from(GOOD + BAD), max_size=6))
def test_one_call_passes_exactly_when_every_file_passes(docs: list[dict[str, Any]]) -> None:
    assert loading.all_meta_valid(docs) == all(loading.meta_problem(d) is None for d in docs)


def test_each_bad_schema_fails_on_its_own() -> None:
    for doc in BAD:
        assert loading.meta_problem(doc) is not None, doc
        assert not loading.all_meta_valid([*GOOD, doc])


def _workspace_schemas(tmp_path: Path) -> Path:
    root = tmp_path / "schemas"
    shutil.copytree(reference_dir() / "schemas", root)
    return root


def _refused_as_before(root: Path) -> list[str]:
    """The files the load names, once it is asserted to raise exactly the problems of the
    per-file load (the form before the one call)."""
    expected = registry._parse_all(loading.read_files([root]), None)[2]
    loading.forget_loaded()
    with pytest.raises(ContractError) as exc:
        SchemaRegistry.load(root)
    assert exc.value.problems == expected
    return [p.file for p in expected]


@pytest.mark.parametrize("bad", BAD)
def test_a_bad_schema_among_good_ones_is_named_as_before(tmp_path: Path, bad: dict[str, Any]) -> None:
    root = _workspace_schemas(tmp_path)
    (root / "zz_v1.json").write_text(json.dumps({**bad, "$id": "zz_v1"}))
    (root / "aa_v1.json").write_text("{not json")  # a problem of another kind in the same load
    assert _refused_as_before(root) == [str(root / "aa_v1.json"), str(root / "zz_v1.json")]


def test_a_bad_schema_and_its_namesake_are_named_as_before(tmp_path: Path) -> None:
    # the per-file load leaves a schema that fails its check out, so a second file with its
    # id is no duplicate: the problems depend on the order, and stay the per-file load's
    root = _workspace_schemas(tmp_path)
    (root / "a").mkdir()
    (root / "b").mkdir()
    (root / "a" / "twin_v1.json").write_text(json.dumps({"$id": "twin_v1", "type": 5}))
    (root / "b" / "twin_v1.json").write_text(json.dumps({"$id": "twin_v1", "type": "string"}))
    assert _refused_as_before(root) == [str(root / "a" / "twin_v1.json")]


def test_other_drafts_are_checked_on_their_own(tmp_path: Path) -> None:
    root = _workspace_schemas(tmp_path)
    (root / "old_v1.json").write_text(json.dumps(
        {"$schema": "http://json-schema.org/draft-07/schema#", "$id": "old_v1", "type": 5}))
    assert _refused_as_before(root) == [str(root / "old_v1.json")]


def test_the_reference_schemas_are_meta_checked_in_one_call(monkeypatch: pytest.MonkeyPatch) -> None:
    # delete-the-feature: with a call per file again, meta_problem runs 69 times here
    calls: list[int] = []
    real = loading.meta_problem
    monkeypatch.setattr(loading, "meta_problem", lambda doc: calls.append(1) or real(doc))
    loading.forget_loaded()
    loaded = SchemaRegistry.load(reference_dir() / "schemas")
    assert calls == [] and "workspace_config_v1" in loaded


"""SchemaRegistry.load meta-checks a workspace's draft 2020-12 schemas in one call
(`loading.all_meta_valid`) instead of one call each (issue 24, a fresh kernel's load); when
any file has a problem, or any schema fails that call, the files are loaded again each on
its own, as before, so every problem is the one it always was. Differential: the one call
says yes exactly when every per-file check does; a workspace with bad files gets the
problems of the per-file load. Counts, never times."""

from __future__ import annotations

import json
import shutil
import sys
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
    expected = registry._parse_all(loading.read_files([root]), None).problems
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



def _old_load_one(path: str, raw: bytes) -> Any:
    """load_one's reading as it was: decode, newlines, then orjson or json on the text."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return ("problem", loading.decode_problem(exc))
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    try:
        if b"0" * 19 not in raw.translate(loading._DIGITS_ONLY):
            try:
                return ("doc", repr(loading.orjson.loads(raw)))
            except loading.orjson.JSONDecodeError:
                pass
        return ("doc", repr(json.loads(text)))
    except json.JSONDecodeError as exc:
        return ("problem", f"not valid JSON: {exc}")


_PIECES = [b'{"$id": "x_v1"', b', "type": "string"', b', "minimum": 1234567890123456789012', b', "a": NaN',
           b', "b": "\\ud800"', b', "c": "\xc3\xa9"', b"\xff", b"\xed\xa0\x80", b"\xc0\xaf", b"\xef\xbb\xbf",
           b"\r\n", b"\r", b"}", b" ", b'"', b", 1e400", b"[", b"]"]


@settings(max_examples=1500, deadline=None)
@given(raw=st.lists(st.sampled_from(_PIECES), max_size=8).map(b"".join) | st.binary(max_size=24))
def test_a_file_is_read_as_before_without_decoding_what_orjson_reads(raw: bytes) -> None:
    schemas: dict[str, Any] = {}
    problem = loading.load_one("x_v1.json", raw, schemas, {}, [])
    old = _old_load_one("x_v1.json", raw)
    if old[0] == "problem":
        assert problem is not None and problem.message == old[1], raw
    else:  # read as before: a problem now can only be the document's ($id, shape, meta-check)
        assert problem is None or not problem.message.startswith(("not valid JSON", "not UTF-8")), raw
        if problem is None:
            assert repr(schemas["x_v1"]) == old[1], raw


def _decodes(read: Any) -> int:
    """How many times `read()` calls a bytes object's `decode` (a C call the profiler sees)."""
    seen: list[str] = []
    sys.setprofile(lambda _f, event, arg: seen.append(arg.__qualname__)
                   if event == "c_call" and getattr(arg, "__qualname__", "") == "bytes.decode" else None)
    try:
        read()
    finally:
        sys.setprofile(None)
    return len(seen)


def test_a_file_orjson_reads_is_not_decoded() -> None:
    # delete-the-feature: decoding every file first, as before, decodes this one
    raw = (reference_dir() / "schemas" / "plan_v1.json").read_bytes()
    schemas: dict[str, Any] = {}
    assert _decodes(lambda: loading.load_one("schemas/plan_v1.json", raw, schemas, {}, [])) == 0
    assert "plan_v1" in schemas
    bad: list[Any] = []  # what orjson refuses is decoded, and named as before
    assert _decodes(lambda: bad.append(loading.load_one("plan_v1.json", raw + b"\xff", {}, {}, []))) == 1
    assert bad[0].message.startswith("not UTF-8 text: byte 0xff")

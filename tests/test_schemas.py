"""L7: the schema registry loads every schema once, checks every boundary, names what is
wrong, and never passes an unknown id; the spec's v1 contracts are what the spec says."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest

from agentos_kernel import ContractError, Err, ErrorCode, InvariantViolation, Ok, Runtime, SchemaRegistry
from agentos_kernel.store.recorder import EVENT_SCHEMAS
from agentos_kernel.workspace import reference_dir

# The spec's "Shared JSON Schemas": id -> its required fields, exactly.
SPEC_REQUIRED = {
    "completion_request_v1": ["messages", "model", "schema_version"],
    "completion_response_v1": ["text", "tool_calls", "finish_reason", "usage", "model", "schema_version"],
    "lead_directive_v1": ["intent", "constraints", "schema_version"],
    "plan_v1": ["steps", "risks", "needs_advisor", "schema_version"],
    "worker_report_v1": ["output", "steps_completed", "schema_version"],
    "review_result_v1": ["verdict", "feedback", "schema_version"],
    "skill_frontmatter_v1": ["name", "description"],
    "write_claim_v1": ["who", "why", "expected_hash", "schema_version"],
}


@pytest.fixture(scope="module")
def reg() -> SchemaRegistry:
    return SchemaRegistry.load(reference_dir() / "schemas")


@pytest.mark.parametrize("sid", sorted(SPEC_REQUIRED))
def test_spec_schemas_require_what_the_spec_requires(reg: SchemaRegistry, sid: str) -> None:
    schema = reg.schema(sid)
    assert schema["$id"] == sid
    assert sorted(schema["required"]) == sorted(SPEC_REQUIRED[sid])
    if "schema_version" in schema.get("properties", {}):
        assert schema["properties"]["schema_version"] == {"const": "v1"}


def test_spec_enums_and_bounds(reg: SchemaRegistry) -> None:
    resp = reg.schema("completion_response_v1")["properties"]
    assert resp["finish_reason"]["enum"] == ["stop", "tool_use", "max_tokens", "safety"]
    assert sorted(resp["usage"]["required"]) == ["input_tokens", "output_tokens"]
    assert reg.schema("review_result_v1")["properties"]["verdict"]["enum"] == ["pass", "fail"]
    assert reg.schema("plan_v1")["properties"]["steps"]["minItems"] == 1
    assert reg.schema("lead_directive_v1")["properties"]["intent"]["minLength"] == 1


def test_every_event_type_routes_to_a_loaded_schema(reg: SchemaRegistry) -> None:
    missing = {t: s for t, s in EVENT_SCHEMAS.items() if s not in reg}
    assert missing == {}


def test_every_schema_file_is_named_by_its_id(reg: SchemaRegistry) -> None:
    for sid in reg.ids():
        assert reg.file(sid).stem == sid
        assert json.loads(reg.file(sid).read_text())["$id"] == sid


def test_validate_passes_a_valid_payload_through(reg: SchemaRegistry) -> None:
    review = {"verdict": "pass", "feedback": "fine", "schema_version": "v1"}
    assert reg.validate(review, "review_result_v1") == Ok(review)


@pytest.mark.parametrize("payload, pointer", [
    ({"verdict": "maybe", "feedback": "x", "schema_version": "v1"}, "/verdict"),
    ({"verdict": "pass", "feedback": "x", "schema_version": "v2"}, "/schema_version"),
    ({"verdict": "pass", "schema_version": "v1"}, "/"),
    ([], "/"),
])
def test_an_invalid_payload_is_schema_invalid_naming_id_and_pointer(reg: SchemaRegistry, payload: object,
                                                                    pointer: str) -> None:
    got = reg.validate(payload, "review_result_v1")
    assert isinstance(got, Err) and got.error.code == ErrorCode.SCHEMA_INVALID
    assert got.error.message.startswith(f"review_result_v1: {pointer}: ")


def test_violations_lists_every_problem_sorted(reg: SchemaRegistry) -> None:
    found = reg.violations({"steps": [{"id": 1}], "risks": "none", "schema_version": "v1"}, "plan_v1")
    paths = [v.path for v in found]
    assert paths == sorted(paths)
    assert {"/", "/risks", "/steps/0", "/steps/0/id"} <= set(paths)


def test_an_unknown_id_never_passes(reg: SchemaRegistry) -> None:
    got = reg.validate({}, "plan_v9")
    assert isinstance(got, Err) and got.error.code == ErrorCode.SCHEMA_NOT_FOUND
    assert "plan_v9" in got.error.message
    with pytest.raises(KeyError, match="plan_v9"):
        reg.schema("plan_v9")


def test_refs_resolve_across_files_and_inline_for_models(reg: SchemaRegistry) -> None:
    args = {"path": "a.md", "content": "x", "claim": {"who": "w", "why": "y", "expected_hash": "",
                                                      "schema_version": "v1"}}
    assert isinstance(reg.validate(args, "tool_write_file_in_v1"), Ok)
    bad = {**args, "claim": {"who": "w"}}
    assert isinstance(reg.validate(bad, "tool_write_file_in_v1"), Err)
    inlined = reg.resolved("tool_write_file_in_v1")
    assert "$ref" not in json.dumps(inlined) and "$id" not in json.dumps(inlined)
    assert sorted(inlined["properties"]["claim"]["required"]) == sorted(SPEC_REQUIRED["write_claim_v1"])


# -- loading fails closed and names each bad file --------------------------------------------


def _write(root: Path, name: str, doc: object) -> None:
    (root / name).write_text(doc if isinstance(doc, str) else json.dumps(doc))


def _ok(sid: str) -> dict:
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": sid, "type": "object"}


@pytest.mark.parametrize("name, doc, field, words", [
    ("a_v1.json", "{not json", "-", "not valid JSON"),
    ("a_v1.json", ["a", "list"], "-", "must be a JSON object"),
    ("a_v1.json", _ok("b_v1"), "$id", "must equal the file name 'a_v1'"),
    ("a_v1.json", {**_ok("a_v1"), "type": 5}, "-", "not a valid draft 2020-12 schema"),
    ("a_v1.json", {**_ok("a_v1"), "properties": {"x": {"$ref": "gone_v1"}}}, "$ref", "'gone_v1'"),
])
def test_a_bad_schema_file_is_a_contract_error_naming_it(tmp_path: Path, name: str, doc: object,
                                                         field: str, words: str) -> None:
    _write(tmp_path, "fine_v1.json", _ok("fine_v1"))
    _write(tmp_path, name, doc)
    with pytest.raises(ContractError) as caught:
        SchemaRegistry.load(tmp_path)
    (problem,) = caught.value.problems
    assert problem.file.endswith(name) and problem.field == field and words in problem.message


def test_duplicate_ids_and_every_problem_are_reported(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    _write(tmp_path, "x_v1.json", _ok("x_v1"))
    _write(tmp_path / "sub", "x_v1.json", _ok("x_v1"))
    _write(tmp_path, "y_v1.json", "nope")
    with pytest.raises(ContractError) as caught:
        SchemaRegistry.load(tmp_path)
    assert sorted((Path(p.file).name, p.field) for p in caught.value.problems) == [
        ("x_v1.json", "$id"), ("y_v1.json", "-")]


def test_the_log_refuses_a_payload_that_breaks_its_event_schema(runtime: Runtime) -> None:
    session = runtime.open_session("inv")
    try:
        with pytest.raises(InvariantViolation, match=r"session\.close payload violates"):
            session.log.append("session.close", "system", {"ok": "yes"})
        with pytest.raises(InvariantViolation, match="no payload schema"):
            session.log.append("made.up", "system", {})
    finally:
        session.log.close()
    assert not runtime.store.exists("inv"), "nothing may be appended after a refused payload"


def _one(tmp_path: Path, name: str, text: str) -> Path:
    (tmp_path / f"{name}.json").write_text(text, encoding="utf-8")
    return tmp_path


def test_an_integer_past_64_bits_is_read_exactly(tmp_path: Path) -> None:
    # orjson reads such an integer as a float; the loader gives these files to json.
    big = 2**70 + 1
    _one(tmp_path, "big_v1", '{"$id": "big_v1", "type": "integer", "maximum": ' + f'{big}}}')
    reg = SchemaRegistry.load(tmp_path)
    assert reg.schema("big_v1")["maximum"] == big and type(reg.schema("big_v1")["maximum"]) is int


def test_what_orjson_refuses_is_read_or_refused_as_json_does(tmp_path: Path) -> None:
    _one(tmp_path, "nan_v1", '{"$id": "nan_v1", "type": "number", "default": NaN}')
    assert math.isnan(SchemaRegistry.load(tmp_path).schema("nan_v1")["default"])
    _one(tmp_path, "nan_v1", '\ufeff{"$id": "nan_v1"}')
    with pytest.raises(ContractError, match="Unexpected UTF-8 BOM"):
        SchemaRegistry.load(tmp_path)


def test_an_escaped_ref_key_to_a_missing_id_is_named(tmp_path: Path) -> None:
    # `"\u0024ref"` is the key `$ref`: a file is walked for refs when it may hold either.
    _one(tmp_path, "a_v1", '{"$id": "a_v1", "properties": {"x": {"\\u0024ref": "gone_v1"}}}')
    with pytest.raises(ContractError, match="refers to 'gone_v1', which is not loaded"):
        SchemaRegistry.load(tmp_path)


def test_a_directory_named_like_a_schema_is_named_as_open_names_it(tmp_path: Path) -> None:
    (tmp_path / "dir_v1.json").mkdir()
    with pytest.raises(ContractError, match=r"dir_v1.json.*Is a directory: '.*dir_v1.json'"):
        SchemaRegistry.load(tmp_path)


@pytest.mark.parametrize(("schema", "named"), [
    ({"type": "string", "pattern": "("}, '"(" is not a "regex"'),
    ({"patternProperties": {"[": {}}}, '"[" is not a "regex"'),
    ({"properties": {"b": {"$id": "http://[bad"}}}, 'is not a "uri-reference"'),
])
def test_a_schema_that_would_not_compile_is_refused_at_load(tmp_path: Path, schema: dict[str, object],
                                                             named: str) -> None:
    # meta.validate leaves formats unchecked: these passed it and failed only when the
    # validator was first compiled, in a request. Now they fail the load like any bad schema.
    _one(tmp_path, "bad_v1", json.dumps({"$id": "bad_v1", **schema}))
    refused = f"bad_v1.json: -: not a valid draft 2020-12 schema: .*{re.escape(named)}"
    with pytest.raises(ContractError, match=refused):
        SchemaRegistry.load(tmp_path)


def test_an_mcp_schema_that_would_not_compile_is_refused(tmp_path: Path) -> None:
    reg = SchemaRegistry.load(reference_dir() / "schemas")
    with pytest.raises(ContractError, match='not a valid draft 2020-12 schema: "\\(" is not a "regex"'):
        reg.with_schemas({"tool_in_v1": {"type": "string", "pattern": "("}}, "mcp server x")


def test_a_draft_04_bad_nested_id_is_a_contract_error_naming_its_file(tmp_path: Path) -> None:
    # Draft 4's meta-check leaves its `id` unchecked (later drafts' refuse a bad `$id`), so this
    # passed the load's checks and then the jsonschema-rs Registry raised a bare ValueError:
    # a traceback from `agentos validate` and `agentos run`.
    _one(tmp_path, "ok_v1", json.dumps({"$id": "ok_v1", "type": "object",
                                        "properties": {"x": {"$ref": "old_v1"}}}))
    _one(tmp_path, "old_v1", json.dumps({"$schema": "http://json-schema.org/draft-04/schema#",
                                         "$id": "old_v1", "properties": {"a": {"id": "http://[bad"}}}))
    with pytest.raises(ContractError) as got:
        SchemaRegistry.load(tmp_path)
    assert [(Path(p.file).name, p.field) for p in got.value.problems] == [("old_v1.json", "id")]
    assert "Invalid URI reference 'http://[bad'" in str(got.value)

"""The table of shipped schema files (schemas/shipped.py, issue 24): a file whose bytes are a
shipped schema's is loaded without repeating the checks its entry proves, and parsed on
first use; any other is loaded as always. The table is proven here (every entry made by
loading its file with every check and compiling it) and held equal to `schemas/`; and on
generated sets of files (shipped ones exact, edited by a byte, renamed, doubled, mixed with
schemas of the workspace's own) a load with the table gives exactly what a load without it
gives: the ids, each document, each file, the Registry chosen, the problems, the verdicts."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentos_kernel import SchemaRegistry
from agentos_kernel.errors import ContractError
from agentos_kernel.schemas import loading, parsed, shipped, shipped_make
from agentos_kernel.workspace import reference_dir

ROOT = reference_dir() / "schemas"
FILES = {p.name: p for p in sorted(ROOT.rglob("*.json"))}
NAMES = sorted(FILES)


def test_the_table_is_the_shipped_schemas_each_proven() -> None:
    # shipped_make.table loads each file with every check (parse, object, `$id` = stem,
    # meta-check with formats, orjson reading it as json does) and compiles every schema with
    # the Registry of all of them; it raises on any file that fails one
    assert shipped_make.table(ROOT) == shipped.SHIPPED, (
        "schemas/ changed: run `python -m agentos_kernel.schemas.shipped_make`")
    assert shipped_make.source(ROOT) == Path(shipped.__file__).read_text(encoding="utf-8")


@pytest.mark.parametrize("raw", [b'{"$id": "x_v1", "type": "nope"}', b"[]", b'{"$id": "y_v1"}',
                                 b'{"$id": "x_v1", "$schema": "http://example.com/s"}', b"{"])
def test_no_entry_is_made_for_a_file_failing_a_check(raw: bytes) -> None:
    with pytest.raises(ValueError):
        shipped_make.entry("schemas/x_v1.json", raw)


def test_a_shipped_file_is_neither_parsed_nor_checked_at_load(monkeypatch: pytest.MonkeyPatch) -> None:
    # delete-the-feature: without the table every one of the 69 goes through load_one
    checked: list[str] = []
    real = parsed.load_one
    monkeypatch.setattr(parsed, "load_one", lambda path, *a: checked.append(path) or real(path, *a))
    loading.forget_loaded()
    reg = SchemaRegistry.load(ROOT)
    assert checked == [] and len(reg.ids()) == len(NAMES)
    assert sum(isinstance(d, bytes) for d in reg._docs.values()) == len(NAMES)  # none parsed yet
    assert reg.violations({"text": "hi"}, "tool_echo_in_v1") == []
    assert isinstance(reg._docs["tool_echo_in_v1"], dict)  # parsed on first use, once
    assert sum(isinstance(d, bytes) for d in reg._docs.values()) == len(NAMES) - 1


def test_a_changed_byte_or_another_name_is_checked_as_always(tmp_path: Path) -> None:
    raw = FILES["plan_v1.json"].read_bytes()
    (tmp_path / "plan_v1.json").write_bytes(raw.replace(b'"plan_v1"', b'"plan_v2"', 1))
    loading.forget_loaded()
    with pytest.raises(ContractError, match="it must equal the file name 'plan_v1'"):
        SchemaRegistry.load(tmp_path)
    (tmp_path / "plan_v1.json").unlink()
    (tmp_path / "other_v1.json").write_bytes(raw)  # a shipped file's bytes under another name
    with pytest.raises(ContractError, match="it must equal the file name 'other_v1'"):
        SchemaRegistry.load(tmp_path)


OWN = [  # schemas of a workspace's own, some referring to shipped ids, some not loadable
    ("mine_v1", {"type": "object", "properties": {"w": {"$ref": "write_claim_v1"}}}),
    ("loose_v1", {"$ref": "nothere_v1"}),
    ("bad_v1", {"type": "nope"}),
    ("anchored_v1", {"$defs": {"a": {"$anchor": "here", "type": "string"}}}),
    ("plan_v1", {"type": "string"}),  # the same id as a shipped file
]
EDITS = [  # one change each to a shipped file's bytes
    lambda raw: raw + b"\n",
    lambda raw: raw.replace(b'"type"', b'"\\u0074ype"', 1),
    lambda raw: raw.replace(b'"string"', b'"strin"', 1),
    lambda raw: raw.replace(b"{", b'{"$anchor": "x", ', 1),
    lambda raw: raw.replace(b'"$id": "', b'"$id": "z', 1),
]

files_sets = st.fixed_dictionaries({
    "shipped": st.lists(st.sampled_from(NAMES), max_size=8, unique=True),
    "edited": st.lists(st.tuples(st.sampled_from(NAMES), st.integers(0, len(EDITS) - 1)), max_size=2),
    "renamed": st.lists(st.sampled_from(NAMES), max_size=1),
    "doubled": st.lists(st.sampled_from(NAMES), max_size=1),
    "own": st.lists(st.integers(0, len(OWN) - 1), max_size=3, unique=True),
    "check": st.lists(st.sampled_from(NAMES + [sid for sid, _ in OWN]), max_size=3),
})


def _write(root: Path, spec: dict[str, Any]) -> None:
    for name in spec["shipped"]:
        (root / name).write_bytes(FILES[name].read_bytes())
    for name, edit in spec["edited"]:
        (root / name).write_bytes(EDITS[edit](FILES[name].read_bytes()))
    for name in spec["renamed"]:
        (root / ("re_" + name)).write_bytes(FILES[name].read_bytes())
    for name in spec["doubled"]:
        (root / "sub").mkdir(exist_ok=True)
        (root / "sub" / name).write_bytes(FILES[name].read_bytes())
    for i in spec["own"]:
        sid, doc = OWN[i]
        (root / f"{sid}.json").write_text(json.dumps({"$id": sid, **doc}))


def _outcome(root: Path, check: list[str]) -> Any:
    loading.forget_loaded()  # else the second load is the first's registry, kept by its bytes
    try:
        reg = SchemaRegistry.load(root)
    except ContractError as exc:
        return ("refused", [str(p) for p in exc.problems])
    verdicts = {sid: [(v.path, v.message) for v in reg.violations(p, sid)]
                for sid in check if sid in reg for p in ({}, "x", {"id": 1})}
    docs = {sid: reg.schema(sid) for sid in reg.ids()}
    return (reg.ids(), docs, {sid: str(reg.file(sid)) for sid in reg.ids()}, reg._refs is None,
            reg._refs, verdicts, {sid: reg.resolved(sid) for sid in check if sid in reg})


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(spec=files_sets)
def test_a_load_with_the_table_is_a_load_without_it(tmp_path_factory: pytest.TempPathFactory,
                                                     spec: dict[str, Any]) -> None:
    root = tmp_path_factory.mktemp("schemas")
    _write(root, spec)
    with_table = _outcome(root, spec["check"])
    try:
        saved, shipped.SHIPPED = shipped.SHIPPED, {}
        without = _outcome(root, spec["check"])
    finally:
        shipped.SHIPPED = saved
    assert with_table == without

"""agentos.yaml: random fields and types, YAML bombs (billion laughs with anchors and aliases),
`!!python` tags, dates and non-string keys, deep nesting, huge files. Each loads or raises
ContractError naming agentos.yaml and the field or line, one line per problem, within bounded
memory; `agentos run` on it exits 2 with one line, and the sessions already logged in the
workspace are untouched."""

from __future__ import annotations

import copy
import tracemalloc
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from agentos_kernel.config import WorkspaceConfig, load_config
from agentos_kernel.errors import ContractError
from agentos_kernel.schemas.registry import SchemaRegistry
from agentos_kernel.workspace import reference_dir

from . import fuzz, one_line
from .strategies import YAML_TAGS, json_values, nasty_text, yaml_bombs, yaml_deep

SCHEMAS = SchemaRegistry.load(reference_dir() / "schemas")
REFERENCE = yaml.safe_load((reference_dir() / "agentos.yaml").read_text(encoding="utf-8"))
PROFILE_FIELDS = ("provider", "model", "deterministic", "max_retries", "timeout_s", "max_rework",
                  "max_iterations", "max_tool_turns", "compact_after", "temperature", "max_tokens",
                  "api_key_env", "base_url", "prices", "agents", "nonsense")
MAX_PEAK_BYTES = 64 << 20


@st.composite
def mutated_configs(draw: st.DrawFn) -> str:
    """The reference agentos.yaml with a few fields set to random values, dropped or added."""
    doc: dict[str, Any] = copy.deepcopy(REFERENCE)
    for _ in range(draw(st.integers(1, 4))):
        where = draw(st.sampled_from(["top", "profile", "hook", "drop"]))
        value = draw(json_values)
        if where == "top":
            doc[draw(st.sampled_from([*doc, "skill_roots", "mcp_servers", "hooks"]) | nasty_text)] = value
        elif where == "profile" and isinstance(doc.get("profiles"), dict) and doc["profiles"]:
            prof = draw(st.sampled_from(sorted(doc["profiles"])))
            body = doc["profiles"][prof] if isinstance(doc["profiles"][prof], dict) else {}
            doc["profiles"][prof] = {**body, draw(st.sampled_from(PROFILE_FIELDS)): value}
        elif where == "hook":
            hooks = doc.get("hooks") if isinstance(doc.get("hooks"), list) else []
            doc["hooks"] = [*hooks, draw(st.dictionaries(
                st.sampled_from(["event", "handler", "command", "priority", "timeout_s", "id"]),
                json_values | st.sampled_from(["Stop", "a.b:c", "agentos_kernel.hooks.builtin:x"]),
                max_size=4))]
        elif doc:
            doc.pop(draw(st.sampled_from(sorted(doc))))
    return yaml.safe_dump(doc, allow_unicode=True)


@st.composite
def hostile_configs(draw: st.DrawFn) -> str:
    """The reference agentos.yaml with one field replaced by hostile YAML (a bomb, a tag ...)."""
    text = (reference_dir() / "agentos.yaml").read_text(encoding="utf-8")
    anchors, alias = draw(yaml_bombs())
    value = draw(st.sampled_from([alias, *YAML_TAGS]) | yaml_deep(max_depth=150))
    target = draw(st.sampled_from(["default_profile: scripted", "    model: scripted-1",
                                   "schema_version: v1"]))
    indent = target[: len(target) - len(target.lstrip())]
    return anchors + text.replace(target, f"{indent}{target.split(':')[0].strip()}: "
                                                      f"{value}", 1)


def _load(path: Path) -> WorkspaceConfig | ContractError:
    try:
        return load_config(path, SCHEMAS, "agentos.yaml")
    except ContractError as exc:
        return exc


def _check(got: WorkspaceConfig | ContractError) -> None:
    if isinstance(got, ContractError):
        assert got.problems
        for p in got.problems:
            assert p.file == "agentos.yaml" and p.field
            one_line(str(p))
    else:
        assert got.default_profile in got.profiles


@fuzz(120)
@given(text=mutated_configs())
def test_a_mutated_agentos_yaml_loads_or_names_the_field(tmp_path: Path, text: str) -> None:
    (tmp_path / "agentos.yaml").write_text(text, encoding="utf-8")
    _check(_load(tmp_path / "agentos.yaml"))


@fuzz(40)
@given(text=hostile_configs())
def test_bombs_tags_and_odd_types_are_contract_errors_in_bounded_memory(tmp_path: Path, text: str) -> None:
    (tmp_path / "agentos.yaml").write_text(text, encoding="utf-8")
    tracemalloc.start()
    try:
        got = _load(tmp_path / "agentos.yaml")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    _check(got)
    assert peak < MAX_PEAK_BYTES, f"{peak >> 20} MB"


@fuzz(4)
@given(size=st.sampled_from([1_000_000, 3_000_000]))
def test_a_huge_agentos_yaml_is_refused_naming_the_field(tmp_path: Path, size: int) -> None:
    text = (reference_dir() / "agentos.yaml").read_text(encoding="utf-8") + f"padding: {'x' * size}\n"
    (tmp_path / "agentos.yaml").write_text(text, encoding="utf-8")
    got = _load(tmp_path / "agentos.yaml")
    assert isinstance(got, ContractError) and "'padding' was unexpected" in str(got)


@pytest.mark.parametrize("deep", ["[" * 1000 + "]" * 1000, "{a: " * 1000 + "1" + "}" * 1000])
def test_deeply_nested_agentos_yaml_is_a_contract_error(tmp_path: Path, deep: str) -> None:
    (tmp_path / "agentos.yaml").write_text(f"default_profile: {deep}\nprofiles: {{}}\n")
    _check(_load(tmp_path / "agentos.yaml"))


def test_a_nul_in_agentos_yaml_is_one_line_naming_the_line(tmp_path: Path) -> None:
    (tmp_path / "agentos.yaml").write_text("default_profile: scripted\nprofiles: a\0b\n")
    got = _load(tmp_path / "agentos.yaml")
    assert isinstance(got, ContractError)
    (p,) = got.problems
    assert p.field == "line 2"
    one_line(str(p))


def test_a_bad_agentos_yaml_stops_the_cli_in_one_line_and_keeps_the_logs(workspace: Path, cli: Any) -> None:
    code, _, _ = cli("--workspace", workspace, "run", "hello, greet Ada")
    log = workspace / "sessions" / "s0001" / ".events.jsonl"
    before = log.read_bytes()
    anchors, alias = "l0: &l0 [a, a, a, a, a, a, a, a, a]\n" + "".join(
        f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 9)}]\n" for i in range(1, 9)), "*l8"
    (workspace / "agentos.yaml").write_text(anchors + f"default_profile: {alias}\nprofiles: {{}}\n")
    code, out, err = cli("--workspace", workspace, "run", "hello, greet Ada")
    assert code == 2 and out == ""
    assert one_line(err).startswith("agentos: error: agentos.yaml: default_profile.")
    assert log.read_bytes() == before

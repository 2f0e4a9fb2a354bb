"""SKILL.md frontmatter: random text and bytes, wrong types, huge strings, NUL, YAML bombs,
deep nesting and `!!python` tags. Each file is a registered skill or a Problem naming the
file and the field (or frontmatter line), in one line; the other skills still load."""

from __future__ import annotations

import shutil
import tracemalloc
from pathlib import Path

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from agentos_kernel import Runtime
from agentos_kernel.errors import Problem
from agentos_kernel.schemas.registry import SchemaRegistry
from agentos_kernel.skills import frontmatter
from agentos_kernel.skills.registry import discover
from agentos_kernel.workspace import reference_dir
from agentos_kernel.yamlload import MAX_YAML_CHARS

from . import fuzz, one_line
from .strategies import YAML_TAGS, json_values, nasty_text, yaml_bombs, yaml_deep, yaml_values

SCHEMAS = SchemaRegistry.load(reference_dir() / "schemas")
SHOWN = "skills/fuzzed/SKILL.md"
FIELDS = ("name", "description", "triggers", "allowed-tools", "version", "plugin", "schema_version")
MAX_PEAK_BYTES = 64 << 20
"""Python heap a bomb or a deep document may cost while it is refused (it would be GBs)."""


@st.composite
def skill_docs(draw: st.DrawFn) -> str:
    """A SKILL.md: some fields valid, some with hostile YAML values, maybe a bomb's anchors."""
    lines = []
    anchors, alias = draw(st.one_of(st.just(("", "")), yaml_bombs()))
    for key in draw(st.lists(st.sampled_from(FIELDS) | nasty_text, max_size=6, unique=True)):
        value = draw(st.one_of(
            st.just(alias) if alias else st.nothing(),
            st.sampled_from(["fuzzed", "a skill", "[hello, hi]", "[echo]", "1", "v1"]),
            yaml_values))
        lines.append(f"{key}: {value}" if isinstance(key, str) and ":" not in key else f"{key!r}: {value}")
    head = anchors + "\n".join(lines)
    body = draw(st.sampled_from(["", "body\n", "---\n", "\0", "x" * 10_000]))
    return draw(st.sampled_from(["---\n{h}\n---\n{b}", "---{h}---{b}", "{h}\n---\n{b}", "---\n{h}\n"])
                ).format(h=head, b=body)


def _check(result: tuple | Problem) -> None:
    if isinstance(result, Problem):
        assert result.file == SHOWN
        assert result.field and isinstance(result.field, str)
        one_line(str(result))
    else:
        meta, body = result
        assert isinstance(meta, dict) and isinstance(body, str)
        assert SCHEMAS.violations(meta, "skill_frontmatter_v1") == []


@fuzz(200)
@given(text=st.one_of(skill_docs(), st.text(max_size=300)))
def test_a_skill_md_is_loaded_or_named_with_its_field(tmp_path: Path, text: str) -> None:
    path = tmp_path / "SKILL.md"
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    _check(frontmatter.load(path, "skill_frontmatter_v1", SCHEMAS, SHOWN))


@fuzz(60)
@given(data=st.binary(max_size=400) | st.sampled_from([b"---\nname: \xff\n---\n", b"\xef\xbb\xbf---\n",
                                                      b"---\nname: a\x00b\ndescription: d\n---\n"]))
def test_bytes_that_are_not_utf8_text_are_named_not_raised(tmp_path: Path, data: bytes) -> None:
    path = tmp_path / "SKILL.md"
    path.write_bytes(data)
    _check(frontmatter.load(path, "skill_frontmatter_v1", SCHEMAS, SHOWN))


@fuzz(40)
@given(bomb=yaml_bombs(), field=st.sampled_from(["name", "description", "triggers", "extra"]))
def test_alias_bombs_are_refused_within_bounded_memory(tmp_path: Path, bomb: tuple[str, str],
                                                      field: str) -> None:
    anchors, alias = bomb
    path = tmp_path / "SKILL.md"
    path.write_text(f"---\n{anchors}name: n\ndescription: d\n{field}: {alias}\n---\nbody\n")
    tracemalloc.start()
    try:
        result = frontmatter.load(path, "skill_frontmatter_v1", SCHEMAS, SHOWN)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    _check(result)
    assert peak < MAX_PEAK_BYTES, f"{peak >> 20} MB to refuse a bomb"


@fuzz(40)
@given(deep=yaml_deep(), tag=st.sampled_from(YAML_TAGS))
def test_deep_nesting_and_python_tags_are_refused_with_the_line(tmp_path: Path, deep: str,
                                                               tag: str) -> None:
    path = tmp_path / "SKILL.md"
    for value in (deep, tag):
        path.write_text(f"---\nname: n\ndescription: d\nextra: {value}\n---\nbody\n")
        tracemalloc.start()
        try:
            result = frontmatter.load(path, "skill_frontmatter_v1", SCHEMAS, SHOWN)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        _check(result)
        assert peak < MAX_PEAK_BYTES
        if value.startswith("!!python"):
            assert isinstance(result, Problem) and result.field.startswith("frontmatter line 4")


def test_python_tags_construct_nothing(tmp_path: Path) -> None:
    """safe_load refuses every `!!python/...` tag: nothing is imported, called or created."""
    canary = Path("/tmp/agentos-fuzz-pwned")
    canary.unlink(missing_ok=True)
    for tag in (t for t in YAML_TAGS if t.startswith("!!python")):
        with_tag = f"---\nname: {tag}\ndescription: d\n---\n"
        (tmp_path / "SKILL.md").write_text(with_tag)
        got = frontmatter.load(tmp_path / "SKILL.md", "skill_frontmatter_v1", SCHEMAS, SHOWN)
        assert isinstance(got, Problem) and "could not determine a constructor" in got.message, got
        assert "could not determine a constructor" in str(_yaml_error(with_tag))
    assert not canary.exists()


def _yaml_error(text: str) -> Exception:
    try:
        frontmatter.split(text)
    except yaml.YAMLError as exc:
        return exc
    raise AssertionError("accepted a python tag")


@fuzz(40)
@given(text=skill_docs())
def test_a_broken_skill_never_stops_the_others_loading(tmp_path: Path, text: str) -> None:
    root = tmp_path / "skills"
    if not root.exists():
        shutil.copytree(reference_dir() / "skills", root)
    (root / "fuzzed").mkdir(exist_ok=True)
    (root / "fuzzed" / "SKILL.md").write_text(text, encoding="utf-8")
    reg = discover([root], SCHEMAS, base=tmp_path)
    assert {"greet", "append-note", "inspect-file"} <= set(reg.skills)
    for p in reg.skipped:
        assert p.file == SHOWN and p.field
        one_line(str(p))
    assert len(reg.skills) + len(reg.skipped) == 4


@fuzz(8)
@given(value=yaml_values | json_values.map(repr))
def test_a_run_with_a_broken_skill_logs_it_and_completes(workspace: Path, value: str) -> None:
    (workspace / "skills" / "fuzzed").mkdir(exist_ok=True)
    (workspace / "skills" / "fuzzed" / "SKILL.md").write_text(
        f"---\nname: fuzzed\ndescription: {value}\ntriggers: [zzz]\n---\nbody\n", encoding="utf-8")
    rt = Runtime.from_workspace(workspace)
    result = rt.handle_user_request("hello, greet Ada")
    sid = result.value.session_id
    events = rt.events(sid)
    skipped = [e.payload for e in events if e.type == "skill.skipped"]
    assert (skipped == []) == ("fuzzed" in rt.skills.skills)
    assert all(p["file"] == SHOWN for p in skipped)
    assert events[-1].type == "session.close" and events[-1].payload["ok"] is True


@pytest.mark.parametrize("value, field, why", [
    ("*l8", "extra.", "holds more than 10000 values"),  # schema-valid: only the loader's bound stops it
    ("&r [1, *r]", "extra.1", "contains itself"),
    ("2024-01-01", "extra", "(date) is not a JSON value"),
    ("!!binary aGVsbG8=", "extra", "(bytes) is not a JSON value"),
    ("{1: a}", "extra", "key 1 (int) is not a string"),
])
def test_values_no_schema_can_check_are_refused_by_the_loader_naming_the_field(
        tmp_path: Path, value: str, field: str, why: str) -> None:
    anchors = "l0: &l0 [a, a, a, a, a, a, a, a, a]\n" + "".join(
        f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 9)}]\n" for i in range(1, 9)) if "*l8" in value else ""
    (tmp_path / "SKILL.md").write_text(f"---\n{anchors}name: n\ndescription: d\nextra: {value}\n---\n")
    got = frontmatter.load(tmp_path / "SKILL.md", "skill_frontmatter_v1", SCHEMAS, SHOWN)
    assert isinstance(got, Problem) and got.field.startswith(field) and why in got.message, got


def test_frontmatter_past_its_size_bound_is_refused_unparsed(tmp_path: Path) -> None:
    (tmp_path / "SKILL.md").write_text(f"---\nname: n\ndescription: {'x' * 70_000}\n---\n")
    got = frontmatter.load(tmp_path / "SKILL.md", "skill_frontmatter_v1", SCHEMAS, SHOWN)
    assert isinstance(got, Problem) and got.field == "frontmatter"
    assert f"at most {MAX_YAML_CHARS} are read" in got.message

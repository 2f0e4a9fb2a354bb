"""Workflow Markdown (cycles, phases, policies, personas, artifact templates): one reference
file at a time gets random fields, wrong types, hostile YAML or random CEL. The plane loads,
or ContractError lists problems that each name a file under workflows/ and a field, in one
line; nothing else is raised."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from agentos_kernel.errors import ContractError
from agentos_kernel.schemas.registry import SchemaRegistry
from agentos_kernel.skills import frontmatter
from agentos_kernel.workflows.model import WorkflowRegistry
from agentos_kernel.workflows.registry import load_workflows
from agentos_kernel.workspace import reference_dir

from . import fuzz, one_line
from .cel import cel_sources
from .strategies import YAML_TAGS, json_values, nasty_text, yaml_bombs, yaml_deep

SCHEMAS = SchemaRegistry.load(reference_dir() / "schemas")
REFERENCE = reference_dir() / "workflows"
FILES = sorted(p.relative_to(REFERENCE).as_posix() for p in REFERENCE.rglob("*.md") if p.name != "README.md")
CEL_FIELDS = ("advance_signal", "halt_signal", "exit_conditions", "rules")


@pytest.fixture
def plane(tmp_path: Path) -> Path:
    """A copy of the reference workflows/ (each example edits one file and puts it back)."""
    root = tmp_path / "workflows"
    shutil.copytree(REFERENCE, root)
    return root


@st.composite
def edits(draw: st.DrawFn) -> tuple[str, str]:
    """(file, new text): one reference file with its frontmatter changed."""
    rel = draw(st.sampled_from(FILES))
    meta, body = frontmatter.split((REFERENCE / rel).read_text(encoding="utf-8"))
    how = draw(st.sampled_from(["value", "drop", "add", "cel", "raw", "text"]))
    key = draw(st.sampled_from(sorted(meta)))
    if how == "value":
        meta[key] = draw(json_values)
    elif how == "drop":
        meta.pop(key)
    elif how == "add":
        meta[draw(nasty_text)] = draw(json_values)
    elif how == "cel":
        meta[draw(st.sampled_from(CEL_FIELDS))] = _cel_shaped(draw, draw(st.sampled_from(CEL_FIELDS)))
    if how == "raw":  # hostile YAML the dumper would never write
        value = draw(st.sampled_from(YAML_TAGS) | yaml_deep(max_depth=3000)
                     | yaml_bombs().map(lambda b: b[1]))
        anchors = draw(yaml_bombs())[0] if "*l" in value else ""
        head = yaml.safe_dump(meta, allow_unicode=True) + anchors + f"{key}_x: {value}\n"
    elif how == "text":
        return rel, draw(st.text(max_size=300))
    else:
        head = yaml.safe_dump(meta, allow_unicode=True)
    return rel, f"---\n{head}---\n{body}"


def _cel_shaped(draw: st.DrawFn, field: str) -> Any:
    source = draw(cel_sources)
    if field == "exit_conditions":
        return {"done": source}
    if field == "rules":
        return [{"when": source, "then": draw(st.sampled_from(["allow", "deny", "P0", "x"])),
                 "reason": "fuzz"}]
    return source


@fuzz(120)
@given(edit=edits())
def test_an_edited_workflow_file_loads_or_is_named_with_its_field(plane: Path, edit: tuple[str, str]) -> None:
    rel, text = edit
    target = plane / rel
    original = target.read_bytes()
    target.write_text(text, encoding="utf-8")
    try:
        got: WorkflowRegistry | ContractError = load_workflows(plane, SCHEMAS, "workflows")
    except ContractError as exc:
        got = exc
    finally:
        target.write_bytes(original)
    if isinstance(got, ContractError):
        assert got.problems
        for p in got.problems:
            assert p.file.startswith("workflows/") and p.field, p
            one_line(str(p))
    else:
        assert set(got.cycles) >= {"code-review", "bugfix", "ralph-loop"} - {Path(rel).stem}

"""A YAML mistake in a Markdown contract's frontmatter is reported at the line of the file a
reader must open, counting the opening '---' as line 1."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentos_kernel import Problem, SchemaRegistry
from agentos_kernel.skills.frontmatter import load
from agentos_kernel.workspace import reference_dir


@pytest.mark.parametrize("text, line", [
    ("---\nname: x\ndescription: Lists files: one per line.\n---\nbody\n", 3),
    ("---\nname: x\ndescription: ok\ntriggers: [a\n  b: c\n---\nbody\n", 5),
    ("---\ndescription: a: b\n---\n", 2),
])
def test_a_yaml_error_names_the_file_line(tmp_path: Path, text: str, line: int) -> None:
    path = tmp_path / "SKILL.md"
    path.write_text(text)
    schemas = SchemaRegistry.load(reference_dir() / "schemas")
    got = load(path, "skill_frontmatter_v1", schemas, "skills/x/SKILL.md")
    assert isinstance(got, Problem), got
    assert got.field == f"frontmatter line {line}"
    assert got.message.startswith("not valid YAML: ")
    # the line named is the one holding the mistake
    assert ":" in text.splitlines()[line - 1]

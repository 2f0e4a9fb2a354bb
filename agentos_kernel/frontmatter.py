"""Markdown with YAML frontmatter: the SSOT format of skills, roles and workflows (I-4)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from .errors import Problem
from .yamlload import safe_load, yaml_error

if TYPE_CHECKING:
    from .schemas import SchemaRegistry


def split(text: str) -> tuple[Any, str]:
    """(frontmatter, body). Raises ValueError when the file has no `---` block."""
    if not text.startswith("---"):
        raise ValueError("missing YAML frontmatter: the file must start with a '---' line")
    end = text.find("\n---", 3)
    if end < 0:
        raise ValueError("frontmatter is not closed by a '---' line")
    head = text[3:end]
    body = text[end + 4:].lstrip("\n")
    return safe_load(head), body


def load(path: Path, schema_id: str, schemas: SchemaRegistry, shown: str
         ) -> tuple[dict[str, Any], str] | Problem:
    """Read and check one Markdown contract file; a Problem names file and field."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        return Problem(shown, "-", f"cannot read: {exc}")
    try:
        meta, body = split(text)
    except ValueError as exc:
        return Problem(shown, "frontmatter", str(exc))
    except yaml_error() as exc:
        mark = getattr(exc, "problem_mark", None)
        # The YAML starts on the opening "---" line itself: its line 0 is line 1 of the file.
        where = f"frontmatter line {mark.line + 1}" if mark else "frontmatter"
        return Problem(shown, where, f"not valid YAML: {getattr(exc, 'problem', exc)}")
    if not isinstance(meta, dict):
        return Problem(shown, "frontmatter", "must be a YAML mapping of fields")
    found = schemas.violations(meta, schema_id)
    if found:
        v = found[0]
        return Problem(shown, field_of(v.path, v.message), f"{v.message} ({schema_id})")
    return meta, body


def field_of(pointer: str, message: str) -> str:
    """A readable field name for a violation: the pointer, or the missing property."""
    name = pointer.strip("/").replace("/", ".")
    if not name and "is a required property" in message:
        return message.split('"')[1] if '"' in message else "-"
    return name or "-"

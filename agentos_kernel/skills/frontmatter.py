"""Markdown with YAML frontmatter: the SSOT format of skills, roles and workflows (I-4).

The YAML is read with `yaml.SafeLoader` (no `!!python/...` tags) inside bounds, because a
contract file may come from anyone (a student's submission, a downloaded skill): at most
MAX_FILE_BYTES per file and MAX_YAML_CHARS of frontmatter (PyYAML reads about 1 MB/s),
MAX_YAML_DEPTH levels (its composer recurses per level: refused as it gets there), and
a result that is plain JSON within `schemas.not_json`'s bounds (an alias bomb — 9 aliases
of 9 aliases ... — is refused before anything expands it; so are dates, binary and
non-string keys, which no JSON schema can check).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import Problem
from ..schemas.textcheck import decode_problem
from ..yamlload import FrontmatterError, field_of, load_yaml, yaml_error, yaml_problem

if TYPE_CHECKING:
    from ..schemas.registry import SchemaRegistry

MAX_FILE_BYTES = 1 << 20


def split(text: str) -> tuple[Any, str]:
    """(frontmatter, body). Raises ValueError (FrontmatterError) when the file has no `---`
    block or its YAML is out of bounds, yaml.YAMLError when the YAML is malformed."""
    if not text.startswith("---"):
        raise FrontmatterError("missing YAML frontmatter: the file must start with a '---' line")
    end = text.find("\n---", 3)
    if end < 0:
        raise FrontmatterError("frontmatter is not closed by a '---' line")
    head = text[3:end]
    body = text[end + 4:].lstrip("\n")
    return load_yaml(head), body


def read_contract(path: Path) -> str:
    """A contract file's text: a regular file (a FIFO would block the loader) of at most
    MAX_FILE_BYTES, UTF-8. OSError or UnicodeDecodeError say why not."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise OSError(f"{path.name} is not a regular file")
        if st.st_size > MAX_FILE_BYTES:
            raise OSError(f"{st.st_size} bytes; a contract file may have at most {MAX_FILE_BYTES}")
        with os.fdopen(fd, "rb", closefd=False) as f:
            data = f.read(MAX_FILE_BYTES + 1)
    finally:
        os.close(fd)
    return data.decode("utf-8")


def load(path: Path, schema_id: str, schemas: SchemaRegistry, shown: str
         ) -> tuple[dict[str, Any], str] | Problem:
    """Read and check one Markdown contract file; a Problem names file and field."""
    try:
        text = read_contract(path)
    except OSError as exc:
        return Problem(shown, "-", f"cannot read: {exc}")
    except UnicodeDecodeError as exc:
        return Problem(shown, "-", decode_problem(exc))
    try:
        meta, body = split(text)
    except FrontmatterError as exc:
        return Problem(shown, exc.field, str(exc))
    except yaml_error() as exc:
        line, reason = yaml_problem(exc, text[3:])
        # The YAML starts on the opening "---" line itself: its line 0 is line 1 of the file.
        where = f"frontmatter line {line + 1}" if line is not None else "frontmatter"
        return Problem(shown, where, f"not valid YAML: {reason}")
    if not isinstance(meta, dict):
        return Problem(shown, "frontmatter", "must be a YAML mapping of fields")
    found = schemas.violations(meta, schema_id)
    if found:
        v = found[0]
        return Problem(shown, field_of(v.path, v.message), f"{v.message} ({schema_id})")
    return meta, body

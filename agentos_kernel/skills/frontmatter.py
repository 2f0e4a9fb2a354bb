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
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import Problem
from ..schemas.textcheck import decode_problem
from ..yamlload import yaml_error

if TYPE_CHECKING:  # imported on first use: `import agentos_kernel` loads neither
    import yaml

    from ..schemas.registry import SchemaRegistry

MAX_FILE_BYTES, MAX_YAML_CHARS, MAX_YAML_DEPTH, MAX_YAML_VALUES = 1 << 20, 64 * 1024, 64, 10_000


class FrontmatterError(ValueError):
    """Frontmatter that cannot be used; `field` names where (`frontmatter` for the whole)."""

    def __init__(self, message: str, field: str = "frontmatter") -> None:
        super().__init__(message)
        self.field = field


@cache
def _bounded_loader() -> type:
    """SafeLoader that refuses nesting past MAX_YAML_DEPTH (a YAMLError with its line). The
    pure-Python loader, not libyaml's: only its composer can be stopped as it recurses, and
    contract YAML is small (MAX_YAML_CHARS); loading a whole workspace is cached anyway
    (runtime_cache.py)."""
    import yaml

    class BoundedLoader(yaml.SafeLoader):
        depth = 0

        def compose_node(self, parent: Any, index: Any) -> Any:
            self.depth += 1
            try:
                if self.depth > MAX_YAML_DEPTH:
                    raise yaml.composer.ComposerError(
                        None, None, f"nested deeper than {MAX_YAML_DEPTH} levels",
                        self.peek_event().start_mark)
                return super().compose_node(parent, index)
            finally:
                self.depth -= 1

    return BoundedLoader


def load_yaml(text: str, max_chars: int = MAX_YAML_CHARS) -> Any:
    """`yaml.safe_load` within the bounds above (a config file may pass a larger
    `max_chars`): FrontmatterError (a ValueError) names the field at fault, yaml.YAMLError
    the line (`yaml_problem` gives it with a one-line reason)."""
    if len(text) > max_chars:
        raise FrontmatterError(f"the YAML is {len(text)} characters; at most {max_chars} "
                               "are read (put long text in the Markdown body)")
    from ..schemas.registry import not_json

    loader = _bounded_loader()(text)
    try:
        doc = loader.get_single_data()
    finally:
        loader.dispose()
    odd = not_json(doc, max_values=MAX_YAML_VALUES, max_depth=MAX_YAML_DEPTH)
    if odd is not None:
        raise FrontmatterError(odd.message, odd.path.strip("/").replace("/", ".") or "frontmatter")
    return doc


def yaml_problem(exc: yaml.YAMLError, text: str) -> tuple[int | None, str]:
    """(0-based line in `text` or None, one-line reason) of a PyYAML error."""
    mark = getattr(exc, "problem_mark", None)
    if mark is not None:
        return mark.line, str(getattr(exc, "problem", None) or exc).splitlines()[0]
    position = getattr(exc, "position", None)  # a ReaderError (a NUL, a control character)
    line = text.count("\n", 0, position) if isinstance(position, int) else None
    return line, (str(exc).splitlines() or ["?"])[0]


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


def field_of(pointer: str, message: str) -> str:
    """A readable field name for a violation: the pointer, or the missing property."""
    name = pointer.strip("/").replace("/", ".")
    if not name and "is a required property" in message:
        return message.split('"')[1] if '"' in message else "-"
    return name or "-"

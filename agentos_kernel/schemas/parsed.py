"""One pass over a workspace's schema files for `SchemaRegistry.load`: each file loaded by
`loading.load_one` (every check), or by `load_known` when its bytes are exactly a shipped
schema's (`shipped.py`, issue 24: the checks that file passed when the table was made are
not repeated, its parse is left to first use)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..errors import Problem
from .loading import _stem, load_one, may_refer
from .shipped import known


class Parsed:
    """What `_parse_all` found in the files read."""

    def __init__(self) -> None:
        self.schemas: dict[str, Any] = {}
        """Each id's document (a shipped file's: its bytes, parsed on first use)."""
        self.files: dict[str, Path | str] = {}
        """Each id's file."""
        self.problems: list[Problem] = []
        """What is wrong, each naming its file."""
        self.referring: list[str] = []
        """The ids whose bytes may hold a `$ref`: only these are walked."""
        self.targets: dict[str, tuple[str, ...]] = {}
        """A shipped file's `$ref` targets by its id, from the table (not walked)."""
        self.escaped = False
        """Whether any file has a `\\u` escape (self_contained's test too)."""
        self.shipped_contained = True
        """Whether every shipped file read is self-contained alone (from the table)."""
        self.raws: list[bytes] = []
        """The bytes of every other file loaded (self_contained reads them)."""


def parse_all(read: list[tuple[str, bytes | OSError]], deferred: list[Any] | None) -> Parsed:
    """What the files read hold, each by `load_one`, or by `load_known` when its bytes are
    a shipped schema's (`shipped.known`: its other checks proven when the table was made)."""
    out = Parsed()
    schemas = out.schemas
    for name, raw in read:  # parsed from the bytes read: the registry's key is what was loaded
        entry = known(name, raw) if isinstance(raw, bytes) else None
        if entry is None:
            problem = load_one(name, raw, schemas, out.files, deferred)
        else:
            problem = load_known(name, raw, schemas, out.files)  # type: ignore[arg-type]
        if problem:
            out.problems.append(problem)
            continue
        assert isinstance(raw, bytes)  # an OSError is a problem
        if entry is None:
            out.raws.append(raw)
        else:
            out.shipped_contained = out.shipped_contained and entry[1]
        if may_refer(raw, escape := b"\\u" in raw):
            sid = next(reversed(schemas))
            out.referring.append(sid)
            if entry is not None:
                out.targets[sid] = entry[2]
            out.escaped = out.escaped or escape
    return out


def load_known(path: str, raw: bytes, schemas: dict[str, Any],
               files: dict[str, Path | str]) -> Problem | None:
    """`load_one` for a file whose bytes are a shipped schema's (`shipped.known`): of its
    checks only the one across files can fail (another file with the same `$id`); the
    document goes in as its bytes, parsed on first use (`SchemaRegistry`)."""
    sid = _stem(path)
    if sid in schemas:
        return Problem(path, "$id", f"{sid!r} is already defined in {files[sid]}")
    schemas[sid] = raw
    files[sid] = path
    return None

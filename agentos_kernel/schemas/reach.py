"""Which schemas a jsonschema-rs Registry must hold: with self-contained schema files, only
those some `$ref` reaches (SchemaRegistry builds it on first use; a fresh kernel's first
`%agent` no longer registers all of a workspace's schemas, issue 24)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import jsonschema_rs

from ..errors import Problem
from .loading import DRAFT_2020_12

_PLAIN_ID = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*\Z")
_NOT_CONTAINED = (b"nchor", b'Ref"')
"""What makes a file other than self-contained, besides an escape (any key may hide behind
one: `load` tells): an anchor (`$anchor`, `$dynamicAnchor`, `$recursiveAnchor`), a dynamic
reference (the keys `"$dynamicRef"`, `"$recursiveRef"`)."""


def self_contained(schemas: dict[str, dict[str, Any]], raws: list[bytes]) -> bool:
    """Whether every loaded schema (meta-checked, each `$id` its file's stem, `raws` the
    files' bytes, none with a `\\u` escape) adds nothing to a jsonschema-rs Registry but
    itself at its id, so that leaving one out changes nothing a `$ref` elsewhere resolves
    to, and a Registry of any of them cannot fail: each of draft 2020-12 (whose meta-check
    asserts formats) with a plain name for an id, one `$id` in each file (no embedded
    resource), no anchor, no dynamic reference. Checked over all the bytes at once (a few
    C-level scans). tests/test_schema_registry_lazy.py compares registries built so with the
    full one."""
    joined = b"\0".join(raws)
    drafted = [doc["$schema"] for doc in schemas.values() if "$schema" in doc]
    return (joined.count(b'"$id"') == len(schemas) == len(raws)
            and joined.count(b'"$schema"') == len(drafted) and all(d == DRAFT_2020_12 for d in drafted)
            and not any(bad in joined for bad in _NOT_CONTAINED)
            and all(_PLAIN_ID.match(sid) for sid in schemas))


def ref_closure(start: dict[str, set[str]], refs: dict[str, set[str]] | None = None) -> set[str]:
    """The ids reached from the schemas in `start` (id -> the ids its `$ref`s name, `""` for
    one inside itself) by following `$ref`s (each id's targets in `refs`, default `start`),
    the schemas in `start` included."""
    refs = start if refs is None else refs
    reached: set[str] = set()
    todo = [t for targets in start.values() for t in targets] + list(start)
    while todo:
        sid = todo.pop()
        if sid and sid not in reached:
            reached.add(sid)
            todo.extend(refs.get(sid, ()))
    return reached


def registry_problems(schemas: dict[str, dict[str, Any]], files: Mapping[str, Path | str],
                      exc: ValueError) -> list[Problem]:
    """Why the jsonschema-rs Registry of `schemas` could not be built (it raised `exc`): each
    schema that cannot be registered alone, named by its file; the error itself when each
    can. An older draft's nested `id` is not format-checked at load (only draft 2020-12's
    meta-check asserts formats), so an `id` that is no URI reference gets this far."""
    problems = []
    for sid, doc in schemas.items():
        try:  # alone, its `$ref`s left out (they name other schemas): only its own ids count
            jsonschema_rs.Registry([(sid, _without_refs(doc))])
        except ValueError as one:
            problems.append(Problem(str(files[sid]), "id", f"{str(one).splitlines()[0]}; every `id` and "
                                    "`$id` in a schema must be a URI reference (e.g. a plain name)"))
    return problems or [Problem(str(next(iter(files.values()), "schemas")), "-",
                                f"the schemas cannot be registered together: {str(exc).splitlines()[0]}")]


def _without_refs(node: Any) -> Any:
    if isinstance(node, dict):
        return {k: _without_refs(v) for k, v in node.items() if k != "$ref"}
    if isinstance(node, list):
        return [_without_refs(v) for v in node]
    return node

"""L7 Schema-versioned IPC Registry: every boundary payload is checked against a schema id.

Each schema file is loaded once and its validator compiled once, on first use, with
`jsonschema-rs` (full draft 2020-12). A registry loaded again in the same process from the
same bytes is the one already loaded, its compiled validators with it (loading.py).
Schemas refer to each other by `$id` (`"$ref": "write_claim_v1"`), resolved through one
shared registry. A missing id is an error (`SCHEMA_NOT_FOUND`), never a pass.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from itertools import islice
from pathlib import Path
from typing import Any

import jsonschema_rs
import orjson

from ..errors import ContractError, DomainError, Err, ErrorCode, Ok, Problem, Result
from .jsonshape import printable, shape_problem
from .loading import (
    all_meta_valid,
    dangling_refs,
    keep,
    loaded_before,
    meta_problem,
    read_files,
)
from .parsed import parse_all as _parse_all
from .reach import ref_closure, registry_problems, self_contained

# Bounds on a payload that fails its schema, checked before the validator describes the failure:
# its messages quote the failing value, so a YAML alias bomb (9 aliases of 9 aliases ...) would
# be expanded in full, and a cycle or a value nested past the validator's limit raises.
MAX_PAYLOAD_VALUES, MAX_PAYLOAD_DEPTH, MAX_VIOLATIONS = 200_000, 200, 100


@dataclass(frozen=True)
class Violation:
    """One way a payload fails its schema."""

    path: str
    """JSON pointer into the payload (`/steps/0/id`), `/` for the whole payload."""
    message: str
    """What the validator reports."""


def _pointer(parts: Iterable[Any]) -> str:
    return "/" + "/".join(printable(str(p)) for p in parts)


class SchemaRegistry:
    """Loads every `*.json` under the schema roots, keyed by `$id` (which must be the file stem)."""

    def __init__(self, schemas: dict[str, Any], files: Mapping[str, Path | str],
                 refs: dict[str, set[str]] | None = None) -> None:
        """`refs`: None builds the jsonschema-rs Registry of every schema now (its errors
        raised here). Given by `load` when every file is self-contained (loading.py): the
        ids each schema with a `$ref` refers to; then a schema without one compiles without a
        Registry, and the others with one of the schemas their `$ref`s reach, built once on
        first use (the only resources a `$ref` of that schema can resolve to). A document
        given as bytes (from `load`: a shipped schema's file, proven by `shipped.py`) is
        parsed on first use."""
        self._docs = schemas
        self._files = files
        self._refs = refs
        self._registry = jsonschema_rs.Registry(list(self._schemas.items())) if refs is None else None
        self._by_reach: dict[frozenset[str], Any] = {}  # self-contained: a Registry per set reached
        self._validators: dict[str, Any] = {}
        self._resolved: dict[str, bytes] = {}

    @property
    def _schemas(self) -> dict[str, dict[str, Any]]:
        """Every schema document by id, each parsed."""
        for sid in self._docs:
            self._doc(sid)
        return self._docs

    def _doc(self, schema_id: str) -> dict[str, Any]:
        """The document of `schema_id` (KeyError if unknown), parsed from a shipped file's
        bytes the first time (orjson reads those exactly as the loader would: shipped_make)."""
        doc = self._docs[schema_id]
        if isinstance(doc, bytes):
            doc = self._docs[schema_id] = orjson.loads(doc)
        return doc  # type: ignore[no-any-return]

    @classmethod
    def load(cls, *roots: Path) -> SchemaRegistry:
        """Load and meta-check every schema file; raise `ContractError` naming each bad file.
        The same bytes at the same paths as a registry loaded before give that registry
        (its validators compiled already); a problem is found and raised afresh each time."""
        read = read_files(roots)
        key = tuple((p, raw) for p, raw in read if isinstance(raw, bytes))
        if len(key) == len(read) and (hit := loaded_before(key)) is not None:
            return hit  # type: ignore[no-any-return]
        deferred: list[Any] = []  # draft 2020-12 documents, meta-checked in one call
        parsed = _parse_all(read, deferred)
        if parsed.problems or not all_meta_valid(deferred):  # each file on its own, as it always was
            parsed = _parse_all(read, None)
        schemas, files, problems = parsed.schemas, parsed.files, parsed.problems
        refs: dict[str, set[str]] = {}
        if not problems:
            problems = dangling_refs(schemas, files, parsed.referring, refs, parsed.targets)
        if problems:
            raise ContractError(problems)
        # every file self-contained: the jsonschema-rs Registry built on first use, of what $refs reach
        # (a shipped file's part of the test proven by shipped_make; the others' tested here)
        contained = (len(key) == len(read) and not parsed.escaped and parsed.shipped_contained
                     and self_contained({s: d for s, d in schemas.items() if not isinstance(d, bytes)},
                                        parsed.raws))
        try:
            loaded = cls(schemas, files, refs if contained else None)
        except ValueError as exc:  # the full Registry refused a schema the meta-check passed
            raise ContractError(registry_problems(schemas, files, exc)) from None
        if len(key) == len(read):
            keep(key, loaded)
        return loaded

    def with_schemas(self, docs: dict[str, dict[str, Any]], source: str) -> SchemaRegistry:
        """A new registry with `docs` (id -> schema) added, for schemas that come from
        somewhere other than a file (an MCP tool's inputSchema); `source` names where in
        problems and `file()`. Each is meta-checked; ContractError names each bad one."""
        schemas, files = dict(self._schemas), dict(self._files)  # every document parsed
        problems = []
        for sid, doc in docs.items():
            if sid in schemas:
                problems.append(Problem(source, sid, f"schema id {sid!r} is already defined in "
                                        f"{files[sid]}"))
                continue
            bad = meta_problem(doc)
            if bad is not None:
                problems.append(Problem(source, sid, f"not a valid draft 2020-12 schema: {bad}"))
                continue
            schemas[sid], files[sid] = {**doc, "$id": sid}, Path(source)
        # a $ref the registry cannot resolve would otherwise fail at first use with a ValueError
        problems += [p for p in dangling_refs(schemas, files) if p.file == str(Path(source))]
        if problems:
            raise ContractError(problems)
        return SchemaRegistry(schemas, files)

    def ids(self) -> list[str]:
        """Every loaded schema id, sorted."""
        return sorted(self._docs)

    def __contains__(self, schema_id: object) -> bool:
        return schema_id in self._docs

    def schema(self, schema_id: str) -> dict[str, Any]:
        """The raw schema document; KeyError names the id."""
        try:
            return self._doc(schema_id)
        except KeyError:
            raise KeyError(f"unknown schema id {schema_id!r}") from None

    def file(self, schema_id: str) -> Path:
        """The file a schema was loaded from."""
        return Path(self._files[schema_id])

    def _validator(self, schema_id: str) -> Any:
        v = self._validators.get(schema_id)
        if v is None:
            v = jsonschema_rs.Draft202012Validator(  # offline: whatever a schema names, never fetched
                self._doc(schema_id), registry=self._registry_for(schema_id), offline=True
            )
            self._validators[schema_id] = v
        return v

    def validity(self, schema_id: str) -> Callable[[Any], bool]:
        """The compiled check of `schema_id` (True: valid; ValueError on a value that is not
        JSON), for a caller that checks many payloads against one schema; KeyError names an
        unknown id. `violations` says what is wrong when it says no."""
        if schema_id not in self._docs:
            raise KeyError(f"unknown schema id {schema_id!r}")
        return self._validator(schema_id).is_valid  # type: ignore[no-any-return]

    def _registry_for(self, schema_id: str) -> Any:
        """The Registry `schema_id` compiles with: every schema's (built at load), or, for
        self-contained files, none for a schema without `$ref` (it resolves nothing) and for
        the others one of the schemas its own `$ref`s reach, built once per such set (the
        canonical request's three need two schemas each, not the 13 every `$ref` reaches)."""
        if self._refs is None:
            return self._registry
        if schema_id not in self._refs:
            return None
        reached = frozenset(ref_closure({schema_id: self._refs[schema_id]}, self._refs))
        built = self._by_reach.get(reached)
        if built is None:
            built = self._by_reach[reached] = jsonschema_rs.Registry(
                [(s, self._doc(s)) for s in self._docs if s in reached])
        return built

    def violations(self, payload: Any, schema_id: str) -> list[Violation]:
        """The violations of `schema_id` by `payload` (empty when valid; at most
        MAX_VIOLATIONS). KeyError if the id is unknown. Never raises on the payload: a value
        that is not JSON, nested too deeply, recursive or too large is one violation naming
        where it is."""
        v = self._validators.get(schema_id)  # compiled already: the common case, one lookup
        if v is None:
            if schema_id not in self._docs:
                raise KeyError(f"unknown schema id {schema_id!r}")
            v = self._validator(schema_id)
        try:
            if v.is_valid(payload):
                return []
        except ValueError:
            pass  # not JSON (a date, bytes, an int key, a lone surrogate) or too deep: named below
        odd = not_json(payload)
        if odd is not None:
            return [odd]
        try:
            found = [Violation(_pointer(e.instance_path), printable(e.message))
                     for e in islice(v.iter_errors(payload), MAX_VIOLATIONS)]
        except ValueError as exc:  # the validator's own limits, which not_json should pre-empt
            found = [Violation("/", printable(f"cannot be checked: {exc}"))]
        return sorted(found, key=lambda x: (x.path, x.message))

    def validate(self, payload: Any, schema_id: str, *, loggable: bool = True) -> Result[Any]:
        """`Ok(payload)` when valid and, with `loggable`, one a log can hold (`unloggable`);
        `Err(SCHEMA_INVALID | SCHEMA_NOT_FOUND)` otherwise."""
        if schema_id not in self._docs:
            return Err(
                DomainError(
                    "schema",
                    ErrorCode.SCHEMA_NOT_FOUND,
                    f"no schema with id {schema_id!r} is loaded; add schemas/{schema_id}.json",
                )
            )
        found = self.violations(payload, schema_id) or (unloggable(payload) if loggable else [])
        if not found:
            return Ok(payload)
        first = found[0]
        return Err(
            DomainError(
                "schema",
                ErrorCode.SCHEMA_INVALID,
                f"{schema_id}: {first.path}: {first.message}",
            )
        )

    def resolved(self, schema_id: str) -> dict[str, Any]:
        """The schema with every `$ref` to another loaded id inlined (for tool specs sent to
        a model, which cannot follow references). Inlined once per id (a registry's schemas
        never change); each call gets its own copy."""
        done = self._resolved.get(schema_id)
        if done is None:
            done = self._resolved[schema_id] = orjson.dumps(self._inlined(schema_id))
        return orjson.loads(done)  # type: ignore[no-any-return]

    def _inlined(self, schema_id: str) -> dict[str, Any]:
        def inline(node: Any) -> Any:
            if isinstance(node, dict):
                ref = node.get("$ref")
                if isinstance(ref, str) and ref in self._docs:
                    return inline({k: v for k, v in self._doc(ref).items() if k != "$id"})
                return {k: inline(v) for k, v in node.items() if k not in ("$schema", "$id")}
            if isinstance(node, list):
                return [inline(x) for x in node]
            return node

        inlined: dict[str, Any] = inline(self.schema(schema_id))  # a schema inlines to a schema
        return inlined


def unloggable(payload: Any) -> list[Violation]:
    """What makes a payload its schema accepts impossible to log, or []: a string that is
    not UTF-8 text where no string constraint made the validator read it (a lone surrogate
    from a JSON `"\\ud800"`), an integer past 64 bits. One pass of the log's own encoder."""
    try:
        orjson.dumps(payload)
    except orjson.JSONEncodeError as exc:
        odd = not_json(payload)
        return [odd or Violation("/", printable(f"cannot be written to the log: {exc}"))]
    return []


def not_json(payload: Any, *, max_values: int = MAX_PAYLOAD_VALUES,
             max_depth: int = MAX_PAYLOAD_DEPTH) -> Violation | None:
    """The first place where `payload` is not plain JSON within the bounds, as a Violation
    (jsonshape.shape_problem); None when it is."""
    found = shape_problem(payload, max_values=max_values, max_depth=max_depth)
    return Violation(*found) if found else None

"""Reading a workspace's schema files for SchemaRegistry.load, and reusing what the same
bytes gave before.

A registry is kept by the exact (path, bytes) of every file it was loaded from: a Runtime
rebuilt in the same process after an edit elsewhere (runtime_cache), or a second workspace
with the same schemas, gets the registry already loaded and its compiled validators with it.
`load` reads every file each time and compares the bytes, so an edited schema is never
served stale, whatever its mtime or size; what failed to load is never kept (each load
raises its problems afresh). The files are listed as `sorted(Path(root).rglob("*.json"))`
lists them, with one scandir per directory and no Path object until a file is parsed.
"""

from __future__ import annotations

import errno
import json
import os
import threading
from collections import OrderedDict
from collections.abc import Iterable, Mapping
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema_rs
import orjson

from ..errors import Problem
from .jsonshape import printable
from .textcheck import decode_problem

KEEP_LOADED = 8
"""Registries kept for reuse (least recently used dropped first): a class's few workspaces."""
Key = tuple[tuple[str, bytes], ...]
_LOADED: OrderedDict[Key, Any] = OrderedDict()
"""Registries loaded without a problem, by the exact (path, bytes) of every file read."""
_LOCK = threading.Lock()
_IGNORED = (errno.ENOENT, errno.ENOTDIR, errno.EBADF, errno.ELOOP)
"""What pathlib's glob ignores when it asks an entry whether it is a directory."""


def loaded_before(key: Key) -> Any:
    """The registry loaded from exactly these (path, bytes), or None."""
    with _LOCK:  # workspaces may load on several threads (a live stepper's worker)
        hit = _LOADED.get(key)
        if hit is not None:
            _LOADED.move_to_end(key)
        return hit


def keep(key: Key, registry: Any) -> None:
    """Keep `registry` (loaded without a problem) for the next load of the same bytes."""
    with _LOCK:
        _LOADED[key] = registry
        while len(_LOADED) > KEEP_LOADED:
            _LOADED.popitem(last=False)


def forget_loaded() -> None:
    """Drop the registries kept (a new process starts without them)."""
    with _LOCK:
        _LOADED.clear()


def read_files(roots: Iterable[Path]) -> list[tuple[str, bytes | OSError]]:
    """(path, bytes, or the OSError reading it gave) of every schema file under `roots`."""
    read: list[tuple[str, bytes | OSError]] = []
    for root in roots:
        for name in json_files(Path(root)):
            try:
                read.append((name, _read(name)))
            except OSError:
                try:  # read again as `open` reads: the error (a directory, a lost file) is its own
                    with open(name, "rb") as f:
                        read.append((name, f.read()))
                except OSError as exc:
                    read.append((name, exc))
    return read


def _read(name: str) -> bytes:
    """The bytes of file `name`, with os.read: a third of `open(name, "rb").read()`'s time,
    which builds a buffered file object for one read (a fresh kernel reads 69 files)."""
    fd = os.open(name, os.O_RDONLY | os.O_CLOEXEC)
    try:
        chunks = []
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def json_files(root: Path) -> list[str]:
    """`[str(p) for p in sorted(root.rglob("*.json"))]` (Python 3.11's pathlib: every entry
    named *.json, hidden ones and directories too, in every directory under `root` reached
    without following a symlink, an unreadable one skipped), sorted by path parts as Paths
    sort (tests/test_reload_memo.py compares the two on a tree of odd cases)."""
    base = str(root)
    if not os.path.isdir(base):
        return []
    prefix = "" if base == "." else base if base.endswith("/") else base + "/"
    found: list[tuple[str, ...]] = []

    def walk(parts: tuple[str, ...]) -> None:
        try:
            with os.scandir(prefix + "/".join(parts) if parts else base) as it:
                entries = list(it)
        except PermissionError:
            return
        found.extend((*parts, e.name) for e in entries if e.name.endswith(".json"))
        for entry in entries:
            try:
                is_dir = entry.is_dir(follow_symlinks=False)
            except OSError as exc:
                if exc.errno not in _IGNORED:
                    raise
                is_dir = False
            if is_dir:
                walk((*parts, entry.name))

    walk(())
    found.sort()
    return [prefix + "/".join(parts) for parts in found]


def load_one(path: str, raw: bytes | OSError, schemas: dict[str, dict[str, Any]],
             files: dict[str, Path | str], deferred: list[Any] | None = None) -> Problem | None:
    """Parse and meta-check one schema file from the bytes read (or the error reading it
    gave) into `schemas` and `files` (its path as listed: a Path made of each of 69 files
    was a tenth of a fresh kernel's load); the Problem naming the file and field otherwise.
    `deferred`: a draft 2020-12 document's meta-check is left to `all_meta_valid` over this
    list instead (SchemaRegistry.load loads again without it unless every one passes)."""
    if isinstance(raw, OSError):
        return Problem(path, "-", f"not valid JSON: {raw}")
    if (doc := _orjson_doc(raw)) is _UNREAD:  # else read as strict UTF-8: no text needed
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            return Problem(path, "-", decode_problem(exc))
        if "\r" in text:  # as `read_text` reads it (universal newlines): error offsets stay the same
            text = text.replace("\r\n", "\n").replace("\r", "\n")
        try:
            doc = json.loads(text)
        except json.JSONDecodeError as exc:
            return Problem(path, "-", f"not valid JSON: {exc}")
    if not isinstance(doc, dict):
        return Problem(path, "-", "a schema must be a JSON object")
    sid = doc.get("$id")
    if sid != (stem := _stem(path)):
        return Problem(path, "$id", f"is {sid!r}; it must equal the file name {stem!r}")
    if sid in schemas:
        return Problem(path, "$id", f"{sid!r} is already defined in {files[sid]}")
    if deferred is not None and doc.get("$schema", DRAFT_2020_12) == DRAFT_2020_12:
        deferred.append(doc)
    elif (bad := meta_problem(doc)) is not None:
        return Problem(path, "-", f"not a valid draft 2020-12 schema: {bad}")
    schemas[sid] = doc
    files[sid] = path
    return None


def _stem(path: str) -> str:
    """`Path(path).stem`: the last name less its suffix (none for a name only starting with a dot)."""
    name = path.rpartition("/")[2]
    dot = name.rfind(".")
    return name[:dot] if 0 < dot < len(name) - 1 else name


DRAFT_2020_12 = "https://json-schema.org/draft/2020-12/schema"


@cache
def _with_formats() -> Any:
    """The draft 2020-12 meta-schema, compiled once, asserting its formats: a `pattern` that
    is not a regex, an `$id` that is not a URI reference. `meta.validate` leaves formats
    unchecked, and such a schema failed only when its validator was first compiled, in a
    request: now it fails at load, like any other bad schema."""
    return jsonschema_rs.Draft202012Validator({"$ref": DRAFT_2020_12}, validate_formats=True, offline=True)


@cache
def _all_with_formats() -> Any:
    """`_with_formats` over every item of an array: one call meta-checks a workspace's
    draft 2020-12 schemas (69 calls were ≈ 10 % more, issue 24)."""
    return jsonschema_rs.Draft202012Validator({"type": "array", "items": {"$ref": DRAFT_2020_12}},
                                              validate_formats=True, offline=True)


def all_meta_valid(docs: list[Any]) -> bool:
    """True when `_with_formats` passes every one of `docs` (so `meta_problem` finds nothing
    in any); False when any fails or cannot be checked (each is then checked on its own)."""
    try:
        return bool(_all_with_formats().is_valid(docs))
    except ValueError:  # not JSON to the validator: meta_problem says what it says of it
        return False


KNOWN_DRAFTS = frozenset({
    DRAFT_2020_12, DRAFT_2020_12 + "#", "https://json-schema.org/draft/2019-09/schema",
    "https://json-schema.org/draft/2019-09/schema#", "http://json-schema.org/draft-07/schema",
    "http://json-schema.org/draft-07/schema#", "http://json-schema.org/draft-06/schema",
    "http://json-schema.org/draft-06/schema#", "http://json-schema.org/draft-04/schema",
    "http://json-schema.org/draft-04/schema#"})
"""The `$schema` values whose meta-schemas jsonschema-rs carries. Any other makes it fetch
that URL over the network, so a schema file (or an MCP server's tool schema) could make the
runtime send a request where it pleases: refused instead."""


def draft_problem(doc: Any) -> str | None:
    """Why `doc`'s `$schema` is refused (one line), or None (absent, or a draft we carry)."""
    if not isinstance(doc, dict) or "$schema" not in doc or doc["$schema"] in KNOWN_DRAFTS:
        return None
    return (f"$schema: {printable(repr(doc['$schema']))[:120]} is not a JSON Schema draft this runtime "
            f"knows (schemas are never fetched); use {DRAFT_2020_12!r} or leave $schema out")


def meta_problem(doc: Any) -> str | None:
    """Why `doc` is not a valid schema (one line), or None. A draft 2020-12 schema (its
    `$schema` that or absent) is checked with formats; one of another draft we carry as
    before; any other `$schema` is refused unread (`draft_problem`)."""
    if (refused := draft_problem(doc)) is not None:
        return refused
    draft = isinstance(doc, dict) and doc.get("$schema", DRAFT_2020_12) == DRAFT_2020_12
    if draft and _with_formats().is_valid(doc):
        return None  # the common case: one call; what it accepts meta.validate accepts
    try:
        jsonschema_rs.meta.validate(doc)  # the message (and a ReferencingError) as before
    except jsonschema_rs.ValidationError as exc:
        return str(exc).splitlines()[0]
    if draft:
        return str(next(iter(_with_formats().iter_errors(doc))).message).splitlines()[0]
    return None


_DIGITS_ONLY = bytes(48 if 48 <= i <= 57 else 32 for i in range(256))
"""A bytes.translate table: every digit to `0`, every other byte to a space."""


_UNREAD = object()


def _orjson_doc(raw: bytes) -> Any:
    """`json.loads(raw.decode())` by orjson where the two agree, else _UNREAD: orjson refuses
    what json reads otherwise (NaN, infinities, a lone surrogate, a BOM, bytes that are not
    strict UTF-8: decoded and named as before), but reads an integer past 64 bits as a
    float: a file where 19 digits stand together goes to json."""
    if b"0" * 19 not in raw.translate(_DIGITS_ONLY):
        try:
            return orjson.loads(raw)
        except orjson.JSONDecodeError:
            pass  # json reads it, or names the error as it always has
    return _UNREAD


def may_refer(raw: bytes, escaped: bool) -> bool:
    """Whether a schema file's bytes may hold a `$ref`: the key written out, or any escape
    (`"\\u0024ref"` is the same key); `escaped`: whether they hold `\\u`."""
    return escaped or b"$ref" in raw


def ref_targets(doc: Any) -> set[str]:
    """The schema ids (the part before `#`) of every `$ref` string in `doc`: one loop over a
    stack, not a generator per node (a fresh kernel walks every schema once)."""
    found: set[str] = set()
    stack = [doc]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            for key, value in node.items():
                if key == "$ref" and isinstance(value, str):
                    found.add(value.partition("#")[0])
                elif isinstance(value, dict | list):
                    stack.append(value)
        elif isinstance(node, list):
            stack.extend(node)
    return found


def dangling_refs(schemas: dict[str, Any], files: Mapping[str, Path | str],
                  referring: Iterable[str] | None = None,
                  found: dict[str, set[str]] | None = None,
                  known: Mapping[str, Iterable[str]] | None = None) -> list[Problem]:
    """A `$ref` to an id that is not loaded names its file (the validator library would
    otherwise fail on it with a bare ValueError). `referring`: the ids whose documents may
    hold a `$ref` (`may_refer`), the others not walked; None walks every one. `found`, if
    given, gets the targets of each document walked that has a `$ref`; `known`, a shipped
    schema's targets (`shipped.SHIPPED`), taken instead of a walk."""
    problems = []
    for sid in schemas if referring is None else referring:
        targets = set(known[sid]) if known and sid in known else ref_targets(schemas[sid])
        if found is not None and targets:
            found[sid] = targets
        for target in sorted(targets):
            if target and target not in schemas:
                fix = (f"add schemas/{target}.json" if "/" not in target and ":" not in target else
                       "a schema is never fetched: refer to the $id of a schema in schemas/")
                problems.append(Problem(str(files[sid]), "$ref", f"refers to {target!r}, which is not "
                                        f"loaded; {fix}"))
    return problems

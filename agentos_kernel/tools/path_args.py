"""The path guard for tools that do not confine themselves (a bridged MCP server's, your own).

Such a tool does its own I/O, so the runtime cannot see what it writes; it can see what it is
asked to. Before the call, every argument that is a path — by its name (`path`, `file`,
`target`, `dest`, `source_path`, `outputDir`, ...), or because the tool's input schema says so
(`format: path|uri|...`, a description that speaks of a path, file or directory) — is
resolved as the server would see it (relative to the workspace, its working directory; `~`
and `file://` too) and refused with PATH_DENIED when it names a contract or sessions/, lies
under one, or is a folder holding one (the workspace itself: a `delete {path: "."}`).
A tool marked read-only (`readOnlyHint`) is not checked: reading a contract is no threat.

What this does not do: it cannot see a path the server builds itself, or one hidden in free
text, and it does not keep a server from writing outside the workspace (docs/reliability.md,
"What a tool, a model, an MCP client can and cannot touch").
"""

from __future__ import annotations

import os
import re
import reprlib
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlparse

from ..errors import DomainError, Err, ErrorCode

if TYPE_CHECKING:
    from .dispatch import ToolDef
    from .write_scope import WriteScope

_KEY = re.compile(r"(?:^|_)(?:path|paths|file|files|filename|filenames|filepath|dir|dirs|directory|"
                  r"directories|folder|folders|target|targets|dest|dests|destination|destinations|"
                  r"source|sources|src|cwd|root|uri|uris|location|output|outfile|outdir)$")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_SCHEMA_FORMATS = {"path", "file-path", "uri", "uri-reference", "iri", "iri-reference"}
_SCHEMA_WORDS = re.compile(r"\b(?:path|file|filename|directory|folder)s?\b", re.I)
MAX_DEPTH = 16
_ARG = reprlib.Repr()
_ARG.maxstring = 120


def path_like(key: str) -> bool:
    """True for an argument name that names a path (`path`, `targetFile`, `dest_dir`)."""
    return bool(_KEY.search(_CAMEL.sub("_", key).lower().replace("-", "_")))


def schema_path_args(schema: Any) -> tuple[str, ...]:
    """The top-level properties an input schema marks as paths: by `format`, or by a
    description that speaks of a path, file or directory."""
    props = schema.get("properties") if isinstance(schema, dict) else None
    if not isinstance(props, dict):
        return ()
    out = []
    for name, prop in props.items():
        if not isinstance(prop, dict):
            continue
        items = i if isinstance(i := prop.get("items"), dict) else {}
        if prop.get("format") in _SCHEMA_FORMATS or items.get("format") in _SCHEMA_FORMATS \
                or _SCHEMA_WORDS.search(str(prop.get("description", ""))):
            out.append(str(name))
    return tuple(sorted(out))


def path_refusal(tool: ToolDef, args: Any, scope: WriteScope) -> Err | None:
    """PATH_DENIED when an argument of `tool` that is a path names a contract, else None."""
    if tool.read_only:
        return None
    marked = frozenset(tool.path_args)
    for where, value in _paths(args, marked, "", False, 0):
        why = _why(value, scope)
        if why:
            return Err(DomainError("gate", ErrorCode.PATH_DENIED,
                                   f"{tool.name}: argument {where} {_ARG.repr(value)} {why}; "
                                   "tools never write contracts or sessions/ (the call was not made)"))
    return None


def _paths(value: Any, marked: frozenset[str], where: str, is_path: bool,
           depth: int) -> Iterator[tuple[str, str]]:
    """(where, string) for every string that sits under a path-like name, at any depth."""
    if depth > MAX_DEPTH:
        return
    if isinstance(value, str):
        if is_path:
            yield where or "(the arguments)", value
    elif isinstance(value, dict):
        for k, v in value.items():
            key = str(k)
            yield from _paths(v, marked, f"{where}.{key}" if where else key,
                              is_path or path_like(key) or (depth == 0 and key in marked), depth + 1)
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _paths(v, marked, f"{where}[{i}]", is_path, depth + 1)


def _why(text: str, scope: WriteScope) -> str | None:
    """Why the path `text` names a contract, as the server would resolve it, else None."""
    if text.startswith("file:"):
        text = unquote(urlparse(text).path)
    elif re.match(r"^[A-Za-z][A-Za-z0-9+.-]*://", text):
        return None  # another scheme (https://...) is not a file of this machine
    if not text or "\0" in text:
        return None  # no file has that name: nothing to protect
    text = os.path.expanduser(text)
    base = Path(text) if os.path.isabs(text) else scope.root / text
    for candidate in (Path(os.path.normpath(base)), _real(base)):
        why = scope.denial(candidate) or scope.holds(candidate)
        if why:
            return why
    return None


def _real(path: Path) -> Path:
    try:
        return Path(os.path.realpath(path))
    except (OSError, ValueError):
        return Path(os.path.normpath(path))


__all__ = ["path_like", "path_refusal", "schema_path_args"]

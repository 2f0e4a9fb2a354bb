"""Builtin L1 tools: echo, read_file, write_file (protected write), list_dir.

File tools are confined to the workspace: a path that escapes it (`..`, an absolute path,
a symlink pointing out) is `PATH_DENIED`, and the event logs under `sessions/` cannot be
written. Every path in a result is relative, so logs do not depend on where the
workspace lives (byte-identical logs across machines in deterministic mode).
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from .errors import DomainError, Err, ErrorCode, Ok, Result
from .tools import ToolContext, ToolDef

MAX_READ_BYTES = 1_000_000


def sha256_of(text: str) -> str:
    """The spec's content hash for protected writes."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _confine(ctx: ToolContext, rel: str, *, writing: bool = False) -> Path | Err:
    root = ctx.workspace.resolve()
    target = (root / rel).resolve()
    if not target.is_relative_to(root):
        return Err(DomainError("gate", ErrorCode.PATH_DENIED,
                               f"path {rel!r} escapes the workspace; use a path inside it"))
    parts = target.relative_to(root).parts
    if writing and parts and parts[0] in ctx.protected:
        return Err(DomainError("gate", ErrorCode.PATH_DENIED,
                               f"path {rel!r} is under {parts[0]}/, which tools may not write"))
    return target


def _rel(ctx: ToolContext, p: Path) -> str:
    return p.relative_to(ctx.workspace.resolve()).as_posix() or "."


def echo(args: dict[str, Any], ctx: ToolContext) -> Result[Any]:
    return Ok({"text": args["text"]})


def read_file(args: dict[str, Any], ctx: ToolContext) -> Result[Any]:
    target = _confine(ctx, args["path"])
    if isinstance(target, Err):
        return target
    if not target.exists():
        # A missing file reads as empty, so a first protected write can claim its hash.
        return Ok({"path": _rel(ctx, target), "content": "", "sha256": sha256_of(""),
                   "exists": False})
    if not target.is_file():
        return Err(DomainError("tool", ErrorCode.TOOL_ERROR, f"{args['path']!r} is not a file"))
    data = target.read_bytes()
    if len(data) > MAX_READ_BYTES:
        return Err(DomainError("tool", ErrorCode.TOOL_ERROR,
                               f"{args['path']!r} is {len(data)} bytes; read_file reads at most "
                               f"{MAX_READ_BYTES}"))
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return Err(DomainError("tool", ErrorCode.TOOL_ERROR, f"{args['path']!r} is not UTF-8 text"))
    return Ok({"path": _rel(ctx, target), "content": text, "sha256": sha256_of(text),
               "exists": True})


def protected_write(path: Path, new_text: str, expected_hash: str, who: str, why: str) -> Result[Any]:
    """The spec's protected write, stricter on one point: an empty `expected_hash` is only
    accepted for a file that does not exist yet (the spec's version skips the check)."""
    current = path.read_text(encoding="utf-8") if path.exists() else ""
    if expected_hash or path.exists():
        actual = sha256_of(current)
        if actual != expected_hash:
            return Err(DomainError("lock", ErrorCode.WRITE_CONFLICT,
                                   f"{who}: {why}: expected_hash {expected_hash[:12] or '(empty)'}"
                                   f"… does not match the file's current sha256 {actual[:12]}…; "
                                   "read the file again and retry with its hash"))
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".agentos-tmp")
    tmp.write_text(new_text, encoding="utf-8")
    tmp.replace(path)  # atomic: a crash never leaves a half-written file
    return Ok({"path": str(path), "hash": sha256_of(new_text)})


def write_file(args: dict[str, Any], ctx: ToolContext) -> Result[Any]:
    target = _confine(ctx, args["path"], writing=True)
    if isinstance(target, Err):
        return target
    claim = args["claim"]
    done = protected_write(target, args["content"], claim["expected_hash"], claim["who"], claim["why"])
    if isinstance(done, Err):
        return done
    return Ok({"path": _rel(ctx, target), "sha256": done.value["hash"],
               "bytes": len(args["content"].encode("utf-8"))})


def list_dir(args: dict[str, Any], ctx: ToolContext) -> Result[Any]:
    target = _confine(ctx, args.get("path", "."))
    if isinstance(target, Err):
        return target
    if not target.is_dir():
        return Err(DomainError("tool", ErrorCode.TOOL_ERROR, f"{args.get('path')!r} is not a directory"))
    entries = []
    for p in sorted(target.iterdir(), key=lambda x: x.name):
        if p.name.startswith("."):
            continue
        kind = "dir" if p.is_dir() else "file"
        entries.append({"name": p.name, "kind": kind, "size": p.stat().st_size if kind == "file" else 0})
    return Ok({"path": _rel(ctx, target), "entries": entries})


BUILTIN_TOOLS = (
    ToolDef("echo", "tool_echo_in_v1", "tool_echo_out_v1", echo, "Return the given text unchanged."),
    ToolDef("read_file", "tool_read_file_in_v1", "tool_read_file_out_v1", read_file,
            "Read a UTF-8 file inside the workspace; returns content and sha256."),
    ToolDef("write_file", "tool_write_file_in_v1", "tool_write_file_out_v1", write_file,
            "Write a file inside the workspace under a write_claim_v1 whose expected_hash is the "
            "sha256 of the current content."),
    ToolDef("list_dir", "tool_list_dir_in_v1", "tool_list_dir_out_v1", list_dir,
            "List a directory inside the workspace."),
)

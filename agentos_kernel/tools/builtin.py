"""Builtin L1 tools: echo, read_file, write_file (protected write), list_dir.

File tools are confined to the workspace: a path that escapes it (`..`, an absolute path,
a symlink pointing out), or that no file system could hold (a NUL, a name over NAME_MAX
bytes, a path over PATH_MAX), is `PATH_DENIED`. write_file writes only inside the
workspace's `writable` folders and never a contract or `sessions/` (write_scope.py).
list_dir leaves out links that lead outside. Every path in a result or an error is relative,
so logs do not depend on where the workspace lives (byte-identical logs across machines in
deterministic mode).
"""

from __future__ import annotations

import hashlib
import os
import reprlib
import tempfile
from pathlib import Path
from typing import Any

from ..errors import DomainError, Err, ErrorCode, Ok, Result
from .dispatch import ToolContext, ToolDef

MAX_READ_BYTES = 1_000_000
NAME_MAX, PATH_MAX = 255, 4096  # Linux's limits, in bytes
_ARG = reprlib.Repr()
_ARG.maxstring = 120  # a path argument in a message: long enough to read, never 4 KB


def sha256_of(text: str) -> str:
    """The spec's content hash for protected writes."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _denied(rel: str, why: str) -> Err:
    return Err(DomainError("gate", ErrorCode.PATH_DENIED, f"path {_ARG.repr(rel)} {why}"))


def _confine(ctx: ToolContext, rel: str, *, writing: bool = False) -> Path | Err:
    if "\0" in rel:
        return _denied(rel, "contains a NUL character; no file name can")
    if len(rel.encode("utf-8", "surrogatepass")) > PATH_MAX or any(
            len(part.encode("utf-8", "surrogatepass")) > NAME_MAX for part in rel.split("/")):
        return _denied(rel, f"is too long: at most {NAME_MAX} bytes per name and {PATH_MAX} in all")
    root = ctx.workspace.resolve()
    try:
        target = (root / rel).resolve()
    except (OSError, RuntimeError, ValueError) as exc:  # a symlink loop, an unencodable name
        return _denied(rel, f"cannot be resolved ({type(exc).__name__})")
    if not target.is_relative_to(root):
        return _denied(rel, "escapes the workspace; use a path inside it")
    if writing:
        why = ctx.scope.refusal(target)
        if why:
            return _denied(rel, why)
    return target


def _os_error(rel: str, exc: OSError) -> Err:
    """An OSError as a tool error naming the argument, never the absolute path."""
    return Err(DomainError("tool", ErrorCode.TOOL_ERROR,
                           f"{_ARG.repr(rel)}: {exc.strerror or type(exc).__name__}"))


def _rel(ctx: ToolContext, p: Path) -> str:
    return p.relative_to(ctx.workspace.resolve()).as_posix() or "."


def echo(args: dict[str, Any], ctx: ToolContext) -> Result[Any]:
    return Ok({"text": args["text"]})


def read_file(args: dict[str, Any], ctx: ToolContext) -> Result[Any]:
    target = _confine(ctx, args["path"])
    if isinstance(target, Err):
        return target
    try:
        return _read(args, ctx, target)
    except OSError as exc:
        return _os_error(args["path"], exc)


def _read(args: dict[str, Any], ctx: ToolContext, target: Path) -> Result[Any]:
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
    if path.exists() and not path.is_file():  # a directory, or a FIFO that would block the read
        return Err(DomainError("tool", ErrorCode.TOOL_ERROR, f"{who}: {why}: {path.name!r} is not a "
                                                             "regular file"))
    current = path.read_text(encoding="utf-8") if path.exists() else ""
    if expected_hash or path.exists():
        actual = sha256_of(current)
        if actual != expected_hash:
            return Err(DomainError("lock", ErrorCode.WRITE_CONFLICT,
                                   f"{who}: {why}: expected_hash {expected_hash[:12] or '(empty)'}"
                                   f"… does not match the file's current sha256 {actual[:12]}…; "
                                   "read the file again and retry with its hash"))
    path.parent.mkdir(parents=True, exist_ok=True)
    # A new file of our own (O_EXCL): a fixed temp name could be a planted symlink pointing out.
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name[:200]}.", suffix=".agentos-tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(new_text)
        os.replace(tmp, path)  # atomic: a crash never leaves a half-written file
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return Ok({"path": str(path), "hash": sha256_of(new_text)})


def write_file(args: dict[str, Any], ctx: ToolContext) -> Result[Any]:
    target = _confine(ctx, args["path"], writing=True)
    if isinstance(target, Err):
        return target
    claim = args["claim"]
    try:
        done = protected_write(target, args["content"], claim["expected_hash"], claim["who"], claim["why"])
    except OSError as exc:
        return _os_error(args["path"], exc)
    except UnicodeDecodeError:  # the current content, read for its hash
        return Err(DomainError("tool", ErrorCode.TOOL_ERROR, f"{_ARG.repr(args['path'])} is not "
                                                             "UTF-8 text"))
    if isinstance(done, Err):
        return done
    return Ok({"path": _rel(ctx, target), "sha256": done.value["hash"],
               "bytes": len(args["content"].encode("utf-8"))})


def list_dir(args: dict[str, Any], ctx: ToolContext) -> Result[Any]:
    rel = args.get("path", ".")
    target = _confine(ctx, rel)
    if isinstance(target, Err):
        return target
    if not target.is_dir():
        return Err(DomainError("tool", ErrorCode.TOOL_ERROR, f"{_ARG.repr(rel)} is not a directory"))
    root = ctx.workspace.resolve()
    entries = []
    try:
        for p in sorted(target.iterdir(), key=lambda x: x.name):
            if p.name.startswith("."):
                continue
            if p.is_symlink() and not _inside(p, root):
                continue  # a link out (or a dangling one): not even its size is read
            kind = "dir" if p.is_dir() else "file"
            entries.append({"name": p.name, "kind": kind,
                            "size": p.stat().st_size if kind == "file" else 0})
    except OSError as exc:
        return _os_error(rel, exc)
    return Ok({"path": _rel(ctx, target), "entries": entries})


def _inside(link: Path, root: Path) -> bool:
    try:
        real = link.resolve(strict=True)
    except (OSError, RuntimeError):
        return False
    return real.is_relative_to(root)


# What each builtin declares about its effects (served to MCP clients as `annotations`): all
# four stay inside the workspace (open_world False); write_file replaces a file's content, and
# the same call again changes nothing more (its claim's expected_hash no longer matches).
BUILTIN_TOOLS = (
    ToolDef("echo", "tool_echo_in_v1", "tool_echo_out_v1", echo, "Return the given text unchanged.",
            confined=True, read_only=True, open_world=False, title="Echo"),
    ToolDef("read_file", "tool_read_file_in_v1", "tool_read_file_out_v1", read_file,
            "Read a UTF-8 file inside the workspace; returns content and sha256.", confined=True,
            read_only=True, open_world=False, title="Read a workspace file"),
    ToolDef("write_file", "tool_write_file_in_v1", "tool_write_file_out_v1", write_file,
            "Write a file inside the workspace's writable folders (notes/ by default) under a "
            "write_claim_v1 whose expected_hash is the sha256 of the current content.",
            confined=True, destructive=True, idempotent=True, open_world=False,
            title="Write a workspace file"),
    ToolDef("list_dir", "tool_list_dir_in_v1", "tool_list_dir_out_v1", list_dir,
            "List a directory inside the workspace.", confined=True, read_only=True,
            open_world=False, title="List a workspace directory"),
)

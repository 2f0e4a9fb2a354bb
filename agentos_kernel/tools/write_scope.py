"""Where a tool may write (L1): the workspace's `writable` folders, and never a contract.

The rule is an allow-list, so it fails closed: a write tool writes only strictly inside one of
the folders agentos.yaml lists under `writable:` (default `notes/`). Independently of that
list, a deny-list names what no `writable` entry can re-open, because a tool that could write
it could change what the runtime runs: agentos.yaml (and a file of that name at any depth,
which `agentos` run from a folder below would take as its workspace), agents/, skills/ and
every skill root, schemas/, workflows/, hooks/, every file a command hook or an MCP server's
command names inside the workspace, a hook handler's module when it lives in the workspace,
.git/ and sessions/. Paths are compared after symlinks are resolved (a link in notes/ to
agentos.yaml is agentos.yaml), and the deny-list compares them case-folded, so a
case-insensitive file system cannot alias a contract.

A `writable` entry that leaves the workspace, is the workspace itself, or overlaps a contract
is a ContractError at load naming agentos.yaml, `writable[i]` and the fix. Contracts change
only by hand and are read through the validated load (runtime_cache.py reloads on a change).
"""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Iterable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..config import CONFIG_NAME, DEFAULT_WRITABLE
from ..errors import ContractError, Problem

if TYPE_CHECKING:
    from ..config import WorkspaceConfig

CONTRACTS = ("agentos.yaml", "agents", "skills", "schemas", "workflows", "hooks", ".git", "sessions")
"""Top-level names no tool may write, whatever `writable` says (docs/reliability.md)."""
CONTRACT_WHY = "a contract no tool may write (edit it by hand; it is loaded validated)"
LOGS_WHY = "the event logs, which no tool may write"


@dataclass(frozen=True)
class Denied:
    """One path no tool may write, nor anything under it."""

    path: str
    """Absolute, resolved (and, for a lexical twin, as named)."""
    shown: str
    """Relative to the workspace, for messages (`skills/`, `hooks/check.py`)."""
    why: str
    """What it is: a contract, the event logs, the file `hooks[2]` runs."""


@dataclass(frozen=True)
class WriteScope:
    """Where the tools of one runtime may write (ToolContext.scope)."""

    root: Path
    """The workspace root, resolved."""
    writable: tuple[Path, ...]
    """Resolved folders tools may write strictly inside."""
    denied: tuple[Denied, ...]
    """What no tool may write, checked before `writable`."""

    def __repr__(self) -> str:
        return f"WriteScope({str(self.root)!r}, writable: {self.shown_writable}, {len(self.denied)} denied)"

    @property
    def shown_writable(self) -> str:
        """The writable folders as messages name them (`notes/`)."""
        names = [_shown(str(self.root), str(w)) + "/" for w in self.writable]
        return ", ".join(names) or "none (agentos.yaml has writable: [])"

    def denial(self, target: Path) -> str | None:
        """Why `target` (resolved) is on the deny-list, else None."""
        folded = str(target).casefold()
        for d in self.denied:
            mine = d.path.casefold()
            if folded == mine:
                return f"is {d.shown}, {d.why}"
            if folded.startswith(mine.rstrip("/") + "/"):
                return f"is under {d.shown}, {d.why}"
        if target.name.casefold() == CONFIG_NAME:
            return f"is named {CONFIG_NAME}, which would configure a workspace; {CONTRACT_WHY}"
        return None

    def holds(self, target: Path) -> str | None:
        """Why `target` (resolved) is a folder holding something on the deny-list, else None."""
        prefix = str(target).casefold().rstrip("/") + "/"
        for d in self.denied:
            if d.path.casefold().startswith(prefix):
                return f"holds {d.shown}, {d.why}"
        return None

    def refusal(self, target: Path) -> str | None:
        """Why a tool may not write `target` (resolved): the deny-list, then the allow-list."""
        why = self.denial(target)
        if why:
            return why
        text = str(target)
        if any(text.startswith(str(w).rstrip("/") + "/") for w in self.writable):
            return None
        return (f"is outside the folders tools may write ({self.shown_writable}); write there, "
                "or list the folder under writable: in agentos.yaml")

    def granting(self, folder: Path) -> WriteScope:
        """This scope plus `folder` (resolved): an L8 artifact's directory, for one persona
        call. The deny-list still applies inside it."""
        return replace(self, writable=(*self.writable, folder))


# The deny-list is built on every load (every `agentos` command), so on strings: pathlib and
# a pure-Python realpath of each full path cost ~2 ms here; this costs ~0.1 ms.

def _inside(path: str, root: str) -> bool:
    return path.startswith(root.rstrip("/") + "/")


def _shown(root: str, path: str) -> str:
    return path[len(root.rstrip("/")) + 1:] if _inside(path, root) else path


def _real(path: str, root: str | None = None) -> str:
    """`path` (normalised) with symlinks resolved as far as they exist; never raises. Under
    `root` (itself resolved) only the parts below it are lstat'ed, and realpath runs only
    when one is a link."""
    try:
        if root is not None and _inside(path, root):
            here = root.rstrip("/")
            for part in path[len(here) + 1:].split("/"):
                here = f"{here}/{part}"
                if os.path.islink(here):
                    return os.path.realpath(path)
            return path
        return os.path.realpath(path)
    except (OSError, ValueError):
        return os.path.normpath(path)


def _both(root: str, path: str, shown: str, why: str) -> list[Denied]:
    """The path as named (normalised) and resolved: a link could be swapped for a file."""
    named = os.path.normpath(path)
    real = _real(named, root)
    return [Denied(p, shown, why) for p in dict.fromkeys((named, real))]


def _argv_paths(root: str, argv: Iterable[str]) -> list[str]:
    """The entries of a command line that name a path inside the workspace (resolved or as
    written), whether or not the file exists yet: a tool could otherwise create it."""
    found = []
    for arg in argv:
        for text in (arg, arg.partition("=")[2]):  # `--config=hooks/x.yaml` names a file too
            if not text or "\0" in text or len(text) > 4096:
                continue
            named = os.path.normpath(os.path.join(root, text))  # an absolute text stays itself
            found += [p for p in dict.fromkeys((named, _real(named, root))) if _inside(p, root)]
    return found


def _module_paths(root: str, dotted: str) -> list[str]:
    """A hook handler's top-level package (or module file) when it lives in the workspace."""
    name = dotted.partition(":")[0]
    origin = getattr(sys.modules.get(name), "__file__", None)
    if not origin:
        return []
    path = _module_file(origin)
    if not _inside(path, root):
        return []
    top = os.path.dirname(path) if os.path.basename(path) == "__init__.py" else path
    for _ in name.split(".")[1:]:
        top = os.path.dirname(top)
    return [top] if _inside(top, root) else [path]


@functools.lru_cache(maxsize=256)
def _module_file(origin: str) -> str:
    """A module's file, resolved once: an imported module's file does not move."""
    return _real(os.path.abspath(origin))


def denied_paths(root: Path, config: WorkspaceConfig | None, hooks: Iterable[dict[str, Any]],
                 contract_dirs: Iterable[Path] = ()) -> list[Denied]:
    """The deny-list of a workspace (`root` resolved): its contracts, its logs, and what its
    hooks and MCP servers run. `contract_dirs` are the contract folders actually loaded (the
    reference ones when the workspace has none, so a bridged server is not pointed at them)."""
    top = str(root)
    out: list[Denied] = []
    for name in CONTRACTS:
        shown = name if name == CONFIG_NAME else f"{name}/"
        out += _both(top, f"{top}/{name}", shown, LOGS_WHY if name == "sessions" else CONTRACT_WHY)
    roots = config.skill_roots if config is not None else ("skills",)
    for r in roots:
        out += _both(top, os.path.join(top, r), f"{r.rstrip('/')}/ (a skill root)", CONTRACT_WHY)
    for d in map(str, contract_dirs):  # the workspace's own are covered above: the reference's
        if os.path.dirname(os.path.normpath(d)) != top:
            out += _both(top, d, _shown(top, _real(d)), CONTRACT_WHY)
    for i, entry in enumerate(hooks):
        where = f"hooks[{i}]"
        if "command" in entry:
            argv = [str(a) for a in entry["command"]]
            runs = [sys.executable, *argv[1:]] if argv[:1] == ["python"] else argv
            for p in _argv_paths(top, runs):
                out.append(Denied(p, _shown(top, p), f"which {where}'s command runs; no tool "
                                                     "may write it"))
        elif "handler" in entry:
            for p in _module_paths(top, str(entry["handler"])):
                out.append(Denied(p, _shown(top, p), f"the module of {where}'s handler; no "
                                                     "tool may write it"))
    for server in config.mcp_servers if config is not None else ():
        env = [part for v in server.env.values() for part in v.split(os.pathsep)]
        for p in _argv_paths(top, [*server.command, *env]):
            out.append(Denied(p, _shown(top, p), f"which {server.where}'s command runs; "
                                                 "no tool may write it"))
    first: dict[str, Denied] = {}  # each path once, where it was first found
    for found in out:
        first.setdefault(found.path, found)
    return list(first.values())


def _entry_problem(root: Path, entry: str, denied: list[Denied]) -> tuple[str | None, Path]:
    """Why one `writable` entry cannot be a data folder (None: it can), and where it leads."""
    top = str(root)
    lexical = os.path.normpath(os.path.join(top, entry))
    if os.path.isabs(entry) or "\0" in entry:
        return (f"{entry!r} is not a folder name inside the workspace; give a relative path "
                "such as notes"), Path(lexical)
    if ".." in entry.split("/") or not (_inside(lexical, top) or lexical == top):
        return (f"{entry!r} leads out of the workspace; give a folder inside it, such as notes",
                Path(lexical))
    real = _real(lexical, top)
    if not _inside(real, top) and real != top:
        return (f"{entry!r} is a symlink leading out of the workspace; give a real folder "
                "inside it, such as notes"), Path(real)
    if top in (real, lexical):
        return (f"{entry!r} is the whole workspace, which holds its contracts; give a data "
                "folder such as notes"), Path(real)
    scope = WriteScope(root, (), tuple(denied))
    for p in map(Path, dict.fromkeys((lexical, real))):
        why = scope.denial(p)
        if why:
            return f"{entry!r} {why}; it cannot be writable: name a data folder such as notes", Path(real)
        why = scope.holds(p)
        if why:
            return (f"{entry!r} {why}; it cannot be writable: name a data folder such as notes, "
                    "or move that file out of it"), Path(real)
    return None, Path(real)


def build_scope(root: Path, config: WorkspaceConfig | None, hooks: Iterable[dict[str, Any]] = (),
                contract_dirs: Iterable[Path] = ()) -> WriteScope:
    """The WriteScope of a workspace; ContractError names each bad `writable[i]`."""
    root = Path(_real(os.path.abspath(root)))
    denied = denied_paths(root, config, hooks, contract_dirs)
    entries = config.writable if config is not None else DEFAULT_WRITABLE
    shown = config.file if config is not None else CONFIG_NAME
    problems, folders = [], []
    for i, entry in enumerate(entries):
        why, folder = _entry_problem(root, entry, denied)
        if why:
            problems.append(Problem(shown, f"writable[{i}]", why))
        else:
            folders.append(folder)
    if problems:
        raise ContractError(problems)
    return WriteScope(root, tuple(folders), tuple(denied))


def default_scope(root: Path) -> WriteScope:
    """The scope of a workspace with no `writable:` and no hooks (a ToolContext made by hand)."""
    return build_scope(root, None)


__all__ = ["CONTRACTS", "DEFAULT_WRITABLE", "Denied", "WriteScope", "build_scope", "default_scope",
           "denied_paths"]

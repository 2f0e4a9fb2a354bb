"""One Runtime per workspace for the notebook path (`%agent`), rebuilt when a contract changes.

`Runtime.from_workspace` reads and checks every contract file (agentos.yaml, schemas/,
agents/, skills/, workflows/): most of an `%agent` call's time. `cached_runtime` keeps the
Runtime it built with a signature of those files, (path, mtime_ns, size, inode) of each,
and hands the same Runtime back while the signature is unchanged; any file added,
removed, edited or replaced makes the next call load the workspace again, so an edited
SKILL.md or agentos.yaml is seen on the very next request. On Linux the files are watched
with inotify instead (contract_watch.py): one read per call instead of a stat per file, the
same guarantee. A reused Runtime counts
session ids afresh, as a new one would. Workspaces that bridge MCP servers are not cached
(a server's tools can change without any file here changing).
"""

from __future__ import annotations

import os
import stat
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from ..kernel import Runtime
from ..providers.faults import FaultPlan
from ..workspace import Workspace, find_workspace
from .contract_watch import ContractWatch

KEEP = 8
"""Runtimes kept (least recently used dropped first): a class opens a few workspaces."""

Signature = tuple[tuple[str, int, int, int], ...]


@dataclass(frozen=True)
class _Entry:
    runtime: Runtime
    """The Runtime built."""
    faults: FaultPlan | None
    """The fault plan it was built with (compared by value)."""
    roots: tuple[str, ...]
    """Its config's skill_roots, which the signature covers."""
    signature: Signature | None
    """The contract files when it was built (None when `watch` covers them)."""
    watch: ContractWatch | None = None
    """inotify on the contract files since just before it was built, where available."""

    def stale(self, ws: Workspace) -> bool:
        """True when a contract file changed since the Runtime was built."""
        if self.watch is not None:
            return self.watch.changed()
        return signature(ws, self.roots) != self.signature

    def close(self) -> None:
        if self.watch is not None:
            self.watch.close()


_CACHE: OrderedDict[tuple[str, str, bool, str | None, str | None], _Entry] = OrderedDict()


def contract_files(ws: Workspace, skill_roots: Iterable[str]) -> list[Path]:
    """The files and directories a Runtime of `ws` is built from (a directory stands for
    every file under it)."""
    dirs = [ws.contract_dir(n) for n in ("schemas", "agents", "workflows")]
    dirs += [ws.contract_dir("skills") if r == "skills" else ws.root / r for r in skill_roots]
    return [ws.config_file, *dirs]


def signature(ws: Workspace, skill_roots: Iterable[str]) -> Signature:
    """(path, mtime_ns, size, inode) of every contract file, in a stable order; a missing
    file or directory is recorded as such (so creating it changes the signature)."""
    out: list[tuple[str, int, int, int]] = []
    for top in contract_files(ws, skill_roots):
        stack = [str(top)]
        while stack:
            path = stack.pop()
            try:
                st = os.stat(path)
            except OSError:
                out.append((path, -1, -1, -1))
                continue
            out.append((path, st.st_mtime_ns, st.st_size, st.st_ino))
            if stat.S_ISDIR(st.st_mode):
                with os.scandir(path) as it:
                    stack.extend(sorted((e.path for e in it), reverse=True))
    return tuple(out)


def cached_runtime(workspace: Path | str | None = None, *, profile: str | None = None,
                   faults: FaultPlan | None = None, cwd: Path | None = None) -> Runtime:
    """`Runtime.from_workspace(workspace, profile=..., faults=..., cwd=...)`, reused while
    the workspace's contract files are unchanged (ContractError exactly as it raises)."""
    ws = find_workspace(Path(workspace) if workspace is not None else None, cwd)
    key = (str(ws.root), str(ws.config_file), ws.bundled, profile, faults.name if faults else None)
    entry = _CACHE.get(key)
    if entry is not None and entry.faults == faults and not entry.stale(ws):
        _CACHE.move_to_end(key)
        entry.runtime.forget_session_ids()
        return entry.runtime
    roots = entry.roots if entry is not None else ("skills",)
    if entry is not None:
        _CACHE.pop(key).close()
    # Taken first: an edit made while loading is seen next time.
    watch = ContractWatch.start(contract_files(ws, roots))
    before = None if watch is not None else signature(ws, roots)
    try:
        rt = Runtime.from_workspace(ws, profile=profile, faults=faults)  # found above: not again
    except BaseException:
        if watch is not None:
            watch.close()
        raise
    found = tuple(rt.config.skill_roots)
    if rt.config.mcp_servers or found != roots:
        if watch is not None:
            watch.close()
        if rt.config.mcp_servers:
            return rt
        watch = ContractWatch.start(contract_files(ws, found))
        before = None if watch is not None else signature(ws, found)
    _CACHE[key] = _Entry(rt, faults, found, before, watch)
    _CACHE.move_to_end(key)
    while len(_CACHE) > KEEP:
        _CACHE.popitem(last=False)[1].close()
    return rt


def clear() -> None:
    """Forget every cached Runtime."""
    while _CACHE:
        _CACHE.popitem()[1].close()

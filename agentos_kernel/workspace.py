"""Where the contracts, the config and the sessions of a run live.

A workspace is found as: the explicit path, else the nearest parent of cwd holding
`agentos.yaml`, else the bundled reference workspace (read-only; sessions then go to
`./sessions` and file tools work in cwd). Each contract directory (schemas/, agents/,
skills/) of a workspace is its own when present, else the reference one.
"""

from __future__ import annotations

import errno
import os
import shutil
import stat
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from .config import CONFIG_NAME
from .errors import ContractError, Problem

CONTRACT_DIRS = ("schemas", "agents", "skills", "workflows")


@cache
def reference_dir() -> Path:
    """The reference workspace: inside the wheel, or the repository root in a checkout (where
    this package is does not change while it runs: found once)."""
    here = Path(__file__).resolve().parent
    packaged = here / "_reference"
    if (packaged / "schemas").is_dir():
        return packaged
    return here.parent


@dataclass(frozen=True)
class Workspace:
    """Resolved locations for one runtime."""

    root: Path
    """Where file tools operate and `sessions/` lives."""
    config_file: Path
    """agentos.yaml in use."""
    bundled: bool
    """True when running on the bundled reference contracts (no agentos.yaml found)."""

    @property
    def sessions(self) -> Path:
        return self.root / "sessions"

    def contract_dir(self, name: str) -> Path:
        """The workspace's own contract directory, else the reference one."""
        if not self.bundled and _is_dir(f"{self.root}/{name}"):  # no Path until one is returned
            return self.root / name
        return reference_dir() / name

    def shown(self, path: Path) -> str:
        """A path for messages and logs: relative to the workspace or the reference. As
        `path.resolve().relative_to(base.resolve()).as_posix()` for each base in turn, on
        strings (three calls a load: their Paths were most of it)."""
        real = _resolved(path)
        for base in (self.root, reference_dir()):
            under = _resolved(base)
            if real == under:
                return "."
            prefix = under if under.endswith("/") else under + "/"
            if real.startswith(prefix):
                return real[len(prefix):]
        return path.as_posix()


def _resolved(path: Path) -> str:
    """`str(path.resolve())` (Python 3.11): realpath, then a stat that turns a symlink loop
    into the RuntimeError `resolve` raises."""
    real = os.path.realpath(path)
    try:
        os.stat(real)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise RuntimeError(f"Symlink loop from {exc.filename!r}") from None
    return real


_IGNORED = (errno.ENOENT, errno.ENOTDIR, errno.EBADF, errno.ELOOP)


def _is_dir(path: str) -> bool:
    """`Path(path).is_dir()`: False where it is missing or unreachable as pathlib ignores,
    any other OSError (a directory that cannot be searched) raised as it raises it."""
    try:
        return stat.S_ISDIR(os.stat(path).st_mode)
    except OSError as exc:
        if exc.errno not in _IGNORED:
            raise
        return False
    except ValueError:  # a NUL in the name
        return False


def find_workspace(explicit: Path | None = None, cwd: Path | None = None) -> Workspace:
    """Resolve a workspace; an explicit path without agentos.yaml is an error."""
    if explicit is not None:
        root = Path(explicit)
        try:
            found = (root / CONFIG_NAME).is_file()
        except OSError as exc:  # a name no file system can hold (too long)
            raise ContractError([Problem(_shown_arg(root), "-", f"cannot be a workspace "
                                         f"({exc.strerror})")]) from None
        if not found:
            raise ContractError([Problem(str(root / CONFIG_NAME), "-",
                                         "no agentos.yaml here; create a workspace with "
                                         f"`agentos init {root}`")])
        real = root.resolve()
        config = real / CONFIG_NAME  # resolved again only when it is a link (one realpath less)
        return Workspace(real, config.resolve() if config.is_symlink() else config, False)
    start = Path(cwd or Path.cwd()).resolve()
    for d in (start, *start.parents):
        if (d / CONFIG_NAME).is_file():
            return Workspace(d, d / CONFIG_NAME, False)
    return Workspace(start, reference_dir() / CONFIG_NAME, True)


class InitError(ValueError):
    """`agentos init` cannot create a workspace at the target; the message says why and how."""


NAME_MAX, PATH_MAX = 255, 4096  # Linux's limits, in bytes


def init_target_problem(dest: Path) -> str | None:
    """Why `dest` cannot become a new workspace (checked before anything is written), or None."""
    text = str(dest)
    if "\0" in text:
        return "contains a NUL character; no directory name can"
    raw = os.fsencode(text)
    if len(raw) > PATH_MAX or any(len(part) > NAME_MAX for part in raw.split(b"/")):
        return f"is too long: at most {NAME_MAX} bytes per name and {PATH_MAX} in all"
    if dest.is_symlink():
        return (f"is a symlink (to {os.readlink(dest)}); give the directory itself, so the "
                "workspace is where you named it")
    if dest.exists() and not dest.is_dir():
        return "exists and is not a directory"
    if (dest / CONFIG_NAME).exists():
        return f"{CONFIG_NAME} already exists in it; init will not overwrite a workspace"
    taken = [n for n in (*CONTRACT_DIRS, CONFIG_NAME) if (dest / n).exists() or (dest / n).is_symlink()]
    if taken:
        return f"already holds {taken[0]}; init writes into a new or empty directory"
    real = Path(os.path.realpath(dest))
    for d in (real, *real.parents):
        if d.name == "sessions" and (d.parent / CONFIG_NAME).is_file():
            return (f"is inside {d}, the event logs of the workspace {d.parent}; "
                    "create the workspace somewhere else")
    return None


def create_workspace(dest: Path) -> tuple[str, ...]:
    """Copy the reference contracts and agentos.yaml into `dest` (created if missing);
    InitError names the target and the reason. Returns the contract dirs copied."""
    dest = Path(dest)
    try:
        problem = init_target_problem(dest)
    except OSError as exc:  # e.g. a parent directory that cannot be searched
        problem = f"cannot be checked ({exc.strerror or exc})"
    if problem:
        raise InitError(f"{_shown_arg(dest)}: {problem}")
    ref = reference_dir()
    try:
        dest.mkdir(parents=True, exist_ok=True)
        copied = []
        for name in CONTRACT_DIRS:
            if (ref / name).is_dir():
                shutil.copytree(ref / name, dest / name, dirs_exist_ok=False,
                                ignore=shutil.ignore_patterns("__pycache__"))
                copied.append(name)
        shutil.copy2(ref / CONFIG_NAME, dest / CONFIG_NAME)
    except OSError as exc:
        raise InitError(f"{_shown_arg(dest)}: cannot create the workspace ({exc.strerror or exc})") from None
    return tuple(copied)


def _shown_arg(path: Path) -> str:
    """A path as typed, quoted when it holds characters a terminal would not show."""
    text = str(path)
    return text if text.isprintable() else repr(text)

"""Where the contracts, the config and the sessions of a run live.

A workspace is found as: the explicit path, else the nearest parent of cwd holding
`agentos.yaml`, else the bundled reference workspace (read-only; sessions then go to
`./sessions` and file tools work in cwd). Each contract directory (schemas/, agents/,
skills/) of a workspace is its own when present, else the reference one.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .errors import ContractError, Problem
from .profile import CONFIG_NAME

CONTRACT_DIRS = ("schemas", "agents", "skills", "workflows")


def reference_dir() -> Path:
    """The reference workspace: inside the wheel, or the repository root in a checkout."""
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
        own = self.root / name
        if not self.bundled and own.is_dir():
            return own
        return reference_dir() / name

    def shown(self, path: Path) -> str:
        """A path for messages and logs: relative to the workspace or the reference."""
        for base in (self.root, reference_dir()):
            try:
                return path.resolve().relative_to(base.resolve()).as_posix()
            except ValueError:
                continue
        return path.as_posix()


def find_workspace(explicit: Path | None = None, cwd: Path | None = None) -> Workspace:
    """Resolve a workspace; an explicit path without agentos.yaml is an error."""
    if explicit is not None:
        root = Path(explicit)
        if not (root / CONFIG_NAME).is_file():
            raise ContractError([Problem(str(root / CONFIG_NAME), "-",
                                         "no agentos.yaml here; create a workspace with "
                                         f"`agentos init {root}`")])
        return Workspace(root.resolve(), (root / CONFIG_NAME).resolve(), False)
    start = Path(cwd or Path.cwd()).resolve()
    for d in (start, *start.parents):
        if (d / CONFIG_NAME).is_file():
            return Workspace(d, d / CONFIG_NAME, False)
    return Workspace(start, reference_dir() / CONFIG_NAME, True)

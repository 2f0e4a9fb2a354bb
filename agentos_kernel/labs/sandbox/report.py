"""What a sandboxed run reported: the protection layers that held (written by `_confine.py`
before the command starts) and what the command tried outside its box (`_audit_site.py`).

Both come as JSON lines on one report file the grader opened outside the box; see run.py.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .run import Protections

LAYER_UNSHARE = "namespaces"


@dataclass(frozen=True)
class Layer:
    """One protection and whether it held for a run."""

    name: str
    """limits, capabilities, landlock or namespaces."""
    ok: bool
    """True when it was applied."""
    what: str
    """What it enforced, or why it could not."""


@dataclass(frozen=True)
class Attempt:
    """Something the student's code tried outside its sandbox (denied)."""

    kind: str
    """read, write, list, connect, bind, sendto or resolve."""
    target: str
    """The absolute path, host:port or host name."""

    def describe(self) -> str:
        """e.g. 'tried to read /etc/passwd'."""
        if self.kind in ("read", "write", "list"):
            return f"tried to {self.kind} {self.target}, outside the submission"
        if self.kind == "resolve":
            return f"tried to resolve host {self.target} (no network)"
        return f"tried to {self.kind} to {self.target} (no network)"


def read_report(path: Path, prot: Protections) -> tuple[tuple[Layer, ...], tuple[Attempt, ...]]:
    """Layers count only before the launcher's `launched` line: it writes them before any
    student code runs, so a forged 'ok' line written later by the student is ignored."""
    layers: list[Layer] = []
    if prot.unshare:
        layers.append(Layer(LAYER_UNSHARE, True, "network and pid namespaces (no interface; all "
                                                 "processes die with the run)"))
    else:
        layers.append(Layer(LAYER_UNSHARE, False, prot.missing[0]))
    attempts: list[Attempt] = []
    launched = False
    with path.open("rb") as f:
        data = f.read(1 << 20)
    for line in data.splitlines():
        try:
            item = json.loads(line)
        except ValueError:
            continue
        if not isinstance(item, dict):
            continue
        if item.get("launched") is True:
            launched = True
        elif isinstance(item.get("refused"), list) and not launched:
            layers.append(Layer("launcher", False, "refused to start the command: "
                                + ", ".join(map(str, item["refused"])) + " could not be applied"))
        elif "layer" in item and not launched and isinstance(item["layer"], dict):
            d = item["layer"]
            layers.append(Layer(str(d.get("name")), bool(d.get("ok")), str(d.get("what"))))
        elif isinstance(item.get("attempt"), dict):
            a = item["attempt"]
            attempt = Attempt(str(a.get("kind")), str(a.get("target")))
            if attempt not in attempts:
                attempts.append(attempt)
    if not launched and not any(x.name == "launcher" for x in layers):
        layers.append(Layer("launcher", False, "the confinement launcher did not start the command"))
    return tuple(layers), tuple(attempts)

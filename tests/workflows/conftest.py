"""Fixtures for the L8 workflow-plane tests: a scratch workspace per test (a copy of the
reference contracts, as `agentos init` makes it) and a helper that runs a cycle in it.

Each test runs with its current directory in its own tmp dir, so nothing (sessions,
artifacts under docs/) is ever written into the checkout.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from agentos_kernel import Err, Event, Runtime
from agentos_kernel.providers.faults import load_fault_plan
from agentos_kernel.workflows.engine import CycleResult

PROMPT = "review the change in auth.py"


@dataclass
class CycleRun:
    """One finished cycle and its log."""

    rt: Runtime
    result: CycleResult
    events: list[Event]

    def of(self, type_: str) -> list[dict[str, Any]]:
        """Payloads of the events of one type, in log order."""
        return [e.payload for e in self.events if e.type == type_]

    def types(self) -> list[str]:
        return [e.type for e in self.events]


RunCycle = Callable[..., CycleRun]


@pytest.fixture(autouse=True)
def _own_cwd(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)


@pytest.fixture
def ws(workspace: Path) -> Path:
    """A fresh workspace made by `agentos init` (tests/conftest.py's `workspace`)."""
    return workspace


@pytest.fixture
def run_cycle(ws: Path) -> RunCycle:
    """`run_cycle("code-review", faults="p0_finding", mode="autofix")` -> CycleRun."""

    def run(cycle: str, prompt: str = PROMPT, *, faults: str | None = None, mode: str | None = None,
            session_id: str | None = None, workspace: Path | None = None) -> CycleRun:
        rt = Runtime.from_workspace(workspace or ws, faults=load_fault_plan(faults) if faults else None)
        got = rt.run_cycle(cycle, prompt, session_id=session_id, mode=mode)
        assert not isinstance(got, Err), got
        return CycleRun(rt, got.value, rt.events(got.value.session_id))

    return run


def write(path: Path, text: str) -> Path:
    """Write a Markdown contract file (creating its directory)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text.lstrip("\n"), encoding="utf-8")
    return path

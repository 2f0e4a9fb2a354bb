"""Values shared by the core tests (the fixtures that build them live in conftest.py)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import agentos_kernel
from agentos_kernel import Err, Event, Runtime
from agentos_kernel.store.events import read_log

REPO = Path(agentos_kernel.__file__).resolve().parents[1]
CANONICAL = "hello, greet Ada"
NOTE_PROMPT = 'note "buy milk"'
"""A request the append-note skill takes (read_file, then a protected write_file)."""


@dataclass
class Run:
    """One finished request and its log, with the lookups tests need."""

    rt: Runtime
    result: Any
    """Ok(RunResult) or Err(DomainError)."""
    session_id: str
    events: list[Event]

    @property
    def ok(self) -> bool:
        return not isinstance(self.result, Err)

    @property
    def code(self) -> str | None:
        """The Err's code (None when the run is ok)."""
        return self.result.error.code if isinstance(self.result, Err) else None

    @property
    def log_path(self) -> Path:
        return self.rt.store.path(self.session_id)

    def types(self) -> list[str]:
        return [e.type for e in self.events]

    def of(self, *types: str) -> list[Event]:
        return [e for e in self.events if e.type in types]

    def error_codes(self) -> list[str]:
        """Codes of the domain.error events, in log order."""
        return [e.payload["code"] for e in self.of("domain.error")]

    def hooks(self, hook: str) -> list[dict[str, Any]]:
        """Payloads of hook.fired events for one hook."""
        return [e.payload for e in self.of("hook.fired") if e.payload["hook"] == hook]

    def invoked(self) -> list[str]:
        """Names of the tools that reached tool.invoke."""
        return [e.payload["name"] for e in self.of("tool.invoke")]


def finish(rt: Runtime, result: Any) -> Run:
    sid = result.error.session_id if isinstance(result, Err) else result.value.session_id
    assert sid is not None, f"the request never opened a session: {result}"
    return Run(rt, result, sid, list(read_log(rt.store.path(sid))))


RunRequest = Callable[..., Run]
Cli = Callable[..., tuple[int, str, str]]

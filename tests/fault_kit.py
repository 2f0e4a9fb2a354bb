"""Test doubles and helpers shared by the pinned-feature, fault and secrets suites.

Providers here stand in for a misbehaving model or backend; they are given to a Runtime
through its `provider_factory` seam (the one rerun.py uses for its cassette), so the rest
of the kernel runs unchanged."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from agentos_kernel import Ok, Runtime
from agentos_kernel.labs.audit.log import audit_log
from agentos_kernel.providers.base import CompletionRequest, CompletionResponse, Usage
from agentos_kernel.providers.scripted import ScriptedProvider
from agentos_kernel.tools.dispatch import ToolCall

from .helpers import Run


def add_profile(workspace: Path, name: str, **fields: Any) -> None:
    """Add a profile to the workspace's agentos.yaml: the scripted one with `fields` over it."""
    config = workspace / "agentos.yaml"
    doc = yaml.safe_load(config.read_text(encoding="utf-8"))
    doc["profiles"][name] = {**doc["profiles"]["scripted"], **fields}
    config.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")


@dataclass
class LoopingWorker:
    """The scripted model, except that the worker asks for `echo` on its first `loops` calls
    (a model that keeps reaching for tools); every other answer is the scripted one."""

    loops: int
    """How many worker calls answer with a tool call before the model gives its report."""
    brain: ScriptedProvider = field(default_factory=ScriptedProvider)
    worker_calls: int = 0
    requests: list[CompletionRequest] = field(default_factory=list)
    name: str = "looping"

    def complete(self, request: CompletionRequest) -> Any:
        self.requests.append(request)
        if request.tools and "worker_report_v1" in request.messages[0]["content"]:
            self.worker_calls += 1
            if self.worker_calls <= self.loops:
                call = ToolCall(f"t{self.worker_calls}", "echo", {"text": f"round {self.worker_calls}"})
                return Ok(CompletionResponse("", (call,), "tool_use", Usage(10, 5), "looping-1"))
        return self.brain.complete(request)


@dataclass
class Raising:
    """A provider whose every call raises `exc` (a crash, or Ctrl-C, inside a model call)."""

    exc: BaseException
    name: str = "raising"

    def complete(self, request: CompletionRequest) -> Any:
        raise self.exc


def use_provider(rt: Runtime, provider: Any) -> Runtime:
    """Make every session of `rt` use `provider`."""
    rt.provider_factory = lambda profile, faults: provider
    return rt


def assert_closed_not_ok(run: Run, reason_part: str) -> None:
    """The session closed cleanly: `session.close` last, ok false, the reason named, and the
    log passes the spec's audit (labs.audit)."""
    last = run.events[-1]
    assert last.type == "session.close", run.types()[-3:]
    assert last.payload["ok"] is False and reason_part in last.payload["reason"], last.payload
    report = audit_log(run.log_path)
    assert report.ok, [str(g) for g in report.gaps]


def process_gone(pid: int) -> bool:
    """True when `pid` no longer runs (a zombie waiting for a reaper counts as gone)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat.rsplit(")", 1)[1].split()[0] in ("Z", "X")

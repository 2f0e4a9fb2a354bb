"""Per-request state shared by the layers while one request runs (not persisted: the
log is the state; this only holds handles and counters)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..config import RuntimeProfile
from ..hooks import HookBus
from ..providers.base import Provider
from ..schemas.registry import SchemaRegistry
from ..skills.registry import Skill
from ..store.recorder import SessionLog
from ..tools.dispatch import ToolContext, ToolRegistry
from .agents import AgentDef


@dataclass(frozen=True)
class RunResult:
    """What a finished request left behind (the log holds everything else)."""

    session_id: str
    """Where to find its log: sessions/<id>/.events.jsonl."""
    ok: bool
    """The session closed ok."""
    output: str | None
    """The worker's output."""
    report: dict[str, Any] | None
    """The last worker_report_v1."""
    review: dict[str, Any] | None
    """The last review_result_v1."""
    log_path: Path
    """The session's log file."""


@dataclass
class Session:
    """Handles one request's layers use: its log, provider, tools, hooks and skill scope."""

    log: SessionLog
    profile: RuntimeProfile
    provider: Provider
    tools: ToolRegistry
    hooks: HookBus
    schemas: SchemaRegistry
    agents: dict[str, AgentDef]
    tool_context: ToolContext
    skill: Skill | None = None
    allowed_tools: frozenset[str] = frozenset()
    calls: int = 0

    @property
    def session_id(self) -> str:
        return self.log.session_id

    def agent(self, role: str) -> AgentDef:
        """The agent playing `role` under the profile; KeyError names the bad key."""
        name = self.profile.agent_for(role)
        try:
            return self.agents[name]
        except KeyError:
            raise KeyError(f"no agent {name!r} for role {role!r}; agents: "
                           f"{', '.join(sorted(self.agents))}") from None

    def skill_info(self) -> dict[str, Any]:
        """What roles are told about the selected skill."""
        if self.skill is None:
            return {"name": None, "allowed_tools": [], "procedure": ""}
        return {"name": self.skill.name, "allowed_tools": sorted(self.allowed_tools,
                                                                 key=self.skill.allowed_tools.index),
                "procedure": self.skill.body}

    def tool_specs(self) -> tuple[dict[str, Any], ...]:
        """Specs of the tools in scope that exist, for the model (refs resolved)."""
        specs = []
        for name in self.skill_info()["allowed_tools"]:
            tool = self.tools.find(name)
            if tool is not None:
                specs.append({"name": name, "description": tool.description,
                              "input_schema": self.schemas.resolved(tool.schema_in)})
        return tuple(specs)

    def maybe_compact(self, role: str, messages: list[dict[str, str]]) -> list[dict[str, str]]:
        """Past the profile's compact_after, ask PreCompact; on allow keep the system prompt,
        the task and the newest half, and log what was dropped."""
        limit = self.profile.compact_after
        if len(messages) <= limit:
            return messages
        cut = len(messages) - max(2, limit // 2)
        # A tool result must keep the assistant turn that asked for it: the chat APIs
        # refuse a tool message whose call is not in the conversation.
        while cut > 2 and messages[cut]["role"] == "tool":
            cut -= 1
        if cut <= 2:
            return messages  # nothing would be dropped
        gate, _ = self.hooks.fire("PreCompact", {"role": role, "messages": len(messages)},
                                  self.log)
        if gate.decision == "deny":
            return messages
        kept = messages[:2] + messages[cut:]
        self.log.append("context.compacted", role, {"role": role,
                                                    "dropped": len(messages) - len(kept),
                                                    "kept": len(kept)})
        return kept

"""The values replay folds a log into: `Snapshot` (snapshot_v1) with its `Cost`, and the
`Mark` a ReplayIndex keeps every k events (replay.py folds; summary.py has the bounded
snapshot_v2)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass(frozen=True)
class Cost:
    """Tokens and money spent by the session's model calls."""

    input_tokens: int = 0
    """Tokens sent to models."""
    output_tokens: int = 0
    """Tokens received."""
    cost_usd: float = 0.0
    """Sum of the calls' cost_usd."""


@dataclass(frozen=True)
class Snapshot:
    """The state of a session, recomputed from its log (snapshot_v1)."""

    session_id: str | None = None
    """Session id, from the first event."""
    events: int = 0
    """How many events were folded."""
    last_event_id: str | None = None
    """Id of the last event folded."""
    closed: bool = False
    """A session.close was seen."""
    ok: bool | None = None
    """The close's verdict (None while open)."""
    output: str | None = None
    """The latest worker output (amendments applied)."""
    close_reason: str | None = None
    """Why the session closed, when it says."""
    state: str | None = None
    """Current Plan-Work-Review state (INTAKE ... DONE, FAILED, ESCALATED)."""
    roles: dict[str, str] = field(default_factory=dict)
    """Role -> the last state that role moved the session to."""
    skill: str | None = None
    """Selected skill."""
    cost: Cost = field(default_factory=Cost)
    """Usage and cost."""
    llm_calls: int = 0
    """llm.response events seen."""
    tools_invoked: tuple[dict[str, Any], ...] = ()
    """Each tool.invoke: id, name, args."""
    hook_decisions: tuple[dict[str, Any], ...] = ()
    """Each hook.fired: hook, handler, decision, reason."""
    schema_violations: tuple[dict[str, Any], ...] = ()
    """Each schema.violation: schema_id, where, first path and message."""
    errors: tuple[dict[str, Any], ...] = ()
    """Each domain.error: code, layer, message."""
    rework_count: int = 0
    """Transitions into REWORK."""
    escalated: bool = False
    """A human.escalation was recorded."""
    amendments: int = 0
    """event.amended corrections applied."""
    workflow: dict[str, Any] | None = None
    """L8: cycle_id, mode, phase, verdict, reason, visited phases, policy_decisions (None when
    no cycle ran)."""

    def to_dict(self) -> dict[str, Any]:
        """The snapshot_v1 JSON object."""
        d = asdict(self)
        d["tools_invoked"] = list(d["tools_invoked"])
        d["hook_decisions"] = list(d["hook_decisions"])
        d["schema_violations"] = list(d["schema_violations"])
        d["errors"] = list(d["errors"])
        d["schema_version"] = "v1"
        return d


LISTS = ("tools_invoked", "hook_decisions", "schema_violations", "errors")
"""The snapshot fields the fold only ever appends to."""


@dataclass(frozen=True)
class Mark:
    """What a fold holds after some prefix of a log, kept cheaply: the scalars, copies of the
    small mutable fields, and only the lengths of the append-only lists (ReplayIndex)."""

    scalars: dict[str, Any]
    """Every snapshot field but LISTS, roles, cost and workflow, as folded so far."""
    cost: dict[str, Any]
    """A copy of the cost so far."""
    roles: dict[str, str]
    """A copy of role -> last state."""
    workflow: dict[str, Any] | None
    """A deep copy of the L8 cycle so far."""
    lengths: tuple[int, ...]
    """len() of each LISTS field."""
    reports: int
    """How many worker.report ids were seen."""

"""The L8 workflow objects as loaded from Markdown (registry.py builds them, engine.py runs them)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..errors import DomainError, Err, ErrorCode, Ok, Result
from ..roles.agents import AgentDef
from .policy import Policy
from .signals import Signal

NAMING_VARS = frozenset({"cycle", "session", "slug", "phase", "generation"})
"""Placeholders an artifact naming pattern may use."""


@dataclass(frozen=True)
class Persona:
    """A domain specialist from workflows/personas/<role>/<id>.md, run as an L3 agent."""

    id: str
    """Persona id (frontmatter `name`, the file stem)."""
    role: str
    """Its role: the directory it lives in (reviewer, researcher, worker, ...)."""
    output_schema: str
    """Schema id its JSON output must satisfy."""
    prompt: str
    """The Markdown body: its system prompt."""
    file: str
    """Where it was loaded from."""

    def agent(self) -> AgentDef:
        """The AgentDef L3's call_role runs."""
        return AgentDef(self.id, self.role, self.output_schema, self.prompt, self.file)


@dataclass(frozen=True)
class ArtifactTemplate:
    """An artifact template from workflows/artifacts/<id>-template.md."""

    id: str
    """Artifact id (file name without -template.md); signals read it as artifacts.<id>."""
    schema: str
    """Schema id the artifact satisfies."""
    naming: str
    """Path pattern, e.g. docs/brainstorms/{session}-{slug}-brainstorm.md."""
    body: str
    """The Markdown template the writing persona follows."""
    file: str
    """Where it was loaded from."""

    def path(self, **values: Any) -> str:
        """The artifact's path for these naming values."""
        return self.naming.format(**{k: values[k] for k in NAMING_VARS})


@dataclass(frozen=True)
class Phase:
    """A phase from workflows/phases/<id>.md."""

    id: str
    """Phase id."""
    advance: Signal
    """advance_signal: holds -> go to the next phase; else rework."""
    halt: Signal | None
    """halt_signal: holds at the start of a step -> abort."""
    personas: tuple[str, ...]
    """agents_invoked: persona ids, fanned out in this order."""
    input_schema: str | None
    """What the previous phase's output must satisfy before this phase runs."""
    output_schema: str | None
    """What the phase's fan-in produces."""
    artifact: str | None
    """Artifact template id its (single) persona produces."""
    next: str | None
    """Explicit next phase (else the one after it in the cycle)."""
    rework: str | None
    """Where to go when advance_signal does not hold (else this phase again)."""
    policies: tuple[str, ...]
    """Which of the cycle's policies apply here (empty: all)."""
    file: str
    """Where it was loaded from."""


@dataclass(frozen=True)
class Cycle:
    """A cycle from workflows/cycles/<id>.md."""

    id: str
    """Cycle id."""
    phases: tuple[str, ...]
    """Allow-listed phases, in order."""
    entry_phase: str
    """Where it starts."""
    policies: tuple[str, ...]
    """Policy ids, in evaluation order."""
    done: Signal | None
    """exit_conditions.done (None: done when the last phase completes)."""
    max_generations: int | None
    """loop_bounds.max_generations."""
    max_oscillations: int | None
    """loop_bounds.max_oscillations (A->B->A reversals)."""
    halt_on_grade_regression: bool
    """loop_bounds.halt_on_grade_regression."""
    modes: tuple[str, ...]
    """Modes it may run in."""
    default_mode: str
    """Mode when none is given."""
    file: str
    """Where it was loaded from."""


@dataclass(frozen=True)
class WorkflowRegistry:
    """Every loaded workflow object, by id."""

    cycles: dict[str, Cycle]
    """Cycles by id."""
    phases: dict[str, Phase]
    """Phases by id."""
    policies: dict[str, Policy]
    """Policies by id."""
    personas: dict[str, Persona]
    """Personas by id."""
    artifacts: dict[str, ArtifactTemplate]
    """Artifact templates by id."""

    def cycle(self, cycle_id: str) -> Result[Cycle]:
        """A registered cycle, or Err(UNKNOWN_ID) naming the id and the registered ones."""
        if cycle_id in self.cycles:
            return Ok(self.cycles[cycle_id])
        return Err(DomainError("config", ErrorCode.UNKNOWN_ID,
                               f"unknown cycle {cycle_id!r}; registered: {known(self.cycles)}"))


def known(d: dict[str, Any]) -> str:
    """Registered ids, for messages that name a bad one."""
    return ", ".join(sorted(d)) or "(none)"

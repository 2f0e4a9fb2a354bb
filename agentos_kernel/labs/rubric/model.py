"""The values grading produces: one CriterionResult per rubric criterion, one SubmissionGrade
per submission folder. The criteria are the spec's Lab Rubric, in its order."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Criterion:
    """One row of the spec's Lab Rubric."""

    key: str
    """Stable id used in CSV columns and JSON (e.g. `runtime_boundary`)."""
    title: str
    """The spec's name (e.g. `Runtime boundary`)."""
    short: str
    """Column header of the printed table."""


CRITERIA: tuple[Criterion, ...] = (
    Criterion("runtime_boundary", "Runtime boundary", "boundary"),
    Criterion("contract_discipline", "Contract discipline", "contract"),
    Criterion("observability", "Observability", "observ"),
    Criterion("safety", "Safety", "safety"),
    Criterion("determinism", "Determinism", "determ"),
    Criterion("documentation", "Documentation", "docs"),
)
CRITERION_KEYS: tuple[str, ...] = tuple(c.key for c in CRITERIA)


@dataclass(frozen=True)
class CriterionResult:
    """The verdict on one criterion for one submission."""

    criterion: str
    """A key of CRITERIA."""
    passed: bool
    """True when every condition of the criterion holds."""
    reason: str
    """One line: what passed, or the first failure with its file:line and the fix."""
    details: tuple[str, ...] = ()
    """Every finding (failures first), each naming its file:line where it has one."""

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {"criterion": self.criterion, "passed": self.passed, "reason": self.reason,
                "details": list(self.details)}


def fail(criterion: str, problems: list[str], notes: list[str] | None = None) -> CriterionResult:
    """A failed criterion: the first problem is the reason; all of them, then notes, are details."""
    return CriterionResult(criterion, False, problems[0], tuple(problems + (notes or [])))


@dataclass(frozen=True)
class SubmissionGrade:
    """One graded submission folder."""

    student: str
    """The folder's name (e.g. a student number, 20230001)."""
    path: str
    """The folder graded."""
    language: str
    """python, go, typescript, or unknown (from runtime/)."""
    results: tuple[CriterionResult, ...]
    """One per criterion, in CRITERIA order."""
    protections: tuple[str, ...] = ()
    """Sandbox layers that held for its test runs."""
    unprotected: tuple[str, ...] = field(default=())
    """Sandbox layers that could not be applied, each with why (never silent)."""
    seconds: float = 0.0
    """Wall time spent grading it."""

    @property
    def total(self) -> int:
        """Criteria passed."""
        return sum(r.passed for r in self.results)

    def result(self, criterion: str) -> CriterionResult:
        """The result for one criterion key; KeyError names the known keys."""
        for r in self.results:
            if r.criterion == criterion:
                return r
        raise KeyError(f"unknown criterion {criterion!r}; known: {', '.join(CRITERION_KEYS)}")

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {"student": self.student, "path": self.path, "language": self.language,
                "total": self.total, "out_of": len(self.results),
                "results": [r.to_dict() for r in self.results],
                "protections": list(self.protections), "unprotected": list(self.unprotected),
                "seconds": round(self.seconds, 3)}

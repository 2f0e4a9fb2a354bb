"""Results, not exceptions, for domain failures (the spec's `Ok` / `Err(DomainError)`).

An exception means a broken invariant or a programmer error; everything a user, a model
or a hook can cause is a `DomainError` value that is also written to the event log.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Generic, TypeVar

T = TypeVar("T")


@dataclass(frozen=True)
class DomainError:
    """A domain failure: returned as `Err(DomainError)` and logged as an event."""

    kind: str
    """Family of the failure: gate, schema, provider, lock, config, tool, loop, input."""
    code: str
    """One of `ErrorCode`: the stable, testable name of what went wrong."""
    message: str
    """One line a person can act on: what, where, and the fix when there is one."""
    retryable: bool = False
    """True when trying the same thing again may succeed (transient provider faults)."""
    session_id: str | None = None
    """The session whose log records this failure, when there is one."""

    def __str__(self) -> str:
        return f"{self.code}: {self.message}"


@dataclass(frozen=True)
class Ok(Generic[T]):
    """A successful result."""

    value: T
    """The value produced."""


@dataclass(frozen=True)
class Err:
    """A failed result carrying a `DomainError`."""

    error: DomainError
    """What went wrong."""


Result = Ok[T] | Err


class ErrorCode:
    """Every fail-closed case of the spec has one code (DESIGN: decisions already taken)."""

    TOOL_NOT_FOUND = "TOOL_NOT_FOUND"
    TOOL_NOT_ALLOWED = "TOOL_NOT_ALLOWED"
    TOOL_ERROR = "TOOL_ERROR"
    PATH_DENIED = "PATH_DENIED"
    SCHEMA_INVALID = "SCHEMA_INVALID"
    SCHEMA_NOT_FOUND = "SCHEMA_NOT_FOUND"
    MALFORMED_AGENT_MESSAGE = "MALFORMED_AGENT_MESSAGE"
    GATE_DENIED = "GATE_DENIED"
    PROMPT_DENIED = "PROMPT_DENIED"
    PROMPT_EMPTY = "PROMPT_EMPTY"
    PROMPT_INVALID = "PROMPT_INVALID"
    PROMPT_TOO_LARGE = "PROMPT_TOO_LARGE"
    HOOK_TIMEOUT = "HOOK_TIMEOUT"
    HOOK_ERROR = "HOOK_ERROR"
    WRITE_CONFLICT = "WRITE_CONFLICT"
    PROVIDER_ERROR = "PROVIDER_ERROR"
    UNKNOWN_ID = "UNKNOWN_ID"
    SESSION_ID_INVALID = "SESSION_ID_INVALID"
    SESSION_EXISTS = "SESSION_EXISTS"
    SESSION_LOCKED = "SESSION_LOCKED"
    SELF_REVIEW = "SELF_REVIEW"
    REVIEW_FAILED = "REVIEW_FAILED"
    HUMAN_ESCALATION = "HUMAN_ESCALATION"
    LOOP_BOUND = "LOOP_BOUND"
    CONFIG_INVALID = "CONFIG_INVALID"
    INTERRUPTED = "INTERRUPTED"


def exception_text(exc: BaseException) -> str:
    """An exception's message for a log or an error, even when its __str__ raises (code
    that is failing, a handler, a tool or a provider, must not fail us a second time)."""
    try:
        return str(exc)
    except Exception:
        return "(its message could not be read)"


class InvariantViolation(Exception):
    """A runtime invariant (I-1..I-5) is broken: a bug, never a user or model error."""


@dataclass(frozen=True)
class Problem:
    """One problem found in a contract file, reported as `file: field: what is wrong`."""

    file: str
    """The file, relative to the workspace when possible."""
    field: str
    """The field or location inside the file (`-` for the whole file)."""
    message: str
    """What is wrong, with the fix when it is known."""

    def __str__(self) -> str:
        return f"{self.file}: {self.field}: {self.message}"


@dataclass
class ContractError(Exception):
    """A workspace cannot be loaded: its contract files have problems (setup, not a session)."""

    problems: list[Problem] = field(default_factory=list)

    def __str__(self) -> str:
        if not self.problems:
            return "invalid workspace"
        first = str(self.problems[0])
        more = len(self.problems) - 1
        return first + (f" (and {more} more; run `agentos validate`)" if more else "")

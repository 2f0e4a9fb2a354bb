"""Values the audit works on: one log line read as an event (`Entry`) and one finding (`Gap`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Gap:
    """One thing the log is missing or gets wrong."""

    check: str
    """Short kind: required-type, llm-pair, tool-pair, transition, hook, schema-violation,
    closed, start, workflow, chain, envelope, seq, parent."""
    seq: int | None
    """Seq of the event concerned (its 1-based index when the log has no seq); None for a
    whole-log gap."""
    line: int | None
    """1-based line in the file; None for a whole-log gap."""
    what: str
    """One sentence: what is missing or wrong, naming the event or type, and the fix."""

    def to_dict(self) -> dict[str, Any]:
        """The gap as JSON (for `agentos audit --json`)."""
        return {"check": self.check, "seq": self.seq, "line": self.line, "what": self.what}


@dataclass(frozen=True)
class Entry:
    """One line of a log that is an event_v1 envelope."""

    line: int
    """1-based line in the file."""
    pos: int
    """1-based position among the events (the seq a log without seq would have)."""
    raw: dict[str, Any]
    """The event object exactly as read (the hash chain is computed over it)."""

    @property
    def type(self) -> str:
        return self.raw["type"]

    @property
    def id(self) -> str:
        return self.raw["id"]

    @property
    def parent_id(self) -> str | None:
        return self.raw["parent_id"]

    @property
    def seq(self) -> int:
        """The event's own seq when it has one, else its position."""
        seq = self.raw.get("seq")
        return seq if isinstance(seq, int) else self.pos

    @property
    def payload(self) -> dict[str, Any]:
        """The payload when it is an object, else an empty one (checks read fields from it)."""
        p = self.raw["payload"]
        return p if isinstance(p, dict) else {}

    def gap(self, check: str, what: str) -> Gap:
        """A gap located at this event."""
        return Gap(check, self.seq, self.line, what)

    def name(self) -> str:
        """How messages name this event: its type and seq."""
        return f"{self.type} (seq {self.seq})"

"""Values the audit works on: one log line read as an event (`Entry`) and one finding (`Gap`)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)  # a long log's report holds one per finding
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


_CODE = re.compile(r"\b[A-Z][A-Z0-9_]{2,}\b")
_SCHEMA_CODE = "SCHEMA_INVALID"


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

    def codes(self) -> set[str]:
        """Fail-closed codes this event reports: its payload's `code`, its `error.code`, and
        for session.close the CODE-like words of its reason ("TOOL_NOT_FOUND: ...")."""
        p = self.payload
        err = p.get("error")
        found = {p.get("code"), err.get("code") if isinstance(err, dict) else None}
        reason = p.get("reason")
        if self.type == "session.close" and isinstance(reason, str):
            found.update(_CODE.findall(reason))
        return {c for c in found if isinstance(c, str) and c}

    def name(self) -> str:
        """How messages name this event: its type and seq."""
        return f"{self.type} (seq {self.seq})"


def schema_invalid(t: str, p: dict[str, Any]) -> bool:
    """SCHEMA_INVALID is among the codes the event of type `t` with payload `p` reports
    (`Entry.codes`, without building the set)."""
    err = p.get("error")
    if p.get("code") == _SCHEMA_CODE or (isinstance(err, dict) and err.get("code") == _SCHEMA_CODE):
        return True
    reason = p.get("reason")
    return t == "session.close" and isinstance(reason, str) and _SCHEMA_CODE in _CODE.findall(reason)



Steps = Sequence[tuple[str, tuple[str, Any]]]
"""flowfold.GATED's items: (hook, (the type of the step it gates, ...))."""


def denied_ran(followed: Sequence[int], steps: Steps) -> list[tuple[int, Gap]]:
    """(the deny's position, gap) of each step that ran after the deny gating it, in the order
    found (after the hook's own gaps at that position, which were found at the hook): `followed`
    holds five ints a step (the deny's position, the step's seq and line, the deny's seq, the
    hook's index in `steps`). FlowFold keeps them so (no object a step) and makes the gaps at
    its end: a long log holds one a pass (the reference request repeated: 33,334 at 1M events),
    and made as they were found, their messages, kept among each chunk's short-lived objects,
    slowed the rest of the pass ~10 % by 1M events (its time per chunk rose)."""
    return [(followed[j], Gap("hook", followed[j + 1], followed[j + 2],
                              f"{steps[followed[j + 4]][1][0]} follows the {steps[followed[j + 4]][0]} "
                              f"deny at seq {followed[j + 3]}: a denied step must not run"))
            for j in range(0, len(followed), 5)]

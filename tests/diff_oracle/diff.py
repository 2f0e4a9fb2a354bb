"""The one diff engine for logs: `rerun --verify`, `agentos diff A B`, `%diff` and the LogDiff
widget all call `diff_events`.

Two logs are walked in lockstep while their events match (type, actor, payload, the
volatile fields in IGNORED left out, A's session id read as B's); the first event where
they do not is the first divergence, reported as the path that differs (`type`, `actor`,
`payload.<field>...`, or `event` when one log ends first). After it, the rest is aligned
by step, (role, event type, hook point), with difflib's SequenceMatcher, so an inserted event (a fork's
`session.forked`, an extra rework round) shows as one row on one side instead of shifting
every later pair. A hook.fired's hook point is part of its step: a Stop decision and a
PreToolUse decision are two steps, never one changed one. Per-role token and cost totals
come from each log's `llm.response` events.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from agentos_kernel.schemas.jsondiff import MISSING, first_difference, rename_session

if TYPE_CHECKING:
    from agentos_kernel.store.events import Event

IGNORED = {"hook.fired": ("ms",), "llm.response": ("attempts", "chunks")}
"""Payload fields that measure the run rather than decide it (wall time, retries)."""


@dataclass(frozen=True)
class Divergence:
    """Where two logs first differ."""

    index: int
    """1-based position of the first differing event in both logs (the trace's seq)."""
    path: str
    """What differs: `type`, `actor`, `payload.<field>...`, or `event` when one log ends first."""
    recorded: Any
    """Log A's value there (`<missing>` when absent)."""
    new: Any
    """Log B's value there (`<missing>` when absent)."""


@dataclass(frozen=True)
class DiffRow:
    """One aligned step: an event of A, of B, or of both."""

    kind: str
    """same | changed (same step, other content) | only_a | only_b."""
    a: Event | None
    """A's event (None: only B has this step)."""
    b: Event | None
    """B's event (None: only A has this step)."""
    path: str | None = None
    """For `changed`: the first path that differs."""

    @property
    def step(self) -> tuple[str, str]:
        """(role, event type) of the row."""
        return step_of(self.a if self.a is not None else self.b)  # type: ignore[arg-type]


@dataclass(frozen=True)
class RoleUsage:
    """One role's model use in both logs."""

    role: str
    """The role (the llm.response's actor)."""
    calls: tuple[int, int]
    """llm.response events in A and in B."""
    tokens: tuple[int, int]
    """Input + output tokens in A and in B."""
    cost_usd: tuple[float, float]
    """Summed cost_usd in A and in B."""

    @property
    def token_delta(self) -> int:
        """B's tokens minus A's."""
        return self.tokens[1] - self.tokens[0]

    @property
    def cost_delta(self) -> float:
        """B's cost minus A's (USD)."""
        return round(self.cost_usd[1] - self.cost_usd[0], 8)


@dataclass(frozen=True)
class EventsDiff:
    """What `diff_events` found."""

    a: str
    """Log A's session id."""
    b: str
    """Log B's session id."""
    rows: tuple[DiffRow, ...]
    """Every step of both logs, aligned."""
    first: Divergence | None
    """The first divergence (None: the logs do the same thing)."""
    compared: int
    """Event pairs compared up to and including the first divergence (all when none)."""
    roles: tuple[RoleUsage, ...] = field(default=())
    """Per-role usage in both logs, in order of first appearance."""

    @property
    def identical(self) -> bool:
        """No divergence."""
        return self.first is None

    @property
    def first_row(self) -> int | None:
        """Index in `rows` of the first row that is not `same`."""
        return next((i for i, r in enumerate(self.rows) if r.kind != "same"), None)


def step_of(e: Event) -> tuple[str, str]:
    """The step: (role, type); `hook:x` and `tool:x` actors count as hook and tool,
    so a different handler at the same gate is a changed step, not two unrelated ones."""
    role = e.actor.split(":", 1)[0] if ":" in e.actor else e.actor
    return role, e.type


def align_key(e: Event) -> tuple[str, str, str]:
    """What aligns two events after the first divergence: `step_of` and, for hook.fired, the
    hook point (a different handler at the same hook point is one changed step)."""
    hook = e.payload.get("hook") if e.type == "hook.fired" and isinstance(e.payload, dict) else None
    return (*step_of(e), str(hook or ""))


def view(e: Event, rename: tuple[str, str] | None = None) -> dict[str, Any]:
    """What is compared: type, actor and payload without the IGNORED fields."""
    payload = e.payload
    if isinstance(payload, dict) and e.type in IGNORED:
        payload = {k: v for k, v in payload.items() if k not in IGNORED[e.type]}
    v = {"type": e.type, "actor": e.actor, "payload": payload}
    return rename_session(v, *rename) if rename else v


def diff_events(a: list[Event], b: list[Event], rename: tuple[str, str] | None = None,
                names: tuple[str, str] = ("A", "B")) -> EventsDiff:
    """Diff log A against log B (module docstring). `rename=(A's id, B's id)`."""
    va = [view(e, rename) for e in a]
    vb = [view(e) for e in b]
    n = 0
    while n < min(len(a), len(b)) and first_difference(va[n], vb[n]) is None:
        n += 1
    rows = [DiffRow("same", x, y) for x, y in zip(a[:n], b[:n], strict=True)]
    if n == len(a) == len(b):
        return EventsDiff(*names, tuple(rows), None, n, usage(a, b))
    if n < len(a) and n < len(b):
        first = Divergence(n + 1, *first_difference(va[n], vb[n]))  # type: ignore[misc]
    else:
        first = Divergence(n + 1, "event", a[n].type if n < len(a) else MISSING,
                           b[n].type if n < len(b) else MISSING)
    ka, kb = [align_key(e) for e in a[n:]], [align_key(e) for e in b[n:]]
    matcher = difflib.SequenceMatcher(None, ka, kb, autojunk=False)
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op == "equal":
            for i, j in zip(range(n + i1, n + i2), range(n + j1, n + j2), strict=True):
                found = first_difference(va[i], vb[j])
                rows.append(DiffRow("changed" if found else "same", a[i], b[j],
                                    found[0] if found else None))
        else:  # replace, delete, insert: A's side, then B's
            rows += [DiffRow("only_a", a[i], None) for i in range(n + i1, n + i2)]
            rows += [DiffRow("only_b", None, b[j]) for j in range(n + j1, n + j2)]
    return EventsDiff(*names, tuple(rows), first, n + 1, usage(a, b))


def usage(a: list[Event], b: list[Event]) -> tuple[RoleUsage, ...]:
    """Per-role calls, tokens and cost of both logs (a pure fold over llm.response)."""
    table: dict[str, list[list[float]]] = {}
    for side, events in enumerate((a, b)):
        for e in events:
            if e.type != "llm.response" or not isinstance(e.payload, dict):
                continue
            u = e.payload.get("usage") or {}
            row = table.setdefault(str(e.payload.get("role") or e.actor), [[0, 0], [0, 0], [0.0, 0.0]])
            row[0][side] += 1
            row[1][side] += int(u.get("input_tokens", 0)) + int(u.get("output_tokens", 0))
            row[2][side] = round(row[2][side] + float(u.get("cost_usd", 0)), 8)
    return tuple(RoleUsage(r, (int(c[0]), int(c[1])), (int(t[0]), int(t[1])), (m[0], m[1]))
                 for r, (c, t, m) in table.items())

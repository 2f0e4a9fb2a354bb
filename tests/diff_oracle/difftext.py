"""Text of a log diff (logdiff.EventsDiff), shared by `agentos diff` and `%diff`'s plain repr:
the aligned steps with the first divergence marked, then per-role token and cost deltas."""

from __future__ import annotations

from pathlib import Path

from agentos_kernel.schemas.jsondiff import short
from agentos_kernel.store.events import Event, read_log
from agentos_kernel.telemetry.trace import summary

from .diff import EventsDiff, diff_events

MARKS = {"same": " ", "changed": "~", "only_a": "-", "only_b": "+"}
"""The column that says what a row is: same, changed, only in A, only in B."""


def diff_logs(a: Path, b: Path) -> EventsDiff:
    """Read two logs and diff them (A's session id read as B's inside payloads)."""
    ea, eb = list(read_log(a)), list(read_log(b))
    ia, ib = _sid(ea, a), _sid(eb, b)
    return diff_events(ea, eb, (ia, ib), names=(ia, ib))


def _sid(events: list[Event], path: Path) -> str:
    return events[0].session_id if events else path.parent.name


def verdict(d: EventsDiff) -> str:
    """One line: the same, or where and how they first differ."""
    if d.first is None:
        return f"{d.a} and {d.b} do the same thing ({len(d.rows)} events)"
    f = d.first
    if f.path in ("type", "actor", "event"):  # different steps: name both events
        ea = next((r.a for r in d.rows if r.a is not None and r.a.seq == f.index), None)
        eb = next((r.b for r in d.rows if r.b is not None and r.b.seq == f.index), None)
        return (f"{d.a} and {d.b} diverge at event {f.index}: {d.a} has {_name(ea)}, "
                f"{d.b} has {_name(eb)}")
    return (f"{d.a} and {d.b} diverge at event {f.index}: {f.path}: {d.a} {short(f.recorded)}, "
            f"{d.b} {short(f.new)}")


def _name(e: Event | None) -> str:
    return f"{e.type} ({e.actor})" if e is not None else "no event (its log ended)"


def row_note(kind: str, a: Event | None, b: Event | None, path: str | None) -> str:
    """What a row says beyond its step."""
    if kind == "changed" and a is not None and b is not None:
        return f"{path}: {_at(a, path)} → {_at(b, path)}"
    shown = a if a is not None else b
    return summary(shown) if shown is not None else ""


def _at(e: Event, path: str | None) -> str:
    value: object = {"type": e.type, "actor": e.actor, "payload": e.payload}
    for part in (path or "").replace("]", "").replace("[", ".").split("."):
        if isinstance(value, dict) and part in value:
            value = value[part]
        elif isinstance(value, list) and part.isdigit() and int(part) < len(value):
            value = value[int(part)]
        else:
            return "<missing>"
    return short(value, 40)


def diff_lines(d: EventsDiff, only_changes: bool = False) -> list[str]:
    """The aligned table: mark, A's seq, B's seq, role, type, note; `>` on the first divergence."""
    first = d.first_row
    lines = [f"  {'':1} {'A':>4} {'B':>4}  {'role':<10} {'type':<18} ",
             f"  (~ changed, - only in {d.a}, + only in {d.b}; > the first divergence)"]
    for i, r in enumerate(d.rows):
        if only_changes and r.kind == "same":
            continue
        role, typ = r.step
        seq_a = str(r.a.seq or "") if r.a is not None else "-"
        seq_b = str(r.b.seq or "") if r.b is not None else "-"
        pointer = ">" if i == first else " "
        note = row_note(r.kind, r.a, r.b, r.path)
        lines.append(f"{pointer} {MARKS[r.kind]} {seq_a:>4} {seq_b:>4}  {role:<10} {typ:<18} {note}")
    return lines


def usage_lines(d: EventsDiff) -> list[str]:
    """Per-role calls, tokens and cost in A and B, and B minus A."""
    head = (f"{'role':<10} {'calls':>9} {'tokens ' + d.a:>16} {'tokens ' + d.b:>16} {'Δ tokens':>9} "
            f"{'cost ' + d.a:>12} {'cost ' + d.b:>12} {'Δ cost':>11}")
    lines = [head]
    total = [0, 0, 0.0, 0.0]
    for u in d.roles:
        lines.append(f"{u.role:<10} {f'{u.calls[0]}→{u.calls[1]}':>9} {u.tokens[0]:>16} {u.tokens[1]:>16} "
                     f"{u.token_delta:>+9} {u.cost_usd[0]:>12.6f} {u.cost_usd[1]:>12.6f} "
                     f"{u.cost_delta:>+11.6f}")
        total = [total[0] + u.tokens[0], total[1] + u.tokens[1],
                 total[2] + u.cost_usd[0], total[3] + u.cost_usd[1]]
    lines.append(f"{'total':<10} {'':>9} {total[0]:>16} {total[1]:>16} {total[1] - total[0]:>+9} "
                 f"{total[2]:>12.6f} {total[3]:>12.6f} {round(total[3] - total[2], 8):>+11.6f}")
    return lines

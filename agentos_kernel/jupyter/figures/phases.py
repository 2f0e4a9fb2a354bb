"""The L8 phase graph of a session: its cycle's phases, the advances between them, the policy
decisions and the verdict, folded from the log's workflow.* events."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
from matplotlib.figure import Figure

from ...store.events import Event
from ..dtypes import DECISIONS, EVENT_TYPES, VERDICTS, categorical
from ..layers import LAYER_COLORS
from ..source import load_session
from .canvas import axes_for, finish, one_axes

_FAIL = "#cf222e"


@dataclass(frozen=True)
class PhaseGraph:
    """An L8 cycle as the log records it."""

    cycle_id: str | None
    """The cycle that ran (None: no workflow events)."""
    phases: tuple[str, ...]
    """Phases in order: the declared ones when given, else those the log names."""
    visited: tuple[str, ...]
    """Phases entered, in order (repeats when a loop went round again)."""
    transitions: tuple[tuple[str, str], ...]
    """Each workflow.phase_advanced: (from, to)."""
    policies: tuple[tuple[str, str], ...]
    """Each workflow.policy_gated: (policy_id, decision)."""
    verdict: str | None
    """done | halted | abort, or None while the cycle runs."""


def phase_graph_data(events: Sequence[Event], phases: Sequence[str] | None = None) -> PhaseGraph:
    """Fold the workflow.* events of a log into a PhaseGraph."""
    cycle, visited, transitions, policies, verdict = None, [], [], [], None
    declared = list(phases or ())
    for ev in events:
        p = ev.payload if isinstance(ev.payload, dict) else {}
        if ev.type == "workflow.started":
            cycle = p.get("cycle_id")
            declared = declared or [str(x) for x in p.get("phases") or ()]
            if p.get("entry_phase"):
                visited.append(str(p["entry_phase"]))
        elif ev.type == "workflow.phase_advanced":
            src, dst = str(p.get("from_phase") or ""), str(p.get("to_phase"))
            if src and not visited:
                visited.append(src)
            transitions.append((src, dst))
            visited.append(dst)
        elif ev.type == "workflow.policy_gated":
            policies.append((str(p.get("policy_id")), str(p.get("decision"))))
        elif ev.type == "workflow.completed":
            verdict = p.get("verdict")
        elif ev.type == "workflow.aborted":
            verdict = "abort"
    names = list(dict.fromkeys(declared + visited))
    return PhaseGraph(cycle, tuple(names), tuple(visited), tuple(transitions), tuple(policies), verdict)


def workflow_frame(events: Sequence[Event]) -> pd.DataFrame:
    """One row per workflow.* event: seq, type, from_phase, to_phase (the entry phase for
    workflow.started), policy_id and decision (workflow.policy_gated), verdict
    (workflow.completed; abort for workflow.aborted); NA where the event has none."""
    rows = []
    for i, ev in enumerate(events, 1):
        if not ev.type.startswith("workflow."):
            continue
        p = ev.payload if isinstance(ev.payload, dict) else {}
        gated = ev.type == "workflow.policy_gated"
        rows.append({
            "seq": ev.seq or i, "type": ev.type, "from_phase": p.get("from_phase"),
            "to_phase": p.get("entry_phase") if ev.type == "workflow.started" else p.get("to_phase"),
            "policy_id": p.get("policy_id") if gated else None,
            "decision": p.get("decision") if gated else None,
            "verdict": "abort" if ev.type == "workflow.aborted" else p.get("verdict")})
    frame = pd.DataFrame(rows, columns=["seq", "type", "from_phase", "to_phase", "policy_id", "decision",
                                        "verdict"])
    frame["seq"] = frame["seq"].astype("int64")
    for column in ("from_phase", "to_phase", "policy_id"):
        frame[column] = frame[column].astype("string")
    for column, closed in (("type", EVENT_TYPES), ("decision", DECISIONS), ("verdict", VERDICTS)):
        frame[column] = categorical(frame[column], closed)
    return frame


def phase_graph_figure(session: Any, phases: Sequence[str] | None = None,
                       workspace: Path | str | None = None, *, ax: Any = None) -> Figure:
    """The cycle's phases left to right; visited ones filled, arrows for each advance (arcs
    for loops back), and the verdict at the end. Returns a WorkbenchFigure, or with `ax=` (a
    matplotlib Axes) draws there and returns its Figure; either way `.data` is the
    workflow_frame of the session (one row per workflow.* event; empty when no cycle ran).
    `phase_graph_data` gives the folded graph."""
    target = None if ax is None else one_axes(ax, "phase_graph_figure")
    data = load_session(session, workspace)
    graph = phase_graph_data(data.events, phases)
    fig, ax, _ = axes_for(target, "phase_graph_figure", (9, 2.6))
    ax.set_axis_off()
    xs = {name: i for i, name in enumerate(graph.phases)}
    taken = Counter(graph.transitions)
    for (a, b), times in taken.items():
        if a in xs and b in xs:
            bend = 0.0 if xs[b] == xs[a] + 1 else 0.5  # forward steps straight, loops and jumps arched
            ax.annotate("", (xs[b], 0), (xs[a], 0), arrowprops={
                "arrowstyle": "-|>", "color": "#333333", "shrinkA": 16, "shrinkB": 16,
                "connectionstyle": f"arc3,rad={bend}"})
            if times > 1:
                where = ((xs[a] + xs[b]) / 2, 0.32 if bend else 0.08)
                ax.annotate(f"×{times}", where, ha="center", fontsize=8)
    for name, x in xs.items():
        seen = name in graph.visited
        ax.scatter([x], [0], s=900, color=LAYER_COLORS["L8"] if seen else "#ffffff",
                   edgecolors="#333333", linewidths=2.5 if graph.visited and name == graph.visited[-1] else 1,
                   zorder=2)
        ax.annotate(name, (x, 0), textcoords="offset points", xytext=(0, -26), ha="center", fontsize=8)
    if graph.cycle_id is None and not graph.phases:
        verdict, color = "no workflow events in this session (no cycle ran)", "#666666"
    else:
        verdict = f"verdict: {graph.verdict or 'running'}"
        color = {"verdict: done": "#1a7f37", "verdict: running": "#666666"}.get(verdict, _FAIL)
    ax.text(len(xs) - 0.4 if xs else 0, 0, verdict, fontsize=9, color="#ffffff", va="center",
            bbox={"boxstyle": "round", "facecolor": color})
    ax.set_xlim(-0.7, max(len(xs), 1) + 0.8)
    ax.set_ylim(-0.9, 0.9)
    decisions = Counter(d for _, d in graph.policies)
    gated = " · ".join(f"{d} {n}" for d, n in sorted(decisions.items())) or "none"
    ax.set_title(f"{data.session_id}: cycle {graph.cycle_id or '-'} · policy decisions: "
                 f"{len(graph.policies)} ({gated})", fontsize=9)
    title = f"{data.session_id}: L8 phase graph"
    return finish(fig, f"phases-{data.session_id}", title, workflow_frame(data.events))

"""Pictures of a session: a timeline by actor lane, tokens and cost per role (and cumulative),
and the L8 phase graph. matplotlib, drawn from the tables in frames.py.

Figures are returned as SVG with deterministic bytes (fixed hash salt and id, no Date or
Creator metadata, text kept as text), because nbval compares `image/svg+xml` but silently
skips PNG. The x axis is the event's position in the log, never a clock. pyplot is not used:
a bare Figure is never shown twice by the inline backend and holds no global state.
"""

from __future__ import annotations

import io
import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import matplotlib
import pandas as pd
from matplotlib.collections import PolyCollection
from matplotlib.figure import Figure

from ...roles.agents import ROLES
from ...store.events import Event
from ..frames import cost_by_role, cumulative_cost
from ..layers import LAYER_COLORS, LAYER_NAMES
from ..source import load_session, open_session
from .ranges import (
    COST_MAX_LABELS,
    TIMELINE_BINS,
    TIMELINE_MAX_POINTS,
    bands,
    binned,
    llm_calls,
    resolve_window,
    thinned_steps,
    timeline_range,
)

_FAIL = "#cf222e"


@dataclass(frozen=True)
class SvgFigure:
    """A rendered figure: shown as SVG, with the table it was drawn from."""

    title: str
    """What it shows."""
    svg: str
    """The SVG document (deterministic bytes for the same data)."""
    data: Any = field(default=None, repr=False, compare=False)
    """The table or value behind the picture (what the pytest tests check)."""

    def _repr_svg_(self) -> str:
        return self.svg

    def __repr__(self) -> str:
        return f"figure: {self.title}"

    def save(self, path: Path | str) -> Path:
        """Write the SVG to a file."""
        out = Path(path)
        out.write_text(self.svg, encoding="utf-8")
        return out


def render_svg(fig: Figure, key: str) -> str:
    """SVG text of `fig`; ids are salted with `key` so several figures on a page never share one."""
    buf = io.StringIO()
    with matplotlib.rc_context({"svg.hashsalt": f"agentos-{key}", "svg.id": f"agentos-{key}",
                                "svg.fonttype": "none"}):
        fig.savefig(buf, format="svg", metadata={"Date": None, "Creator": None})
    return buf.getvalue()


def _lane_order(lanes: list[str]) -> list[str]:
    def rank(actor: str) -> tuple[int, int]:
        if actor == "user":
            return 0, 0
        if actor in ROLES:
            return 1, ROLES.index(actor)
        group = {"tool": 2, "hook": 3}.get(actor.split(":", 1)[0], 4)
        return group, lanes.index(actor)
    return sorted(lanes, key=rank)


def timeline_figure(session: Any, workspace: Path | str | None = None, *,
                    window: Sequence[int] | None = None,
                    max_points: int = TIMELINE_MAX_POINTS, bins: int = TIMELINE_BINS) -> SvgFigure:
    """Every event as a dot at (its seq, its actor's lane), coloured by layer; failures as a red
    cross; a grey line joins an event to its parent (request -> response, invoke -> result).

    `window=(first, last)` draws only the events with those seq (both included). When the range
    holds more than `max_points` events, it is drawn in `bins` equal bins: a band where a lane
    had events of a layer in consecutive bins, a red cross on a bin where one failed, no parent
    links; `data` is then the binned table (seq, seq_last, lane, actor, layer, events, failures,
    y). Either way the figure is one drawing call per layer, at most one line and one scatter of
    failures, so its size does not grow with N."""
    data = open_session(session, workspace)
    n = len(data.events)
    lo, hi = win = resolve_window(n, window)
    aggregate = hi - lo + 1 > max_points
    frame = timeline_range(data.events, win, links=not aggregate)
    order = _lane_order(list(dict.fromkeys(frame["actor"])))
    rank = {a: i for i, a in enumerate(order)}
    points = pd.DataFrame({"seq": frame["seq"], "lane": frame["actor"].map(rank), "actor": frame["actor"],
                           "layer": frame["layer"], "type": frame["type"], "failed": frame["failed"]})
    fig = Figure(figsize=(9, 1.2 + 0.32 * len(order)))
    ax = fig.add_subplot()
    if aggregate:
        shown = binned(points, win, bins)
        _bands(ax, shown)
        bad = shown[shown["failures"] > 0]
        note = f" (binned: {len(points):,} events in {bins} bins; pick a window for parent links)"
        ax.set_xlim(lo - 0.5, hi + 0.5)
    else:
        shown, bad, note = points, points[points["failed"]], ""
        _parent_links(ax, frame, points)
        for layer in sorted(set(points["layer"])):
            sel = points[(points["layer"] == layer) & ~points["failed"]]
            if len(sel):
                ax.scatter(sel["seq"], sel["lane"], s=36, color=LAYER_COLORS.get(layer, "#333333"),
                           label=f"{layer} {LAYER_NAMES.get(layer, '')}", zorder=2)
    if len(bad):
        ax.scatter(bad["seq"], bad["y" if aggregate else "lane"], s=90, marker="X", color=_FAIL,
                   label="failure", zorder=3)
    ax.set_yticks(range(len(order)), order, fontsize=8)
    ax.set_ylim(len(order) - 0.5, -0.5)
    if (lo, hi) != (1, n):
        ax.set_xlim(lo - 0.5, hi + 0.5)
    ax.set_xlabel("event seq (position in the log; no clock)" + note, fontsize=8 if note else None)
    rng = "" if (lo, hi) == (1, n) else f" {lo:,}-{hi:,} of {n:,}"
    title = f"{data.session_id}: events{rng} by actor lane"
    ax.set_title(title, fontsize=10)
    ax.grid(axis="x", color="#eeeeee")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=7, frameon=False)
    fig.subplots_adjust(left=0.2, right=0.72, bottom=0.6 / (1.2 + 0.32 * len(order)) + 0.1)
    return SvgFigure(title, render_svg(fig, f"timeline-{data.session_id}"), shown)


def _bands(ax: Any, table: pd.DataFrame) -> None:
    # One collection of rectangles per layer: runs of busy bins, so the SVG holds a path per
    # run (one per lane when it is busy all along), not a mark per event or per bin.
    for layer, runs in bands(table).items():
        boxes = [[(a - 0.5, y - 0.09), (b + 0.5, y - 0.09), (b + 0.5, y + 0.09), (a - 0.5, y + 0.09)]
                 for a, b, y in runs]
        ax.add_collection(PolyCollection(boxes, facecolors=LAYER_COLORS.get(layer, "#333333"),
                                         edgecolors="none", label=f"{layer} {LAYER_NAMES.get(layer, '')}",
                                         zorder=2))


def _parent_links(ax: Any, frame: pd.DataFrame, points: pd.DataFrame) -> None:
    # One line for all links (NaN breaks it between them): one SVG path, not one per link.
    linked = frame["parent"].notna().to_numpy()
    if not linked.any():
        return
    lane_at = dict(zip(points["seq"], points["lane"], strict=True))
    xs: list[float] = []
    ys: list[float] = []
    for seq, parent in zip(frame["seq"][linked], frame["parent"][linked], strict=True):
        xs += [int(parent), seq, math.nan]
        ys += [lane_at[int(parent)], lane_at[seq], math.nan]
    ax.plot(xs, ys, color="#bbbbbb", lw=0.8, zorder=1)


def cost_figure(session: Any, workspace: Path | str | None = None, *,
                window: Sequence[int] | None = None) -> SvgFigure:
    """Left: tokens in and out per role, with each role's cost. Right: cumulative cost after
    each LLM call, labelled with the role that made it (past COST_MAX_LABELS calls: the line
    alone, through the last call of each of TIMELINE_BINS ranges). `window=(first, last)`
    counts only the calls among those events."""
    data = open_session(session, workspace)
    n = len(data.events)
    lo, hi = win = resolve_window(n, window)
    calls = llm_calls(data.events, win)
    per_role, running = cost_by_role(calls), cumulative_cost(calls)
    fig = Figure(figsize=(9, 3.2))
    left, right = fig.subplots(1, 2, gridspec_kw={"width_ratios": [1, 1.2]})
    xs = list(range(len(per_role)))
    left.bar([x - 0.2 for x in xs], per_role["tokens_in"], width=0.4, color="#56B4E9", label="tokens in")
    left.bar([x + 0.2 for x in xs], per_role["tokens_out"], width=0.4, color="#E69F00", label="tokens out")
    for x, (tin, cost) in enumerate(zip(per_role["tokens_in"], per_role["cost_usd"], strict=True)):
        left.annotate(f"${cost:.6f}", (x, tin), textcoords="offset points", xytext=(0, 3),
                      ha="center", fontsize=7)
    left.set_xticks(xs, list(per_role.index), fontsize=8)
    left.set_ylabel("tokens")
    left.set_title("tokens and cost per role", fontsize=10)
    left.legend(fontsize=7, frameon=False, loc="upper left")
    if len(running) > COST_MAX_LABELS:
        steps = thinned_steps(running, win, TIMELINE_BINS)
        right.step(steps["seq"], steps["cumulative_usd"], where="post", color="#009E73")
    elif len(running):
        right.step(running["seq"], running["cumulative_usd"], where="post", color="#009E73")
        right.scatter(running["seq"], running["cumulative_usd"], s=20, color="#009E73", zorder=3)
        for seq, usd, role in zip(running["seq"], running["cumulative_usd"], running["role"], strict=True):
            right.annotate(role, (seq, usd), textcoords="offset points", xytext=(3, -10), fontsize=7)
    right.set_xlim(lo - 1, hi + 4)
    right.set_ylim(bottom=0)
    right.set_xlabel("event seq (position in the log; no clock)")
    right.set_ylabel("cumulative cost (USD)")
    rng = "" if (lo, hi) == (1, n) else f", events {lo:,}-{hi:,}"
    right.set_title(f"{data.session_id}: cumulative cost{rng}", fontsize=10)
    fig.subplots_adjust(left=0.08, right=0.98, bottom=0.17, wspace=0.3)
    title = f"{data.session_id}: tokens and cost per role, and cumulative{rng}"
    return SvgFigure(title, render_svg(fig, f"cost-{data.session_id}"),
                     {"per_role": per_role, "cumulative": running})


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


def phase_graph_figure(session: Any, phases: Sequence[str] | None = None,
                       workspace: Path | str | None = None) -> SvgFigure:
    """The cycle's phases left to right; visited ones filled, arrows for each advance (arcs
    for loops back), and the verdict at the end."""
    data = load_session(session, workspace)
    graph = phase_graph_data(data.events, phases)
    fig = Figure(figsize=(9, 2.6))
    ax = fig.add_subplot()
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
    return SvgFigure(title, render_svg(fig, f"phases-{data.session_id}"), graph)

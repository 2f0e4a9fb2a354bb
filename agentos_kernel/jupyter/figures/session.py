"""Pictures of a session: a timeline by actor lane, and tokens and cost per role (and
cumulative); the L8 phase graph is in phases.py. matplotlib, drawn from the tables in frames.py
and ranges.py, into a new WorkbenchFigure or the caller's Axes (`ax=`; canvas.py). The x axis
is the event's position in the log, never a clock.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd
from matplotlib.collections import PolyCollection
from matplotlib.figure import Figure

from ...roles.agents import ROLES
from ..frames import cost_by_role, cumulative_cost
from ..layers import LAYER_COLORS, LAYER_NAMES
from ..source import open_session
from .canvas import axes_for, finish, one_axes, panels_for, two_axes
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
                    window: Sequence[int] | None = None, max_points: int = TIMELINE_MAX_POINTS,
                    bins: int = TIMELINE_BINS, ax: Any = None) -> Figure:
    """Every event as a dot at (its seq, its actor's lane), coloured by layer; failures as a red
    cross; a grey line joins an event to its parent (request -> response, invoke -> result).
    Returns a WorkbenchFigure, or with `ax=` (a matplotlib Axes) draws there and returns its
    Figure; either way `.data` is one row per event drawn: seq, lane (its row, 0 at the top),
    actor, layer, type, failed.

    `window=(first, last)` draws only the events with those seq (both included). When the range
    holds more than `max_points` events, it is drawn in `bins` equal bins: a band where a lane
    had events of a layer in consecutive bins, a red cross on a bin where one failed, no parent
    links; `data` is then the binned table, a row per (bin, lane, layer) that had events: seq,
    seq_last, lane, actor, layer, events, failures, y (where its mark is drawn). Either way
    the figure is one drawing call per layer, at most one line and one scatter of failures,
    so its size does not grow with N."""
    target = None if ax is None else one_axes(ax, "timeline_figure")
    data = open_session(session, workspace)
    n = len(data.events)
    lo, hi = win = resolve_window(n, window)
    aggregate = hi - lo + 1 > max_points
    frame = timeline_range(data.events, win, links=not aggregate)
    order = _lane_order(list(dict.fromkeys(frame["actor"])))
    rank = {a: i for i, a in enumerate(order)}
    points = pd.DataFrame({"seq": frame["seq"], "lane": frame["actor"].map(rank), "actor": frame["actor"],
                           "layer": frame["layer"], "type": frame["type"], "failed": frame["failed"]})
    fig, ax, own = axes_for(target, "timeline_figure", (9, 1.2 + 0.32 * len(order)))
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
    if own:  # the layout of a caller's figure is theirs
        fig.subplots_adjust(left=0.2, right=0.72, bottom=0.6 / (1.2 + 0.32 * len(order)) + 0.1)
    return finish(fig, f"timeline-{data.session_id}", title, shown.reset_index(drop=True))


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
                window: Sequence[int] | None = None, ax: Any = None) -> Figure:
    """Left: tokens in and out per role, with each role's cost. Right: cumulative cost after
    each LLM call, labelled with the role that made it (past COST_MAX_LABELS calls: the line
    alone, through the last call of each of TIMELINE_BINS ranges). `window=(first, last)`
    counts only the calls among those events. Returns a WorkbenchFigure, or with
    `ax=(left, right)` (two Axes) draws there and returns their Figure; either way `.data` is
    one row per LLM call: seq, role, tokens_in, tokens_out, cost_usd, cumulative_tokens,
    cumulative_usd (cumulative_cost's table; `cost_by_role(fig.data)` is the left panel's)."""
    panels = None if ax is None else two_axes(ax, "cost_figure")
    data = open_session(session, workspace)
    n = len(data.events)
    lo, hi = win = resolve_window(n, window)
    calls = llm_calls(data.events, win)
    per_role, running = cost_by_role(calls), cumulative_cost(calls)
    fig, left, right, own = panels_for(panels, "cost_figure", (9, 3.2), (1, 1.2))
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
    if own:
        fig.subplots_adjust(left=0.08, right=0.98, bottom=0.17, wspace=0.3)
    title = f"{data.session_id}: tokens and cost per role, and cumulative{rng}"
    return finish(fig, f"cost-{data.session_id}", title, running)

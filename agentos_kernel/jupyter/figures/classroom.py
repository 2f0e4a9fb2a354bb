"""Pictures of a whole class (notebooks/12_class_dashboard): one figure per view of
agentos_kernel/classroom/views.py, each drawn from that view's table, which it carries as `data`
(what the tests check). Each returns a WorkbenchFigure (nbval compares its SVG bytes), or with
`ax=` draws into that matplotlib Axes and returns its Figure (canvas.py).
"""

from __future__ import annotations

from typing import Any

import pandas as pd
from matplotlib.figure import Figure

from ...classroom.views import class_timeline, cost_per_lab, failures_by_code, sessions_per_student
from .canvas import axes_for, finish

_OK, _FAIL, _OPEN = "#1a7f37", "#cf222e", "#999999"


def _done(fig: Figure, ax: Any, own: bool, title: str, key: str, data: pd.DataFrame) -> Figure:
    ax.set_title(title, fontsize=10, loc="left")
    ax.spines[["top", "right"]].set_visible(False)
    if own:  # the layout of a caller's figure is theirs
        fig.tight_layout()
    return finish(fig, key, title, data)


def sessions_figure(frame: pd.DataFrame, *, ax: Any = None) -> Figure:
    """One stacked bar per student (ok, failed, open), the most failures on the left."""
    table = sessions_per_student(frame)
    fig, ax, own = axes_for(ax, "sessions_figure", (9, 2.6))
    x = range(len(table))
    ax.bar(x, table["ok"], width=0.85, color=_OK, label="ok")
    ax.bar(x, table["failed"], width=0.85, bottom=table["ok"], color=_FAIL, label="failed closed")
    if table["open"].any():
        ax.bar(x, table["open"], width=0.85, bottom=table["ok"] + table["failed"], color=_OPEN, label="open")
    step = max(1, len(table) // 12)
    ax.set_xticks(list(x)[::step], list(table.index)[::step], rotation=45, ha="right", fontsize=7)
    ax.set_ylabel("sessions")
    ax.legend(fontsize=8, frameon=False, loc="upper right", ncols=3)
    return _done(fig, ax, own, f"Sessions per student ({len(table)} students, most failures first)",
                 "class-sessions", table)


def failures_figure(frame: pd.DataFrame, *, ax: Any = None) -> Figure:
    """A horizontal bar per fail-closed root-cause code, its session count at the bar's end."""
    table = failures_by_code(frame)
    fig, ax, own = axes_for(ax, "failures_figure", (7, 0.9 + 0.32 * max(1, len(table))))
    y = range(len(table))
    ax.barh(y, table["sessions"], color=_FAIL)
    for i, n in zip(y, table["sessions"], strict=True):
        ax.text(n, i, f" {n}", va="center", fontsize=8)
    ax.set_yticks(list(y), list(table.index), fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel("sessions (root cause)")
    return _done(fig, ax, own, f"Failures by fail-closed code ({int(table['sessions'].sum())} sessions)",
                 "class-failures", table)


def lab_cost_figure(frame: pd.DataFrame, *, ax: Any = None) -> Figure:
    """Total cost per lab, split into what completed and what failed-closed sessions spent."""
    table = cost_per_lab(frame)
    fig, ax, own = axes_for(ax, "lab_cost_figure", (7, 2.8))
    x = range(len(table))
    spent_ok = table["cost_usd"] - table["failed_usd"]
    ax.bar(x, spent_ok, color=_OK, label="sessions that closed ok")
    ax.bar(x, table["failed_usd"], bottom=spent_ok, color=_FAIL, label="failed closed")
    for i, total in zip(x, table["cost_usd"], strict=True):
        ax.text(i, total, f"${total:.2f}", ha="center", va="bottom", fontsize=8)
    ax.set_xticks(list(x), list(table.index), fontsize=8)
    ax.set_ylabel("USD")
    ax.legend(fontsize=8, frameon=False, loc="lower right")
    return _done(fig, ax, own, f"Cost per lab (${table['cost_usd'].sum():.2f} in all)", "class-cost", table)


def class_timeline_figure(frame: pd.DataFrame, freq: str = "30min", *, ax: Any = None) -> Figure:
    """Sessions started per `freq` bin, in order across the term (empty bins left out), the
    failed ones stacked in red on top, each class meeting's day under its bins."""
    table = class_timeline(frame, freq)
    fig, ax, own = axes_for(ax, "class_timeline_figure", (9, 2.8))
    x = range(len(table))
    ax.bar(x, table["sessions"] - table["failed"], width=0.8, color=_OK, label="ok")
    ax.bar(x, table["failed"], width=0.8, bottom=table["sessions"] - table["failed"], color=_FAIL,
           label="failed closed")
    labels = [t.strftime("%b %d %H:%M") if i == 0 or t.date() != table.index[i - 1].date()
              else t.strftime("%H:%M") for i, t in enumerate(table.index)]
    ax.set_xticks(list(x), labels, rotation=45, ha="right", fontsize=7)
    ax.set_ylabel(f"sessions per {freq}")
    ax.legend(fontsize=8, frameon=False, loc="upper right", ncols=2)
    return _done(fig, ax, own, f"Timeline across the class ({int(table['sessions'].sum())} sessions, UTC)",
                 "class-timeline", table)

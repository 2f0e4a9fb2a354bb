"""`cost_whatif(session, prices=...)`: the session's cost per role as recorded and under
other price tables, side by side (pricing.reprice: a pure fold over the log, nothing re-run),
as a figure (a WorkbenchFigure: deterministic SVG, nbval compares it) whose repr is the table."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from ...providers.pricing import PRICE_KEYS, Repricing, reprice
from ..api import WorkbenchError
from ..dtypes import ROLE_NAMES, categorical
from ..source import load_session
from .canvas import WorkbenchFigure, finish, panels_for, two_axes

_COLORS = ("#999999", "#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9")


class CostWhatIf(WorkbenchFigure):
    """What `cost_whatif` returns: a WorkbenchFigure (recorded and what-if cost per role, and
    the totals, side by side) that also keeps the re-pricing; its repr is the table."""

    repricing: Repricing
    """Per role: tokens, and cost under `recorded` and each what-if table."""

    def __init__(self, repricing: Repricing, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.repricing = repricing

    def total(self, table: str) -> float:
        """The session's cost under `table` (USD)."""
        return self.repricing.total(table)

    def __repr__(self) -> str:
        r = self.repricing
        width = max(12, *(len(t) for t in r.tables))
        head = f"{'role':<10} {'calls':>5} {'tokens in':>9} {'out':>6} " + " ".join(
            f"{t:>{width}}" for t in r.tables)
        lines = [f"cost of {r.session_id} re-priced (USD; same tokens, nothing re-run)", head]
        for c in r.roles:
            lines.append(f"{c.role:<10} {c.calls:>5} {c.input_tokens:>9} {c.output_tokens:>6} "
                         + " ".join(f"{v:>{width}.6f}" for _, v in c.cost))
        lines.append(f"{'total':<10} {'':>5} {'':>9} {'':>6} "
                     + " ".join(f"{r.total(t):>{width}.6f}" for t in r.tables))
        return "\n".join(lines)


def cost_whatif(session: Any, prices: Any, workspace: Path | str | None = None, *,
                ax: Any = None) -> Figure:
    """Re-price `session` (an id or what %agent returned) under `prices`: one price table
    (`{"input_per_mtok": .., "output_per_mtok": ..}`, USD per million tokens), a mapping of
    names to tables (`{"Claude Haiku 4.5": {...}, ...}`), or the name of a profile in the
    workspace (its `prices`). WorkbenchError names a bad table and key. Returns a CostWhatIf,
    or with `ax=(left, right)` (two Axes) draws there and returns their Figure; either way
    `.data` is one row per role (index `role`): calls, tokens_in, tokens_out, and a
    `usd <table>` column per price table (`usd recorded` first)."""
    panels = None if ax is None else two_axes(ax, "cost_whatif")
    data = load_session(session, workspace)
    tables = _tables(prices, data.workspace)
    try:
        r = reprice(data.events, tables, data.session_id)
    except ValueError as exc:
        raise WorkbenchError(str(exc)) from None
    if not r.roles:
        raise WorkbenchError(f"{data.session_id} has no llm.response: there is no cost to re-price")
    fig, left, right, own = panels_for(panels, "cost_whatif", (9, 3.2), (1.6, 1),
                                       make=lambda **kw: CostWhatIf(r, **kw))
    _draw(r, left, right)
    if own:
        fig.subplots_adjust(left=0.08, right=0.98, bottom=0.2, wspace=0.3)
    return finish(fig, f"whatif-{r.session_id}", _title(r), _frame(r))


def _title(r: Repricing) -> str:
    return f"{r.session_id}: cost per role re-priced under {', '.join(r.tables[1:])}"


def _frame(r: Repricing) -> pd.DataFrame:
    rows = [{"role": c.role, "calls": c.calls, "tokens_in": c.input_tokens, "tokens_out": c.output_tokens,
             **{f"usd {n}": v for n, v in c.cost}} for c in r.roles]
    frame = pd.DataFrame(rows)
    frame["role"] = categorical(frame["role"], ROLE_NAMES)
    return frame.set_index("role")


def _tables(prices: Any, ws: Any) -> dict[str, Mapping[str, float]]:
    if isinstance(prices, str):
        from ...config import load_config
        from ...schemas.registry import SchemaRegistry

        config = load_config(ws.config_file, SchemaRegistry.load(ws.contract_dir("schemas")),
                             "agentos.yaml")
        try:
            return {prices: config.profile(prices).prices}
        except KeyError as exc:
            raise WorkbenchError(str(exc.args[0])) from None
    if isinstance(prices, Mapping) and prices and set(prices) <= set(PRICE_KEYS):
        return {"what-if": prices}
    if isinstance(prices, Mapping) and prices:
        return dict(prices)
    raise WorkbenchError("prices: give a price table {'input_per_mtok': .., 'output_per_mtok': ..} "
                         "(USD per million tokens), a mapping of names to such tables, or a profile name")


def _draw(r: Repricing, left: Axes, right: Axes) -> None:
    n = len(r.tables)
    width = 0.8 / n
    xs = list(range(len(r.roles)))
    for i, table in enumerate(r.tables):
        values = [dict(c.cost)[table] for c in r.roles]
        left.bar([x - 0.4 + width * (i + 0.5) for x in xs], values, width=width,
                 color=_COLORS[i % len(_COLORS)], label=table)
    left.set_xticks(xs, [c.role for c in r.roles], fontsize=8)
    left.set_ylabel("cost (USD)")
    left.set_title(f"{r.session_id}: cost per role, same tokens", fontsize=10)
    left.legend(fontsize=7, frameon=False)
    totals = [r.total(t) for t in r.tables]
    right.bar(range(n), totals, color=[_COLORS[i % len(_COLORS)] for i in range(n)])
    for i, v in enumerate(totals):
        right.annotate(f"${v:.6f}", (i, v), textcoords="offset points", xytext=(0, 3), ha="center",
                       fontsize=7)
    right.set_xticks(range(n), list(r.tables), fontsize=7, rotation=15)
    right.set_title("session total", fontsize=10)
    right.set_ylim(0, max(totals) * 1.2 or 1)

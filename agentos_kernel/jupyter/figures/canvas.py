"""The Figure every figure function returns, and where it draws (`ax=`).

Each figure function (timeline_figure, cost_figure, phase_graph_figure, cost_whatif, the class
figures) returns a matplotlib Figure whose `data` attribute is the DataFrame it was drawn from.
Without `ax=` it makes a WorkbenchFigure: a plain matplotlib Figure (made without pyplot, so the
inline backend never shows it a second time) that a notebook shows as SVG with deterministic
bytes (fixed hash salt and ids, no Date or Creator metadata, text kept as text), because nbval
compares `image/svg+xml` but silently skips PNG. With `ax=` it draws into the caller's Axes and
returns their Figure with `data` set on it, as pandas' and seaborn's plotting functions do;
`subplots()` makes a WorkbenchFigure to compose several drawings in, still shown as SVG.
"""

from __future__ import annotations

import io
import sys
from collections.abc import Callable, Iterable
from typing import Any

import matplotlib
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure


class WorkbenchFigure(Figure):
    """A matplotlib Figure shown inline as SVG with deterministic bytes (nbval compares them);
    restyle it like any Figure (`fig.axes[0].set_title(...)`) and the SVG follows."""

    data: pd.DataFrame
    """The table behind the last drawing (every figure function documents its columns)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        _svg_only()
        self.data = pd.DataFrame()
        self._titles: list[str] = []
        self._keys: list[str] = []

    @property
    def title(self) -> str:
        """What it shows: the title of each drawing in it, joined by " | "."""
        return " | ".join(self._titles)

    @property
    def svg(self) -> str:
        """The SVG document as it is now (the same bytes for the same drawing)."""
        return render_svg(self, "+".join(self._keys) or "figure")

    def drew(self, key: str, title: str, data: pd.DataFrame) -> None:
        """Record a drawing: its id salt (`key`), its title and its table."""
        self._keys.append(key)
        self._titles.append(title)
        self.data = data

    def _repr_svg_(self) -> str:
        return self.svg

    def __repr__(self) -> str:
        return f"figure: {self.title or '(nothing drawn)'}"


def _svg_only() -> None:
    # Once pyplot's inline backend is loaded in a kernel, IPython renders every Figure as PNG
    # too (a printer registered for Figure, which a subclass inherits): a second render of each
    # picture, stored in the notebook for nothing (nbval skips PNG). A WorkbenchFigure opts out
    # with a printer of its own that gives nothing; its SVG stays the one picture.
    shell = sys.modules["IPython"].get_ipython() if "IPython" in sys.modules else None
    if shell is None:
        return
    for mime in ("image/png", "image/jpeg", "application/pdf"):
        formatter = shell.display_formatter.formatters.get(mime)
        if formatter is not None and WorkbenchFigure not in formatter.type_printers:
            formatter.for_type(WorkbenchFigure, _no_picture)


def _no_picture(fig: Figure) -> None:
    return None


def render_svg(fig: Figure, key: str) -> str:
    """SVG text of `fig`; ids are salted with `key` so several figures on a page never share one."""
    buf = io.StringIO()
    with matplotlib.rc_context({"svg.hashsalt": f"agentos-{key}", "svg.id": f"agentos-{key}",
                                "svg.fonttype": "none"}):
        fig.savefig(buf, format="svg", metadata={"Date": None, "Creator": None})
    return buf.getvalue()


def subplots(nrows: int = 1, ncols: int = 1, *, figsize: tuple[float, float] | None = None,
             **kwargs: Any) -> tuple[WorkbenchFigure, Any]:
    """`plt.subplots` for the workbench: a WorkbenchFigure (shown once, as deterministic SVG;
    pyplot never holds it) and its Axes, to draw several figures into with `ax=`. `kwargs` go
    to Figure.subplots (sharex, sharey, squeeze, width_ratios, gridspec_kw, ...)."""
    fig = WorkbenchFigure(figsize=figsize)
    return fig, fig.subplots(nrows, ncols, **kwargs)


def axes_for(ax: Any, name: str, figsize: tuple[float, float]) -> tuple[Figure, Axes, bool]:
    """Where figure function `name` draws: a new WorkbenchFigure of `figsize` and its Axes
    (own=True), or the caller's `ax` and its Figure (own=False: its layout is theirs)."""
    if ax is None:
        fig = WorkbenchFigure(figsize=figsize)
        return fig, fig.add_subplot(), True
    target = one_axes(ax, name)
    return figure_of(target), target, False


def panels_for(ax: Any, name: str, figsize: tuple[float, float], width_ratios: tuple[float, float],
               make: Callable[..., WorkbenchFigure] = WorkbenchFigure) -> tuple[Figure, Axes, Axes, bool]:
    """axes_for for the figures with two panels side by side (`ax=(left, right)`); `make`
    builds the new figure (a WorkbenchFigure subclass that keeps more)."""
    if ax is None:
        fig = make(figsize=figsize)
        left, right = fig.subplots(1, 2, width_ratios=width_ratios)
        return fig, left, right, True
    left, right = two_axes(ax, name)
    return figure_of(left), left, right, False


def one_axes(ax: Any, name: str) -> Axes:
    """`ax` checked: a matplotlib Axes (TypeError naming the fix otherwise)."""
    if not isinstance(ax, Axes):
        raise TypeError(f"{name}: ax must be a matplotlib Axes (from plt.subplots() or "
                        f"agentos_kernel.jupyter.subplots()); got {type(ax).__name__}")
    return ax


def two_axes(ax: Any, name: str) -> tuple[Axes, Axes]:
    """`ax` checked: two Axes, for the figures with two panels (TypeError naming the fix)."""
    pair = list(ax) if isinstance(ax, Iterable) and not isinstance(ax, str | bytes) else [ax]
    if len(pair) != 2 or not all(isinstance(a, Axes) for a in pair):
        raise TypeError(f"{name} draws two panels: pass ax=(left, right), two matplotlib Axes "
                        f"(e.g. subplots(1, 2)[1]); got {ax!r}")
    return pair[0], pair[1]


def figure_of(ax: Axes) -> Figure:
    """The Figure `ax` is drawn in (the root one when it is in a SubFigure)."""
    fig = ax.figure.figure  # a SubFigure's .figure is its root Figure; a Figure's is itself
    assert isinstance(fig, Figure)  # an Axes always belongs to a Figure
    return fig


def finish(fig: Figure, key: str, title: str, data: pd.DataFrame) -> Figure:
    """`fig` with `data` set on it (and, for a WorkbenchFigure, the drawing's title and id salt)."""
    if isinstance(fig, WorkbenchFigure):
        fig.drew(key, title, data)
    else:
        fig.data = data  # type: ignore[attr-defined]  # the documented attribute, on a caller's Figure
    return fig

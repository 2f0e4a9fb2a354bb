"""Two sessions side by side: `%diff A B` (a DiffView) and the LogDiff widget. Both show
logdiff's one engine (the one `rerun --verify` and `agentos diff` use): steps aligned by
(role, event type, hook point), the first divergence highlighted, per-role token and cost deltas.

Reprs hold only what the logs hold (no paths, no times), so notebooks compare stably.
"""

from __future__ import annotations

import bisect
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import ipywidgets as W

from ...runs.diff import DiffRow, EventsDiff, diff_events
from ...runs.difftext import MARKS, diff_lines, row_note, usage_lines, verdict
from ..layers import clip, esc
from ..source import open_session

_ROW_STYLE = {"same": "", "changed": "background:#fff3b0", "only_a": "background:#ffebe9",
              "only_b": "background:#e6ffec"}
_FIRST = "outline:2px solid #cf222e"
_BOX = "border:1px solid #bbb;border-radius:4px;padding:6px 10px;margin:2px 0;font-family:monospace"
_SHOWN = 4000
"""Characters of one event's payload the detail pane shows (it scrolls)."""
WINDOW = 500
"""Rows the LogDiff table shows at most: those around the step picked (each row's events are
read from the logs when shown, so a million-row diff renders as fast as a short one)."""


def payload_text(value: Any, pad: str = "") -> list[str]:
    """A payload as indented text lines, keys sorted: strings as they are (a prompt's real
    newlines and quotes, not JSON's escapes; a string holding a JSON object or list shown as
    that structure, marked `(JSON)`), other scalars as JSON."""
    if isinstance(value, dict | list) and value:
        items = sorted(value.items()) if isinstance(value, dict) else [("-", v) for v in value]
        out: list[str] = []
        for key, item in items:
            label = f"{key}:" if isinstance(value, dict) else key
            inner = _json_in(item)
            if inner is not None:
                out += [f"{pad}{label} (JSON)", *payload_text(inner, pad + "  ")]
            elif isinstance(item, dict | list) and item:
                out += [f"{pad}{label}", *payload_text(item, pad + "  ")]
            elif isinstance(item, str) and "\n" in item:
                out += [f"{pad}{label}", *(pad + "  " + line if line else "" for line in item.split("\n"))]
            else:
                out.append(f"{pad}{label} {_scalar(item)}")
        return out
    return [pad + _scalar(value)]


def _scalar(value: Any) -> str:
    return value if isinstance(value, str) and value else json.dumps(value, ensure_ascii=False)


def _json_in(value: Any) -> Any:
    """The object or list a string holds as JSON (a role's input, a model's answer), else None."""
    if not isinstance(value, str) or not value.lstrip().startswith(("{", "[")):
        return None
    try:
        inner = json.loads(value)
    except ValueError:
        return None
    return inner if isinstance(inner, dict | list) and inner else None


def diff_sessions(a: Any, b: Any, workspace: Path | str | None = None) -> EventsDiff:
    """Diff two sessions (ids, or what %agent returned), A's session id read as B's; a log
    is read streaming (`LogEvents`), its rows' events read back when shown."""
    da, db = open_session(a, workspace), open_session(b, workspace)
    return diff_events(da.events, db.events, (da.session_id, db.session_id),
                       names=(da.session_id, db.session_id))


def rows_html(d: EventsDiff, only_changes: bool = False, window: int | None = None,
              around: int = 0) -> str:
    """The aligned steps as an HTML table; the first divergence outlined. `window`: at most
    that many rows, those around row `around` (0-based), and a last line saying which."""
    first = d.first_row
    shown: Sequence[int] = d.rows.changes if only_changes else range(len(d.rows))
    lo, hi = 0, len(shown)
    if window is not None and hi > window:
        lo = min(max(bisect.bisect_left(shown, around) - window // 2, 0), hi - window)
        hi = lo + window
    body = []
    picked = shown[lo:hi]
    # a run of every row: its events read a batch at a time
    rows = d.rows.window(lo, hi) if not only_changes else [d.rows[i] for i in picked]
    for i, r in zip(picked, rows, strict=True):
        role, typ = r.step
        style = _ROW_STYLE[r.kind] + (";" + _FIRST if i == first else "")
        body.append(
            f'<tr class="agentos-diff-{r.kind}" style="{style}"><td>{MARKS[r.kind]}</td>'
            f"<td>{r.a.seq if r.a is not None else '-'}</td><td>{r.b.seq if r.b is not None else '-'}</td>"
            f'<td style="text-align:left">{esc(role)}</td><td style="text-align:left">{esc(typ)}</td>'
            f'<td style="text-align:left">{esc(row_note(r.kind, r.a, r.b, r.path))}</td></tr>')
    if (lo, hi) != (0, len(shown)):
        body.append(f'<tr><td colspan="6" style="text-align:left"><i>rows {lo + 1}-{hi} of '
                    f"{len(shown)} shown: the step picker moves them</i></td></tr>")
    head = (f"<tr><th></th><th>{esc(d.a)}</th><th>{esc(d.b)}</th><th>role</th><th>type</th>"
            "<th>what differs</th></tr>")
    return f'<table class="agentos-logdiff">{head}{"".join(body)}</table>'


def usage_html(d: EventsDiff) -> str:
    """Per-role calls, tokens and cost of A and B, and B minus A."""
    rows = "".join(
        f'<tr><td style="text-align:left">{esc(u.role)}</td><td>{u.calls[0]} → {u.calls[1]}</td>'
        f"<td>{u.tokens[0]}</td><td>{u.tokens[1]}</td><td>{u.token_delta:+d}</td>"
        f"<td>{u.cost_usd[0]:.6f}</td><td>{u.cost_usd[1]:.6f}</td><td>{u.cost_delta:+.6f}</td></tr>"
        for u in d.roles)
    head = (f"<tr><th>role</th><th>calls</th><th>tokens {esc(d.a)}</th><th>tokens {esc(d.b)}</th>"
            f"<th>Δ tokens</th><th>$ {esc(d.a)}</th><th>$ {esc(d.b)}</th><th>Δ $</th></tr>")
    return f'<table class="agentos-usage">{head}{rows}</table>'


@dataclass(frozen=True)
class DiffView:
    """What `%diff A B` returns: the verdict, the steps that differ, per-role deltas."""

    diff: EventsDiff
    """The engine's result (rows, first divergence, usage)."""

    @property
    def identical(self) -> bool:
        """The two sessions do the same thing."""
        return self.diff.identical

    def __repr__(self) -> str:
        d = self.diff
        return "\n".join([verdict(d), *(diff_lines(d, True) if d.first else []), *usage_lines(d)])

    def _repr_html_(self) -> str:
        d = self.diff
        mark = "✓" if d.identical else "✗"
        table = rows_html(d, only_changes=True) if d.first else ""
        return (f'<div class="agentos-diffview" style="{_BOX}">{mark} {esc(verdict(d))}{table}'
                f"<br><b>per role</b>{usage_html(d)}</div>")


class LogDiff(W.VBox):
    """Two logs side by side: the aligned steps (every one, or only the differences), the
    first divergence outlined, a step picker showing both events' payloads next to each
    other (it starts at the first divergence), and the per-role token and cost deltas."""

    def __init__(self, a: Any, b: Any, *, workspace: Path | str | None = None) -> None:
        self.diff: EventsDiff = diff_sessions(a, b, workspace)
        d = self.diff
        self.header = W.HTML(f"<b>{esc(verdict(d))}</b>")
        self.changes_only = W.Checkbox(value=not d.identical, description="only the steps that differ",
                                       indent=False)
        # 1-based, as the caption under it ("step 3 of 40") counts
        start = d.first_row + 1 if d.first_row is not None else 1
        self.step = W.IntSlider(value=start, min=1, max=max(len(d.rows), 1), description="step",
                                continuous_update=True)
        self.first_button = W.Button(description="first divergence", disabled=d.first_row is None)
        self.table, self.detail, self.usage = W.HTML(), W.HTML(), W.HTML(usage_html(d))
        super().__init__(children=[self.header, W.HBox([self.changes_only, self.first_button]),
                                   self.table, self.step, self.detail, self.usage])
        self.add_class("agentos-logdiff-widget")
        self.changes_only.observe(lambda _c: self._render(), names="value")
        self.step.observe(lambda _c: self._render(), names="value")
        self.first_button.on_click(lambda _b: self.go_first())
        self._render()

    @property
    def row(self) -> DiffRow | None:
        """The step shown in the detail pane (the slider's value counts from 1)."""
        return self.diff.rows[self.step.value - 1] if self.diff.rows else None

    def go_first(self) -> None:
        """Show the first divergence."""
        if self.diff.first_row is not None:
            self.step.value = self.diff.first_row + 1

    def _render(self) -> None:
        self.table.value = rows_html(self.diff, self.changes_only.value, WINDOW, self.step.value - 1)
        r = self.row
        if r is None:
            self.detail.value = "(both logs are empty)"
            return
        cells = []
        for name, e in ((self.diff.a, r.a), (self.diff.b, r.b)):
            text = clip("\n".join(payload_text(e.payload)), _SHOWN) if e is not None else ""
            body = (f"#{e.seq} {esc(e.type)} · {esc(e.actor)}<pre style='max-height:24em;overflow:auto;"
                    f"white-space:pre-wrap'>{esc(text)}</pre>" if e is not None else "<i>no such step</i>")
            cells.append(f'<td style="vertical-align:top;text-align:left;width:50%"><b>{esc(name)}</b> '
                         f"{body}</td>")
        first = " · the first divergence" if self.step.value - 1 == self.diff.first_row else ""
        self.detail.value = (f"<b>step {self.step.value} of {len(self.diff.rows)}: {r.kind}{first}"
                             f"</b><table><tr>{''.join(cells)}</tr></table>")

    def __repr__(self) -> str:
        d = self.diff
        differ = len(d.rows.changes)
        state = "the same" if d.identical else f"diverge at event {d.first.index}"  # type: ignore[union-attr]
        return f"LogDiff({d.a} vs {d.b}: {state}; {differ} of {len(d.rows)} steps differ)"

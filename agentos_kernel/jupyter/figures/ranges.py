"""What the timeline and cost figures draw, for a chosen range of a session of any length.

`events_frame` builds a pandas row per event with parsed timestamps: fine for a request,
0.8 s per 100k events. The figures need less (seq, actor, layer, type, parent; the LLM
calls' usage), so this module reads only that, for the events in a window, from a log's
lines parsed in batches (`LogEvents.records`). Past `max_points` events the timeline is
binned: one mark per (bin, lane, layer) that had events, so the picture and its SVG are
bounded by bins x lanes whatever the length of the session.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from typing import Any, cast

import pandas as pd

from ...roles.agents import ROLES
from ...store.events import Event
from ...store.recorder import layer_for
from ...store.replay.logview import LogEvents
from ..dtypes import EVENT_TYPES, LAYERS, ROLE_NAMES, categorical
from ..layers import FAILURE_TYPES

TIMELINE_MAX_POINTS = 2000
"""Above this many events in the range, the timeline is drawn binned (no parent links)."""
TIMELINE_BINS = 200
"""Bins across the range when the timeline is binned."""
COST_MAX_LABELS = 40
"""Above this many LLM calls in the range, the cumulative cost is a line with no labels."""

Window = tuple[int, int]
"""(first, last) event seq shown, both included (seq is the 1-based position in the log)."""


def resolve_window(n: int, window: Sequence[int] | None) -> Window:
    """The range to draw: the whole log when `window` is None, else `window` checked against
    a log of `n` events (ValueError naming the log's range and the fix)."""
    if n == 0:
        raise ValueError("the session has no events to draw")
    if window is None:
        return 1, n
    if len(window) != 2 or not all(isinstance(v, int) and not isinstance(v, bool) for v in window):
        raise ValueError(f"window must be (first_seq, last_seq), two ints; got {window!r}")
    lo, hi = window
    if not 1 <= lo <= hi <= n:
        raise ValueError(f"window {tuple(window)} is outside the log: pick 1 <= first <= last <= {n}")
    return lo, hi


# A canonical line (sorted keys, no spaces) starts with its actor and ends with its type; the
# figures read those two from the bytes and parse only the lines whose payload they need.
_HEAD_TAIL = re.compile(rb'^\{"actor":"([^"\\\n]*)",[^\n]*,"type":"([^"\\\n]*)"\}\r?$', re.M)


def _heads(events: Sequence[Event], lo: int, hi: int) -> list[tuple[str, str]] | None:
    """(actor, type) of events at 0-based positions lo..hi-1 read from a log's canonical lines
    without parsing them; None when the events are not a LogEvents or a line is not canonical."""
    if not isinstance(events, LogEvents):
        return None
    view, _ = events.span(lo, hi)
    found = [(m[1].decode(), m[2].decode()) for m in _HEAD_TAIL.finditer(view)]
    return found if len(found) == hi - lo else None


def _fields(events: Sequence[Event], lo: int, hi: int) -> Iterator[tuple[Any, ...]]:
    """(id, type, actor, payload, parent_id) of events at 0-based positions lo..hi-1."""
    if isinstance(events, LogEvents):
        for i, d in enumerate(events.records(lo, hi), lo):
            if type(d) is not dict or type(d.get("type")) is not str or type(d.get("actor")) is not str \
                    or "id" not in d or "payload" not in d:
                events[i]  # builds the Event, which raises the LogError naming file, line and field
            yield d["id"], d["type"], d["actor"], d["payload"], d.get("parent_id")
        return
    for i in range(lo, hi):
        ev = events[i]
        yield ev.id, ev.type, ev.actor, ev.payload, ev.parent_id


def timeline_range(events: Sequence[Event], window: Window, links: bool = True) -> pd.DataFrame:
    """One row per event in `window`: seq, actor, layer and type (categorical, as in
    events_frame), failed, parent (the parent's
    seq when the parent is inside the window, else <NA>; all <NA> without `links`, which
    lets a canonical log be read without parsing its lines)."""
    lo, hi = window
    heads = None if links else _heads(events, lo - 1, hi)
    if heads is not None and isinstance(events, LogEvents):  # heads are read from a LogEvents only
        actors = [a for a, _ in heads]
        types = [t for _, t in heads]
        layers = [layer_for(t, events.record(i).get("payload") if t == "domain.error" else None)
                  for i, t in enumerate(types, lo - 1)]
        parents: list[int | None] = [None] * len(heads)
        seqs = list(range(lo, hi + 1))
    else:
        seq_of: dict[str, int] = {}
        seqs, actors, layers, types, parents = [], [], [], [], []
        for seq, (eid, type_, actor, payload, parent_id) in enumerate(_fields(events, lo - 1, hi), lo):
            seq_of[eid] = seq
            seqs.append(seq)
            actors.append(actor)
            layers.append(layer_for(type_, payload))
            types.append(type_)
            parents.append(seq_of.get(parent_id) if parent_id and links else None)
    frame = pd.DataFrame({"seq": seqs, "actor": actors, "layer": categorical(layers, LAYERS),
                          "type": categorical(types, EVENT_TYPES)})
    frame["failed"] = frame["type"].isin(FAILURE_TYPES)
    frame["parent"] = pd.array(parents, dtype="Int64")
    return frame


def binned(points: pd.DataFrame, window: Window, bins: int) -> pd.DataFrame:
    """`points` (seq, lane, actor, layer, failed) grouped into `bins` equal ranges of seq: per
    (bin, lane, layer) that had events, its first and last seq, how many events and failures,
    and `y`, where its mark goes (the lane, nudged apart when the lane has several layers)."""
    lo, hi = window
    width = -(-(hi - lo + 1) // bins)  # ceil: every bin but the last holds `width` events
    b = (points["seq"] - lo) // width
    table = points.assign(bin=b).groupby(["bin", "lane", "actor", "layer"], sort=True).agg(
        events=("seq", "count"), failures=("failed", "sum")).reset_index()
    table.insert(1, "seq", lo + table["bin"] * width)
    table.insert(2, "seq_last", (table["seq"] + width - 1).clip(upper=hi))
    # A lane with events of several layers (a role: L2 calls, L3 handoffs) gets a row per
    # layer just around it, so no layer's marks hide another's.
    kinds = table[["lane", "layer"]].drop_duplicates().sort_values(["lane", "layer"])
    rank = kinds.groupby("lane").cumcount()
    size = kinds.groupby("lane")["layer"].transform("count")
    kinds = kinds.assign(y=kinds["lane"] + (rank - (size - 1) / 2) * 0.22)
    table = table.merge(kinds, on=["lane", "layer"], how="left")
    return table.drop(columns="bin")


def bands(table: pd.DataFrame) -> dict[str, list[tuple[int, int, float]]]:
    """Per layer, the runs of consecutive bins of `binned` that had events on one row:
    (first seq, last seq, y). A lane busy all along is one band, however long the log."""
    out: dict[str, list[tuple[int, int, float]]] = {}
    for (layer, y), rows in table.sort_values("seq").groupby(["layer", "y"], sort=True):
        runs = out.setdefault(str(layer), [])
        level = float(cast(float, y))  # the float column built above (groupby types keys Hashable)
        spans = zip(rows["seq"], rows["seq_last"], strict=True)
        start, prev = next(spans)  # a group has at least one row
        for first, last in spans:
            if first != prev + 1:
                runs.append((start, prev, level))
                start = first
            prev = last
        runs.append((start, prev, level))
    return out


def llm_calls(events: Sequence[Event], window: Window) -> pd.DataFrame:
    """The llm.response events in `window` as the rows `cost_by_role` and `cumulative_cost`
    read: seq, type, role, tokens_in, tokens_out, cost_usd (the same values and dtypes
    events_frame has: role NA when the call names none)."""
    lo, hi = window
    role_actor: dict[str, str] = {}  # ids of events by a role: a response's parent names its role
    rows = []
    heads = _heads(events, lo - 1, hi)
    if heads is not None:  # parse only the calls: a response's parent is its llm.request
        picked = [i for i, (_, t) in enumerate(heads, lo - 1) if t in ("llm.request", "llm.response")]
        fields: Iterator[tuple[int, tuple[Any, ...]]] = (
            (i + 1, next(_fields(events, i, i + 1))) for i in picked)
    else:
        fields = enumerate(_fields(events, lo - 1, hi), lo)
    for seq, (eid, type_, actor, payload, parent_id) in fields:
        if actor in ROLES:
            role_actor[eid] = actor
        if type_ != "llm.response":
            continue
        p = payload if isinstance(payload, dict) else {}
        usage = p.get("usage", {})
        role = p["role"] if isinstance(p.get("role"), str) else actor if actor in ROLES \
            else role_actor.get(parent_id or "")
        rows.append((seq, type_, role, int(usage.get("input_tokens", 0)),
                     int(usage.get("output_tokens", 0)), float(usage.get("cost_usd", 0.0))))
    frame = pd.DataFrame(rows, columns=["seq", "type", "role", "tokens_in", "tokens_out", "cost_usd"])
    frame["type"] = categorical(frame["type"], EVENT_TYPES)
    frame["role"] = categorical(frame["role"], ROLE_NAMES)
    return frame


def thinned_steps(running: pd.DataFrame, window: Window, bins: int) -> pd.DataFrame:
    """The last row of `running` in each of `bins` ranges of seq: a monotonic running total
    drawn as steps through these looks the same and has a bounded number of vertices."""
    lo, hi = window
    width = -(-(hi - lo + 1) // bins)
    return running.groupby((running["seq"] - lo) // width, sort=True).tail(1)

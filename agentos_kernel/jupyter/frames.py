"""The timeline as a pandas DataFrame, and the small tables the figures are drawn from.

Every column comes from the log; what a row does not have is missing (NA), never "".
`events_frame` columns (docs/architecture.md "The workbench's figures and DataFrames"):

| column | dtype | what |
|---|---|---|
| seq | int64 | the event's 1-based position in the log |
| ts | datetime64[us, UTC] | when it was logged |
| type | category (dtypes.EVENT_TYPES) | the event type |
| layer | category (dtypes.LAYERS) | the spec layer, L1..L8 (a domain.error names its own) |
| actor | str | who logged it: user, system, a role, tool:<name>, hook:<handler> (an open set) |
| role | category (dtypes.ROLE_NAMES) | the role it belongs to (a tool result: the caller); NA for none |
| parent | Int64 | the parent event's seq (not its id: ids are random outside deterministic mode) |
| tokens_in, tokens_out | int64 | an llm.response's usage, else 0 |
| cost_usd | float64 | an llm.response's cost, else 0.0 |
| duration_ms | float64 | what the log measured (a hook's `ms`; request or invoke to its answer), else NaN |
| hook | category (dtypes.HOOK_POINTS) | a hook.fired's hook point, else NA |
| decision | category (dtypes.DECISIONS) | a hook.fired's or workflow.policy_gated's decision, else NA |
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from ..roles.agents import ROLES
from ..store.recorder import layer_of
from .dtypes import DECISIONS, EVENT_TYPES, HOOK_POINTS, LAYERS, ROLE_NAMES, categorical
from .layers import FAILURE_TYPES
from .source import load_session

COLUMNS = ("seq", "ts", "type", "layer", "actor", "role", "parent", "tokens_in", "tokens_out",
           "cost_usd", "duration_ms", "hook", "decision")


def events_frame(session: Any, workspace: Path | str | None = None) -> pd.DataFrame:
    """One row per event: seq, ts, type, layer, actor, role, parent, tokens_in, tokens_out,
    cost_usd, duration_ms, hook, decision (the table above: categories for the closed sets,
    NA where the event has no such value)."""
    events = load_session(session, workspace).events
    seq_of = {ev.id: (ev.seq or i) for i, ev in enumerate(events, 1)}
    by_id = {ev.id: ev for ev in events}
    rows = []
    for i, ev in enumerate(events, 1):
        p = ev.payload if isinstance(ev.payload, dict) else {}
        parent = by_id.get(ev.parent_id) if ev.parent_id else None
        usage = p.get("usage", {}) if ev.type == "llm.response" else {}
        duration: float | None = None
        if ev.type == "hook.fired" and isinstance(p.get("ms"), int | float):
            duration = float(p["ms"])
        elif ev.type in ("llm.response", "llm.error", "tool.result") and parent is not None:
            delta = pd.Timestamp(ev.ts) - pd.Timestamp(parent.ts)
            duration = delta.total_seconds() * 1000
        rows.append({
            "seq": ev.seq or i, "ts": pd.Timestamp(ev.ts), "type": ev.type, "layer": layer_of(ev),
            "actor": ev.actor, "role": _role(ev, parent),
            "parent": seq_of.get(ev.parent_id) if ev.parent_id else None,
            "tokens_in": int(usage.get("input_tokens", 0)), "tokens_out": int(usage.get("output_tokens", 0)),
            "cost_usd": float(usage.get("cost_usd", 0.0)), "duration_ms": duration,
            "hook": p.get("hook") if ev.type == "hook.fired" else None,
            "decision": p.get("decision") if ev.type in ("hook.fired", "workflow.policy_gated") else None,
        })
    frame = pd.DataFrame(rows, columns=list(COLUMNS))
    frame["parent"] = frame["parent"].astype("Int64")
    frame["duration_ms"] = frame["duration_ms"].astype("float64")
    for column, closed in (("type", EVENT_TYPES), ("layer", LAYERS), ("role", ROLE_NAMES),
                           ("hook", HOOK_POINTS), ("decision", DECISIONS)):
        frame[column] = categorical(frame[column], closed)
    return frame


def _role(ev: Any, parent: Any) -> str | None:
    p = ev.payload if isinstance(ev.payload, dict) else {}
    if isinstance(p.get("role"), str):
        return p["role"]
    if ev.actor in ROLES:
        return ev.actor
    if parent is not None and parent.actor in ROLES:
        return parent.actor  # a tool's result belongs to the role that called it
    return None


def cost_by_role(frame: pd.DataFrame) -> pd.DataFrame:
    """Per role, in the order roles first spoke: LLM calls, tokens in and out, cost (USD).
    `frame` is events_frame's (its llm.response rows are the calls) or a table of calls only,
    with no `type` column (cumulative_cost's, cost_figure's `data`). Calls of no role are
    one row, NA."""
    calls = frame[frame["type"] == "llm.response"] if "type" in frame.columns else frame
    # Grouped as plain values: a categorical key would make a row for every role never heard.
    role = calls["role"].astype(object).rename("role")
    table = calls.groupby(role, sort=False, dropna=False).agg(
        calls=("seq", "count"), tokens_in=("tokens_in", "sum"), tokens_out=("tokens_out", "sum"),
        cost_usd=("cost_usd", "sum"))
    table["cost_usd"] = table["cost_usd"].round(8)
    return table


def cumulative_cost(frame: pd.DataFrame) -> pd.DataFrame:
    """After each LLM call: seq, role, tokens_in, tokens_out, cost_usd (the call's), and the
    running totals cumulative_tokens and cumulative_usd."""
    calls = frame.loc[frame["type"] == "llm.response", ["seq", "role", "tokens_in", "tokens_out",
                                                         "cost_usd"]].reset_index(drop=True)
    calls["cumulative_tokens"] = (calls["tokens_in"] + calls["tokens_out"]).cumsum()
    calls["cumulative_usd"] = calls["cost_usd"].cumsum().round(8)
    return calls


def timeline_points(frame: pd.DataFrame) -> tuple[list[str], pd.DataFrame]:
    """Actor lanes in order of first appearance, and each event's (seq, lane, layer, failed)."""
    lanes = list(dict.fromkeys(frame["actor"]))
    points = pd.DataFrame({
        "seq": frame["seq"], "lane": [lanes.index(a) for a in frame["actor"]],
        "actor": frame["actor"], "layer": frame["layer"], "type": frame["type"],
        "failed": frame["type"].isin(FAILURE_TYPES)})
    return lanes, points

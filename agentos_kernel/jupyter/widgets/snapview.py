"""A snapshot as an HTML table, and what changed between two snapshots.

Both work field by field on the Snapshot itself, never through `to_dict()`: that deep-copies
every tool call and hook decision, which at 100k events is most of a step's time. A long
list is written out only as far as the table shows it (300 characters). A snapshot from
`ReplayIndex.view` holds its lists as LogItems (read from the log when asked for): the
table reads the items it shows, the diff the items the last event appended.
"""

from __future__ import annotations

import json
from dataclasses import asdict, fields
from typing import Any

from ...store.replay.fold import Cost, Snapshot
from ...store.replay.logitems import LogItems
from ..layers import clip, esc

SHOWN = 300
"""Characters of a field's JSON the snapshot table shows."""


def _show(v: Any) -> str:
    return json.dumps(list(v) if isinstance(v, LogItems) else v, ensure_ascii=False, sort_keys=True)


def json_head(value: Any, limit: int = SHOWN) -> str:
    """The JSON of `value` as `_show` writes it, or a prefix of it longer than `limit`:
    a list stops being written once it is past the limit (cut it to `limit` to show it)."""
    if not isinstance(value, list | tuple | LogItems) or len(value) <= 8:
        return _show(value)
    out = "["
    for i, item in enumerate(value):
        out += (", " if i else "") + _show(item)
        if len(out) > limit:
            return out
    return out + "]"


def snapshot_fields(snap: Snapshot) -> dict[str, Any]:
    """The fields of snapshot_v1 in order, shallow (lists stay the snapshot's tuples; cost
    is a dict, as in to_dict)."""
    out = {f.name: getattr(snap, f.name) for f in fields(snap)}
    for key, value in out.items():
        if isinstance(value, list):  # a Snapshot built by hand: compare it as the fold's tuples
            out[key] = tuple(value)
    if isinstance(out["cost"], Cost):
        out["cost"] = asdict(out["cost"])
    return out


def _empty(v: Any) -> bool:
    if v is None or v is False:
        return True
    if isinstance(v, list | tuple | dict | LogItems):
        return not v
    return type(v) in (int, float) and v == 0


NO_STATE = "none yet: no agent.transition so far"
"""What the state row says before the state machine's first transition (not `null`)."""


def snapshot_rows(snap: Snapshot, changed: set[str] | frozenset[str] = frozenset(),
                  compact: bool = False) -> str:
    """The snapshot as a table; `compact` gives the fields that hold nothing yet one last row
    naming them, instead of a row each."""
    rows, empty = [], []
    for key, value in snapshot_fields(snap).items():
        if compact and _empty(value) and key != "state":
            empty.append(key)
            continue
        mark = "background:#fff3b0;" if key in changed else ""
        cell = (f"<i>{NO_STATE}</i>" if key == "state" and value is None
                else f"<code>{esc(clip(json_head(value), SHOWN))}</code>")
        rows.append(f'<tr style="{mark}"><td style="text-align:left"><b>{esc(key)}</b></td>'
                    f'<td style="text-align:left">{cell}</td></tr>')
    if empty:
        rows.append('<tr class="agentos-snapshot-empty"><td style="text-align:left">'
                    '<i>false, 0 or empty so far</i></td>'
                    f'<td style="text-align:left">{esc(", ".join(empty))}</td></tr>')
    return f'<table class="agentos-snapshot">{"".join(rows)}</table>'


def diff_snapshots(before: Snapshot, after: Snapshot) -> list[tuple[str, str, str]]:
    """(field, before, after) for each field that differs; dict fields one level deep
    (cost.input_tokens), list fields as the items appended."""
    a, b = snapshot_fields(before), snapshot_fields(after)
    out: list[tuple[str, str, str]] = []
    for key, new in b.items():
        old = a[key]
        if old == new:  # the lists of two snapshots of one fold share items: compared by identity
            continue
        if isinstance(old, dict) and isinstance(new, dict) and key != "workflow":
            for sub in new:
                if old.get(sub) != new[sub]:
                    out.append((f"{key}.{sub}", _show(old.get(sub)), _show(new[sub])))
        elif isinstance(new, LogItems) and new.same_list(old) and len(new) >= len(old):
            # old is a prefix of new: two lists of one log, by construction
            out.append((key, f"{len(old)} item(s)", f"+ {_show(list(new[len(old):]))}"))
        elif isinstance(old, tuple) and isinstance(new, tuple) and new[: len(old)] == old:
            out.append((key, f"{len(old)} item(s)", f"+ {_show(list(new[len(old):]))}"))
        else:
            out.append((key, _show(old), _show(new)))
    return out

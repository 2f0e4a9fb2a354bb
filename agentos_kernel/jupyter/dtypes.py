"""The closed sets behind the workbench's DataFrame columns, as pandas categoricals.

A column whose values come from a closed set (a layer, an event type, a role, a hook point, a
decision) is categorical over the whole set, in the set's order, whatever the log holds: two
frames of different sessions then share a dtype, so they concatenate, group and sort as
categories instead of falling back to object. A value outside the set (a log from a newer
runtime, a role added in Markdown) is kept, appended to the categories, never turned into NA.
Absent values are missing (NA), never "".
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import pandas as pd

from ..hooks.bus import HOOK_EVENTS
from ..roles.agents import ROLES
from ..store.recorder import EVENT_SCHEMAS
from .layers import LAYER_NAMES

LAYERS: tuple[str, ...] = tuple(LAYER_NAMES)
"""L1..L8 (jupyter.layers.LAYER_NAMES)."""
EVENT_TYPES: tuple[str, ...] = tuple(EVENT_SCHEMAS)
"""Every event type the recorder checks a payload for (store.recorder.EVENT_SCHEMAS)."""
ROLE_NAMES: tuple[str, ...] = ROLES
"""The roles of roles.agents.ROLES, in their order (lead first)."""
HOOK_POINTS: tuple[str, ...] = HOOK_EVENTS
"""The L6 hook points (hooks.bus.HOOK_EVENTS)."""
DECISIONS: tuple[str, ...] = ("allow", "deny", "transform", "advisory", "safe_auto", "gated_auto",
                              "manual")
"""hook.fired's decision enum (event_hook_fired_v1), then workflow.policy_gated's other values
(event_workflow_policy_gated_v1)."""
VERDICTS: tuple[str, ...] = ("done", "halted", "abort")
"""How an L8 cycle ended (workflow.completed's verdict, or abort)."""


def categorical(values: Iterable[object], closed: Sequence[str]) -> pd.Categorical:
    """`values` as a categorical over `closed` (None and NA stay missing); any other value is
    appended to the categories in sorted order, so nothing is lost."""
    column = pd.Series(list(values) if not isinstance(values, pd.Series) else values, dtype=object)
    extra = sorted(set(column.dropna().unique()) - set(closed))
    return pd.Categorical(column, categories=[*closed, *extra])

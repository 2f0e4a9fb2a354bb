"""Re-price a log under other price tables: a pure fold over its `llm.response` events'
token counts (nothing is re-run, no model is asked). A price table is what a profile's
`prices` holds: USD per million tokens, `{"input_per_mtok": 3.0, "output_per_mtok": 15.0}`.

The recorded cost is the log's own `cost_usd`; a what-if cost is the same tokens times the
other table. The tokens stay those of the recorded model's tokenizer: another model would
count the same text a little differently, which no re-pricing can know.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from ..store.events import Event

PRICE_KEYS = ("input_per_mtok", "output_per_mtok")
RECORDED = "recorded"
"""The column name of the log's own cost."""


@dataclass(frozen=True)
class RoleCost:
    """One role's tokens and its cost under each price table."""

    role: str
    """The role (the llm.response's `role`, else its actor)."""
    calls: int
    """Model calls answered."""
    input_tokens: int
    """Tokens sent."""
    output_tokens: int
    """Tokens received."""
    cost: tuple[tuple[str, float], ...]
    """(table name, USD): `recorded` first, then each what-if table, in the order given."""


@dataclass(frozen=True)
class Repricing:
    """A session's cost per role, as recorded and under each what-if table."""

    session_id: str
    """The session re-priced."""
    tables: tuple[str, ...]
    """`recorded`, then the what-if table names."""
    roles: tuple[RoleCost, ...]
    """Per role, in order of first call."""

    def total(self, table: str) -> float:
        """The session's cost under `table` (USD)."""
        return round(sum(dict(r.cost)[table] for r in self.roles), 8)


def check_prices(name: str, table: Mapping[str, float]) -> dict[str, float]:
    """A price table with both keys, non-negative numbers; ValueError names the key."""
    if not isinstance(table, Mapping):
        raise ValueError(f"prices[{name!r}]: a price table is a mapping with {', '.join(PRICE_KEYS)}")
    extra = sorted(set(table) - set(PRICE_KEYS))
    if extra:
        raise ValueError(f"prices[{name!r}].{extra[0]}: unknown key; use {', '.join(PRICE_KEYS)} "
                         "(USD per million tokens)")
    out = {}
    for key in PRICE_KEYS:
        value = table.get(key)
        if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
            raise ValueError(f"prices[{name!r}].{key}: must be a number ≥ 0 (USD per million "
                             f"tokens), not {value!r}")
        out[key] = float(value)
    return out


def reprice(events: Iterable[Event], tables: Mapping[str, Mapping[str, float]],
            session_id: str = "") -> Repricing:
    """Fold the log's usage per role and price it under each table (see the module doc)."""
    checked = {name: check_prices(name, t) for name, t in tables.items()}
    if RECORDED in checked:
        raise ValueError(f"prices: {RECORDED!r} names the log's own cost; call the table otherwise")
    acc: dict[str, list[float]] = {}  # role -> [calls, in, out, recorded usd]
    for e in events:
        session_id = session_id or e.session_id
        if e.type != "llm.response" or not isinstance(e.payload, dict):
            continue
        u = e.payload.get("usage") or {}
        a = acc.setdefault(str(e.payload.get("role") or e.actor), [0, 0, 0, 0.0])
        a[0] += 1
        a[1] += int(u.get("input_tokens", 0))
        a[2] += int(u.get("output_tokens", 0))
        a[3] = round(a[3] + float(u.get("cost_usd", 0)), 8)
    roles = []
    for role, (calls, tin, tout, usd) in acc.items():
        cost = [(RECORDED, usd)]
        cost += [(name, round((tin * t["input_per_mtok"] + tout * t["output_per_mtok"]) / 1e6, 8))
                 for name, t in checked.items()]
        roles.append(RoleCost(role, int(calls), int(tin), int(tout), tuple(cost)))
    return Repricing(session_id, (RECORDED, *checked), tuple(roles))

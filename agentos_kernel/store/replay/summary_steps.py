"""L4 replay: the bounded summary's steps for the types a long log is mostly made of, each a
single call (summary._BoundedFold gives them to verify's fast loop for `agentos replay
--summary`), and the running cost kept exactly in integer units of 1e-8 USD.

Each step does what the fold's own step for its type did (summary._BoundedFold with
FAST_STEPS off: `_tally`, `_own_step`, `_Fold.fold`), with one Python call instead of two to
four; tests/test_replay_summary_steps.py compares them under adversarial payloads.

The cost: v1's fold sums `cost_usd = round(cost_usd + float(x), 8)` per llm.response. When
the sum c is the double nearest U·10⁻⁸ and x the double nearest V·10⁻⁸ (integers U, V with
|U|, |V|, |U + V| ≤ 10¹⁴, i.e. 1e6 USD), c + x, rounded to a double, lies within
2·2⁻³⁴ + 2⁻³³ < 3·10⁻¹⁰ of (U + V)·10⁻⁸ (half an ulp of each of c and x, below 2²⁰, and of
their sum, below 2²¹): closer than half of 10⁻⁸, so `round(c + x, 8)` (correctly rounded to
8 decimals, then to the nearest double) is the double nearest (U + V)·10⁻⁸, and that is
`(U + V) / 1e8` (both exact doubles below 2⁵³, the quotient correctly rounded). A sum of
0 is +0.0 both ways (c + (-c) is +0.0), so the total starts in units only from a c that is
not -0.0. A value x is taken in units only when `V = round(x * 1e8)` gives back `V / 1e8 ==
x` (x is then exactly that double); any other value, and any sum past the bound, is summed
the old way, and the units taken up again from the sum it gives when it is one of them.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import orjson

LIMIT = 10**14
"""The largest |units| (1e-8 USD) summed as integers: 1e6 USD."""
_KNOWN = 1024
"""How many distinct cost values a summary remembers in units (a long log repeats a few)."""
NOT_A_STRING = "(not a string)"
Step = Callable[[dict[str, Any]], None]


def key(k: str) -> str:
    """orjson's own str object for the key `k`: its key cache hands out the same one for every
    dict it reads, and a lookup by that object skips comparing characters (an equal key of
    another object is found all the same: only the speed depends on it)."""
    return next(iter(orjson.loads(b'{' + orjson.dumps(k) + b':0}')))


def units_of(x: Any) -> int | None:
    """The integer V with `V / 1e8 == x` (x a float, the double nearest V·10⁻⁸), |V| ≤ LIMIT;
    else None."""
    if type(x) is not float or not -1e6 <= x <= 1e6:  # NaN fails both compares
        return None
    v = round(x * 1e8)
    return v if -LIMIT <= v <= LIMIT and v / 1e8 == x else None


def total_units(c: Any) -> int | None:
    """`units_of` for a running sum, which must not be -0.0 (a sum in units is never -0.0)."""
    if c == 0.0 and type(c) is float and math.copysign(1.0, c) < 0:
        return None
    return units_of(c)


def cost_step(d: dict[str, Any], slow: Step) -> Step:
    """llm.response's step: tokens summed, the cost in units while every value is one, else
    `slow` (the fold's own step, which sets `failed` on a payload that does not fold)."""
    cost = d["cost"]
    units = total_units(cost["cost_usd"])  # None: the old arithmetic only
    known: dict[Any, int] = {}  # a cost value as read -> its units (units_of(float(value))), >= 0

    payload, use, usd, tin, tout = map(key, ("payload", "usage", "cost_usd", "input_tokens", "output_tokens"))

    def step(e: dict[str, Any]) -> None:
        nonlocal units
        try:  # not a dict, a key missing, a value not known: the old step (TypeError, KeyError)
            usage = e[payload][use]
            k = units + known[usage[usd]]  # type: ignore[operator]
            i, o = usage[tin], usage[tout]
        except (KeyError, TypeError):
            units = _slow(e)
            return
        if type(i) is not int or type(o) is not int or k > LIMIT:
            units = _slow(e)
            return
        cost["input_tokens"] += i
        cost["output_tokens"] += o
        cost["cost_usd"] = k / 1e8
        units = k
        d["llm_calls"] += 1

    def _slow(e: dict[str, Any]) -> int | None:
        slow(e)
        try:  # the value learnt in units when it is one (and not below 0: the sum only rises)
            raw = e["payload"]["usage"]["cost_usd"]
            v = units_of(float(raw)) if len(known) < _KNOWN and raw not in known else None
            if v is not None and v >= 0:
                known[raw] = v
        except (KeyError, TypeError, ValueError, OverflowError):
            pass
        return total_units(cost["cost_usd"])
    return step


def tally_step(tally: dict[str, int], recent: Any, field: str) -> Step:
    """A hook decision's or a tool call's step: `field` of the payload tallied, the payload
    kept among the recent ones ({} for one that is not an object), as `_tally` does."""
    payload, field = key("payload"), key(field)

    def step(e: dict[str, Any]) -> None:
        p = e[payload]
        if type(p) is dict:
            name = p.get(field)
            if type(name) is not str:
                name = NOT_A_STRING
        else:
            p, name = {}, NOT_A_STRING
        tally[name] = tally.get(name, 0) + 1
        recent.append(p)
    return step


def transition_step(fold: Any, wrong: tuple[type[Exception], ...]) -> Step:
    """agent.transition's step (`_Fold.transition`): the state, the role's last state, rework."""
    d = fold.d
    roles = d["roles"]
    payload, to_, actor = key("payload"), key("to"), key("actor")

    def step(e: dict[str, Any]) -> None:
        p = e[payload]
        to = p.get(to_) if type(p) is dict else None
        d["state"] = to
        try:
            roles[e[actor]] = to
        except wrong:
            fold.failed = True
            return
        if to == "REWORK":
            d["rework_count"] += 1
    return step


def field_step(fold: Any, t: str) -> Step:
    """skill.invoke's or worker.report's step: what `_Fold.fold` does for it (and for every
    event: events, last_event_id, session_id), and for a report what `_after` keeps of the
    reports (only the latest)."""
    d = fold.d
    name = "skill" if t == "skill.invoke" else "output"  # the summary's key is the payload's field
    report = t == "worker.report"

    ident, session, payload, field = key("id"), key("session_id"), key("payload"), key(name)

    def step(e: dict[str, Any]) -> None:
        eid = e[ident]
        d["events"] += 1
        d["last_event_id"] = eid
        d["session_id"] = d["session_id"] or e[session]
        p = e[payload]
        d[name] = p.get(field) if type(p) is dict else None
        if report:
            fold.reports = {eid: None}
    return step

"""The one-pass summary's steps (store/replay/summary_steps.py, `agentos replay --summary`)
against the fold's own steps (summary.FAST_STEPS off): the same summary, to the bit, for any
sequence of events of the types they fold, payloads of any JSON shape; the running cost in
integer units of 1e-8 USD against v1's chained `round(cost + x, 8)` over adversarial floats
(8-decimal values up to and past the 1e6 USD bound, values with more decimals, -0.0, NaN,
infinities, subnormals, ints, bools, strings). Counts calls, never seconds. Issue 24."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentos_kernel.kernel import Runtime
from agentos_kernel.store.replay import summary
from agentos_kernel.store.replay.summary import _BoundedFold
from agentos_kernel.store.replay.summary_steps import LIMIT, total_units, units_of
from agentos_kernel.testing import write_long_session

_TYPES = ["hook.fired", "tool.invoke", "llm.response", "agent.transition", "skill.invoke", "worker.report",
          "session.start", "domain.error"]
_SCALAR = st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1) | st.floats() | st.text(max_size=4)
_JSON = st.recursive(_SCALAR,
                     lambda c: st.lists(c, max_size=2) | st.dictionaries(st.text(max_size=6), c, max_size=2),
                     max_leaves=4)
_EIGHT = st.decimals(min_value=Decimal(-2_000_000), max_value=Decimal(2_000_000), places=8,
                     allow_nan=False, allow_infinity=False).map(float)
_COST = st.one_of(_EIGHT, _EIGHT.map(lambda x: x / 1e6), st.floats(), st.integers(-10**16, 10**16),
                  st.booleans(), st.sampled_from([0.001227, 0.1 + 0.2, 999_999.99999999, 1e6, 1e6 + 1e-8,
                                                  -0.0, 5e-324, float("nan"), float("inf"), "0.001", "x"]))
_USAGE = st.one_of(
    st.fixed_dictionaries({"cost_usd": _COST, "input_tokens": st.integers(0, 10**6),
                           "output_tokens": st.integers(0, 10**6)}),
    st.dictionaries(st.sampled_from(["cost_usd", "input_tokens", "output_tokens"]),
                    _COST | st.floats() | st.text(max_size=3) | st.none(), max_size=3),
    _JSON)
_PAYLOAD = st.one_of(
    st.fixed_dictionaries({"usage": _USAGE}),
    st.fixed_dictionaries({"decision": _JSON | st.sampled_from(["allow", "deny"]),
                           "name": _JSON | st.just("t"), "to": _JSON | st.sampled_from(["WORK", "REWORK"]),
                           "skill": _JSON, "output": _JSON}),
    _JSON)
_EVENT = st.tuples(st.sampled_from(_TYPES), st.sampled_from(["lead", "worker", "reviewer"]), _PAYLOAD)
_EVENTS = st.lists(_EVENT, min_size=1, max_size=6).flatmap(  # events repeat (costs known in units)
    lambda pool: st.lists(st.sampled_from(pool), max_size=30))


def _fold(monkeypatch: pytest.MonkeyPatch, events: list[tuple[str, str, Any]], fast: bool,
          general: set[int]) -> tuple[str, bool]:
    """The summary (its repr: -0.0 and NaN told apart) and `failed` of a verify pass over
    `events`: the general way's `take` at the indexes in `general`, else the fast loop's step."""
    with monkeypatch.context() as m:
        m.setattr(summary, "FAST_STEPS", fast)
        fold = _BoundedFold(3)
        steps: dict[str, Callable[[dict[str, Any]], None] | None] = {}
        last = None
        for k, (t, actor, payload) in enumerate(events):
            e = {"id": f"e{k + 1}", "session_id": "s", "type": t, "actor": actor, "payload": payload}
            if k in general:
                fold.take(e)
            elif (step := steps.setdefault(t, fold.for_type(t))) is not None:
                step(e)
            last = e
        fold.end(len(events), last)
        return repr(fold.summary()), fold.failed


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(events=_EVENTS, general=st.sets(st.integers(0, 29), max_size=5))
def test_the_steps_fold_what_the_folds_own_steps_fold(monkeypatch: pytest.MonkeyPatch, events: list[Any],
                                                     general: set[int]) -> None:
    new, new_failed = _fold(monkeypatch, events, True, general)
    old, old_failed = _fold(monkeypatch, events, False, general)
    assert new_failed == old_failed
    if not old_failed:  # a payload that does not fold: no summary either way
        assert new == old


def _chained(xs: list[Any]) -> float:
    c = 0.0
    for x in xs:
        c = round(c + float(x), 8)
    return c


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(xs=st.lists(_COST.filter(lambda x: type(x) is not str or x == "0.001"), min_size=1, max_size=6)
    .flatmap(
        lambda pool: st.lists(st.sampled_from(pool), min_size=1, max_size=40)))  # values repeat, as a log's
def test_the_cost_in_units_is_v1s_chained_round(monkeypatch: pytest.MonkeyPatch, xs: list[Any]) -> None:
    events = [("llm.response", "worker", {"usage": {"cost_usd": x, "input_tokens": 1, "output_tokens": 2}})
              for x in xs]
    try:
        want = _chained(xs)
    except (OverflowError, ValueError):
        return  # v1 cannot sum them either (round of an infinity): the fold fails both ways
    new, failed = _fold(monkeypatch, events, True, set())
    assert not failed and f"cost_usd={want!r}" in new


def test_units_only_where_they_are_exact() -> None:
    assert units_of(0.001227) == 122_700 and units_of(1e6) == LIMIT and units_of(-0.0) == 0
    for x in (0.1 + 0.2, 1e6 + 1e-8, 1e-9, 5e-324, float("nan"), float("inf"), 1, "0.1"):
        assert units_of(x) is None  # more decimals, past the bound, not a float
    assert total_units(-0.0) is None and total_units(0.0) == 0
    # Past a sum of 1e6 USD the old arithmetic goes on, exact as before.
    xs = [999_999.99999999, 0.00000001, 0.5, 0.001227]
    events = [("llm.response", "w", {"usage": {"cost_usd": x, "input_tokens": 0, "output_tokens": 0}})
              for x in xs]
    with pytest.MonkeyPatch.context() as m:
        assert f"cost_usd={_chained(xs)!r}" in _fold(m, events, True, set())[0]


def test_a_long_log_is_folded_one_call_an_event_its_costs_in_units(workspace: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    # 2,100 events of the reference request (five llm.response costs, repeated): the fold's own
    # steps run only for a cost not yet known in units (its first five llm.responses) and for
    # the general way's lines of the types `_other` folds; hook decisions and tool calls are
    # never tallied through `_tally`, transitions never through `_own_step`.
    calls: Counter[str] = Counter()
    for name in ("_own_step", "_tally", "_other"):
        real = getattr(_BoundedFold, name)
        monkeypatch.setattr(_BoundedFold, name,
                            lambda self, *a, _r=real, _n=name: calls.update([_n]) or _r(self, *a))
    rt = Runtime.from_workspace(workspace)
    write_long_session(workspace / "sessions", "long", 2100)
    report, got = rt.verified_summary("long")
    seen = dict(calls)
    assert report.ok and got is not None and got == rt.replay_summary("long") and got.llm_calls > 300
    assert seen == {"_own_step": 5, "_other": 3}  # the first skill.invoke and worker.report, the close


def test_the_steps_look_fields_up_by_the_key_objects_orjson_gives() -> None:
    # orjson's key cache gives one str object per key, the same for every dict it reads; a
    # step looking a field up by that object skips comparing characters.
    import orjson

    from agentos_kernel.store.replay.summary_steps import key, tally_step

    parsed = orjson.loads(b'{"payload":{"decision":"allow"}}')
    payload, decision = next(iter(parsed)), next(iter(parsed["payload"]))
    assert key("payload") is payload and key("decision") is decision
    tally: dict[str, int] = {}
    step = tally_step(tally, [], "decision")
    cells = [c.cell_contents for c in step.__closure__ or ()]
    assert any(c is payload for c in cells) and any(c is decision for c in cells)
    step(parsed)
    step({"payload": {"decision": "deny"}})  # keys of other objects: found all the same
    assert tally == {"allow": 1, "deny": 1}

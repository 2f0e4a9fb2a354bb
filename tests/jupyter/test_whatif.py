"""cost_whatif: a log re-priced under other price tables, a pure fold (nothing re-run)."""

from __future__ import annotations

from pathlib import Path

import pytest
from matplotlib.figure import Figure

from agentos_kernel.jupyter import WorkbenchError, cost_whatif, run_agent
from agentos_kernel.providers.pricing import RECORDED, reprice
from agentos_kernel.store.events import read_log

HAIKU = {"input_per_mtok": 1.0, "output_per_mtok": 5.0}
SONNET = {"input_per_mtok": 2.0, "output_per_mtok": 10.0}


@pytest.fixture
def run(ws: Path):
    return run_agent("hello, greet Ada", workspace=ws)


def test_reprice_is_the_tokens_times_the_table(run) -> None:
    r = reprice(run.events, {"haiku": HAIKU})
    assert r.tables == (RECORDED, "haiku")
    for c in r.roles:
        got = [e.payload["usage"] for e in run.events
               if e.type == "llm.response" and e.payload["role"] == c.role]
        assert (c.calls, c.input_tokens, c.output_tokens) == (
            len(got), sum(u["input_tokens"] for u in got), sum(u["output_tokens"] for u in got))
        cost = dict(c.cost)
        assert cost["haiku"] == pytest.approx((c.input_tokens * 1.0 + c.output_tokens * 5.0) / 1e6)
        assert cost[RECORDED] == pytest.approx(sum(u["cost_usd"] for u in got))
    # the scripted profile's own table gives back the recorded cost: the fold is the provider's sum
    same = reprice(run.events, {"scripted": {"input_per_mtok": 3.0, "output_per_mtok": 15.0}})
    assert same.total("scripted") == pytest.approx(same.total(RECORDED))
    assert run.snapshot.cost.cost_usd == pytest.approx(same.total(RECORDED))


def test_cost_whatif_shows_both_side_by_side_and_runs_nothing(run, ws: Path) -> None:
    log = ws / "sessions" / run.session_id / ".events.jsonl"
    before = log.read_bytes()
    w = cost_whatif(run, prices={"Claude Sonnet 5": SONNET, "Claude Haiku 4.5": HAIKU})
    assert log.read_bytes() == before and sorted(p.name for p in (ws / "sessions").iterdir()) == ["s0001"]
    assert w.repricing.tables == (RECORDED, "Claude Sonnet 5", "Claude Haiku 4.5")
    assert w.total("Claude Haiku 4.5") == pytest.approx(w.total("Claude Sonnet 5") / 2)
    text = repr(w)
    assert text.splitlines()[0] == "cost of s0001 re-priced (USD; same tokens, nothing re-run)"
    assert text.splitlines()[-1].split()[0] == "total"
    assert f"{w.total(RECORDED):.6f}" in text.splitlines()[-1]
    svg = w._repr_svg_()
    assert svg.startswith("<?xml") and "Claude Haiku 4.5" in svg and "session total" in svg
    assert cost_whatif(run, prices={"Claude Sonnet 5": SONNET, "Claude Haiku 4.5": HAIKU}).svg == svg
    assert isinstance(w, Figure)
    frame = w.data
    assert list(frame.index) == ["lead", "planner", "worker", "reviewer"]
    assert list(frame.columns) == ["calls", "tokens_in", "tokens_out", "usd recorded", "usd Claude Sonnet 5",
                                   "usd Claude Haiku 4.5"]
    assert frame["usd Claude Haiku 4.5"].sum() == pytest.approx(w.total("Claude Haiku 4.5"))


def test_cost_whatif_draws_into_two_axes_of_the_callers(run) -> None:
    mine = Figure()
    left, right = mine.subplots(1, 2)
    out = cost_whatif(run, prices=HAIKU, ax=(left, right))
    assert out is mine and left.get_title() == "s0001: cost per role, same tokens"
    assert right.get_title() == "session total" and len(right.patches) == 2
    assert list(out.data.columns)[-2:] == ["usd recorded", "usd what-if"]  # type: ignore[attr-defined]
    with pytest.raises(TypeError, match=r"cost_whatif draws two panels"):
        cost_whatif(run, prices=HAIKU, ax=left)


def test_prices_as_one_table_or_a_profile(run) -> None:
    assert cost_whatif(run, prices=HAIKU).repricing.tables == (RECORDED, "what-if")
    alt = cost_whatif(run, prices="scripted-alt")
    assert alt.total("scripted-alt") == pytest.approx(
        sum(c.input_tokens * 0.8 + c.output_tokens * 4.0 for c in alt.repricing.roles) / 1e6)


@pytest.mark.parametrize(("prices", "message"), [
    ({"x": {"input_per_mtok": 1.0}}, "prices['x'].output_per_mtok: must be a number"),
    ({"x": {"input_per_mtok": 1.0, "output_per_mtok": -2}}, "must be a number ≥ 0"),
    ({"x": {"input_per_mtok": 1, "output_per_mtok": 2, "cache": 1}}, "prices['x'].cache: unknown key"),
    ("nosuch", "nosuch"),
    ({}, "prices: give a price table"),
])
def test_a_bad_price_table_names_the_key(run, prices, message: str) -> None:
    with pytest.raises(WorkbenchError, match=message.replace("[", r"\[").replace("]", r"\]")):
        cost_whatif(run, prices=prices)


def test_reprice_reads_any_log(run, ws: Path) -> None:
    events = list(read_log(ws / "sessions" / run.session_id / ".events.jsonl"))
    assert reprice(events, {"h": HAIKU}).session_id == run.session_id

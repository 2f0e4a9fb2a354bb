"""The timeline and cost figures on long sessions (issue 12): a window, binning past a
threshold, and a picture whose size does not grow with the log. The guards count plot
calls and SVG elements, never seconds (speed lives in bench/bench_scale.py)."""

from __future__ import annotations

import shutil
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest
from matplotlib.axes import Axes

from agentos_kernel.jupyter import cost_figure, events_frame, run_agent, timeline_figure
from agentos_kernel.jupyter.figures.ranges import TIMELINE_BINS, bands, llm_calls, timeline_range
from agentos_kernel.jupyter.frames import cost_by_role, cumulative_cost
from agentos_kernel.store.events import LogError
from agentos_kernel.store.replay.logview import LogEvents
from agentos_kernel.testing import write_long_session

N = 10_000


@pytest.fixture(scope="module")
def long_ws(_initialised: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("long-figures") / "ws"
    shutil.copytree(_initialised, root)
    write_long_session(root / "sessions", "long", N)
    return root


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> Iterator[Counter[str]]:
    """How many times the figures call each drawing method of an Axes."""
    seen: Counter[str] = Counter()
    for name in ("plot", "scatter", "annotate", "step", "add_collection"):
        real = getattr(Axes, name)

        def spy(self: Axes, *a: object, _real: object = real, _name: str = name, **k: object) -> object:
            seen[_name] += 1
            return _real(self, *a, **k)  # type: ignore[operator]
        monkeypatch.setattr(Axes, name, spy)
    yield seen


def _log(ws: Path) -> LogEvents:
    return LogEvents(ws / "sessions" / "long" / ".events.jsonl")


def test_a_long_timeline_is_binned_with_one_collection_per_layer(long_ws: Path,
                                                                  calls: Counter[str]) -> None:
    fig = timeline_figure("long", workspace=long_ws)
    table = fig.data
    layers = set(table["layer"])
    assert calls["plot"] == 0 and calls["scatter"] == 0  # no links, no dots, no failures here
    assert calls["add_collection"] == len(layers)  # one set of bands per layer
    assert table["events"].sum() == N and table["failures"].sum() == 0
    assert table["seq"].min() == 1 and table["seq_last"].max() == N
    rows = table[["lane", "layer"]].drop_duplicates()
    assert len(table) <= TIMELINE_BINS * len(rows)
    # the lanes busy all along are one band each: a path per row, not a mark per event or bin
    assert sum(len(r) for r in bands(table).values()) == len(rows)
    assert fig.svg.count("<path ") < 200 and fig.svg.count("<use ") < 40  # the rest: ticks, text
    assert len(fig.svg) < 60_000
    assert "binned: 10,000 events in 200 bins" in fig.svg


def test_binned_marks_of_one_lane_do_not_overlap(long_ws: Path) -> None:
    table = timeline_figure("long", workspace=long_ws).data
    lead = table[table["actor"] == "lead"]
    assert set(lead["layer"]) == {"L2", "L3"}
    assert lead.groupby("layer")["y"].first().nunique() == 2


def test_a_window_draws_its_events_with_their_links(long_ws: Path, calls: Counter[str]) -> None:
    fig = timeline_figure("long", workspace=long_ws, window=(5001, 5064))
    points = fig.data
    assert list(points["seq"]) == list(range(5001, 5065))
    assert calls["plot"] == 1  # every parent link in one line
    assert calls["scatter"] == points["layer"].nunique()
    assert "long: events 5,001-5,064 of 10,000 by actor lane" in fig.svg
    assert fig.title == "long: events 5,001-5,064 of 10,000 by actor lane"


def test_the_canonical_timeline_draws_its_links_in_one_line(ws: Path, calls: Counter[str]) -> None:
    run = run_agent("hello, greet Ada", workspace=ws)
    calls.clear()
    timeline_figure(run)
    assert calls["plot"] == 1
    assert (events_frame(run)["parent"].notna()).sum() == 7  # seven links, still one plot call


@pytest.mark.parametrize("window", [(0, 5), (7, 6), (1, N + 1), ("1", 5), (1, 2, 3), (True, 4)])
def test_a_bad_window_names_the_logs_range(long_ws: Path, window: tuple) -> None:
    with pytest.raises(ValueError, match=r"window") as err:
        timeline_figure("long", workspace=long_ws, window=window)
    if len(window) == 2 and all(type(v) is int for v in window):
        assert f"<= {N}" in str(err.value)


def test_the_fast_reads_match_a_full_parse(long_ws: Path) -> None:
    log = _log(long_ws)
    parsed = tuple(log)
    for win in ((1, N), (4000, 4321)):
        fast, full = timeline_range(log, win, links=False), timeline_range(parsed, win, links=False)
        pd.testing.assert_frame_equal(fast, full)
        pd.testing.assert_frame_equal(llm_calls(log, win), llm_calls(parsed, win))
    assert llm_calls(log, (1, N))["cost_usd"].gt(0).all()


def test_cost_tables_from_the_light_read_equal_the_events_frame(ws: Path) -> None:
    run = run_agent("hello, greet Ada", workspace=ws)
    frame, light = events_frame(run), llm_calls(run.events, (1, len(run.events)))
    pd.testing.assert_frame_equal(cost_by_role(light), cost_by_role(frame))
    pd.testing.assert_frame_equal(cumulative_cost(light), cumulative_cost(frame), check_dtype=False)


def test_a_long_cost_figure_has_no_label_per_call(long_ws: Path, calls: Counter[str]) -> None:
    fig = cost_figure("long", workspace=long_ws)
    per_role, running = cost_by_role(fig.data), fig.data
    assert len(running) > 1000
    assert calls["annotate"] == len(per_role)  # the per-role costs only
    assert calls["scatter"] == 0 and calls["step"] == 1
    assert len(fig.svg) < 100_000
    window = cost_figure("long", workspace=long_ws, window=(5001, 5064))
    assert window.data["seq"].between(5001, 5064).all()
    assert "cumulative cost, events 5,001-5,064" in window.svg


def test_records_parse_in_batches_and_still_name_a_bad_line(tmp_path: Path) -> None:
    src = (Path(__file__).parents[2] / "sessions" / "example" / ".events.jsonl").read_bytes()
    lines = src.splitlines(keepends=True)
    path = tmp_path / "log.jsonl"
    path.write_bytes(b"".join(lines[:5]) + b"\n" + b"".join(lines[5:]))  # a blank line inside
    log = LogEvents(path)
    assert list(log.records(batch=4)) == [log.record(i) for i in range(len(log))] and len(log) == 32
    path.write_bytes(b"".join(lines[:5]) + b"[1,\n" + b"".join(lines[5:]))
    with pytest.raises(LogError, match=r"log.jsonl:6"):
        list(LogEvents(path).records())

"""events_frame and the figures, tested on the data they are drawn from; the SVG is
checked for what nbval relies on (identical bytes for the same log) and for its labels."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pandas as pd
import pytest
from matplotlib.figure import Figure

from agentos_kernel import Event, replay
from agentos_kernel.jupyter import (
    WorkbenchFigure,
    cost_by_role,
    cost_figure,
    cumulative_cost,
    events_frame,
    phase_graph_data,
    phase_graph_figure,
    run_agent,
    subplots,
    timeline_figure,
    workflow_frame,
)
from agentos_kernel.jupyter.dtypes import DECISIONS, EVENT_TYPES, HOOK_POINTS, LAYERS, ROLE_NAMES, categorical
from agentos_kernel.jupyter.frames import timeline_points


@pytest.fixture
def run(ws: Path):
    return run_agent("hello, greet Ada", workspace=ws)


def test_events_frame_columns_and_values(run) -> None:
    frame = events_frame(run)
    assert list(frame.columns) == ["seq", "ts", "type", "layer", "actor", "role", "parent", "tokens_in",
                                   "tokens_out", "cost_usd", "duration_ms", "hook", "decision"]
    assert list(frame["seq"]) == list(range(1, 33))
    assert str(frame["ts"].iloc[0]) == "2026-01-01 00:00:00+00:00"  # the logical clock's epoch
    assert list(frame["type"]) == [e.type for e in run.events]
    row = frame.set_index("seq").loc[8]  # the lead's llm.response
    assert (row["type"], row["layer"], row["role"], row["parent"]) == ("llm.response", "L2", "lead", 7)
    assert (row["tokens_in"], row["tokens_out"], row["cost_usd"]) == (259, 30, 0.001227)
    assert row["duration_ms"] == 1.0  # logical clock: one tick between request and response
    tool = frame.set_index("seq").loc[20]
    assert (tool["type"], tool["actor"], tool["role"], tool["parent"]) == \
        ("tool.result", "tool:echo", "worker", 19)
    hooks = frame[frame["type"] == "hook.fired"]
    assert (hooks["duration_ms"] == 0.0).all()  # a hook's measured ms (zero under the logical clock)
    assert frame["duration_ms"].isna().sum() == 32 - 7 - 5 - 1
    snap = run.snapshot
    assert frame["tokens_in"].sum() == snap.cost.input_tokens == 1484
    assert frame["tokens_out"].sum() == snap.cost.output_tokens == 152
    assert round(frame["cost_usd"].sum(), 8) == snap.cost.cost_usd
    assert frame["parent"].dtype == "Int64" and frame["parent"].isna().sum() == 32 - 7
    fired = frame.set_index("seq").loc[2]  # SessionStart's hook decision
    assert (fired["hook"], fired["decision"]) == ("SessionStart", "allow")
    assert frame["hook"].notna().sum() == frame["decision"].notna().sum() == len(hooks)


def test_events_frame_closed_sets_are_categories_and_absent_values_na(run, ws: Path) -> None:
    frame = events_frame(run)
    for column, closed in (("type", EVENT_TYPES), ("layer", LAYERS), ("role", ROLE_NAMES),
                           ("hook", HOOK_POINTS), ("decision", DECISIONS)):
        assert isinstance(frame[column].dtype, pd.CategoricalDtype), column
        assert list(frame[column].cat.categories) == list(closed), column
    assert frame.set_index("seq").loc[1, "actor"] == "user"
    assert pd.isna(frame.set_index("seq").loc[1, "role"])  # session.start: no role, NA not ""
    assert not (frame[["role", "hook", "decision"]] == "").any().any()
    # two sessions' frames concatenate without falling back to object
    bad = run_agent("hello", faults="malformed_worker", workspace=ws)
    both = pd.concat([frame, events_frame(bad)], ignore_index=True)
    for column in ("type", "layer", "role", "hook", "decision"):
        assert isinstance(both[column].dtype, pd.CategoricalDtype), column
    assert both.groupby("layer", observed=False).size().index.tolist() == list(LAYERS)


def test_a_value_outside_a_closed_set_is_kept() -> None:
    values = categorical(["L2", None, "L9", "L1"], LAYERS)
    assert list(values.categories) == [*LAYERS, "L9"]
    assert values[2] == "L9" and pd.isna(values[1])


def test_cost_by_role_keeps_calls_of_no_role() -> None:
    calls = pd.DataFrame({"seq": [3, 5, 9], "role": categorical(["lead", None, "lead"], ROLE_NAMES),
                          "tokens_in": [10, 20, 30], "tokens_out": [1, 2, 3], "cost_usd": [0.1, 0.2, 0.3]})
    table = cost_by_role(calls)  # no `type` column: every row is a call
    assert table["calls"].tolist() == [2, 1] and table.index[0] == "lead" and pd.isna(table.index[1])
    assert table["tokens_in"].sum() == 60  # nothing dropped with the missing role


def test_the_closed_sets_match_the_schemas() -> None:
    import json

    schemas = Path(__file__).parents[2] / "schemas" / "events"
    hook = json.loads((schemas / "event_hook_fired_v1.json").read_text())["properties"]["decision"]["enum"]
    policy = json.loads((schemas / "event_workflow_policy_gated_v1.json").read_text())
    gated = policy["properties"]["decision"]["enum"]
    assert set(DECISIONS) == set(hook) | set(gated) and list(DECISIONS[:3]) == hook
    assert len(EVENT_TYPES) == len(set(EVENT_TYPES)) and "hook.fired" in EVENT_TYPES


def test_events_frame_reads_a_session_by_id(run, ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    by_object = events_frame(run)
    pd.testing.assert_frame_equal(events_frame("s0001", workspace=ws), by_object)
    monkeypatch.chdir(ws / "skills")  # the workspace is found from a subdirectory, as the CLI does
    pd.testing.assert_frame_equal(events_frame("s0001"), by_object)


def test_cost_tables(run) -> None:
    frame = events_frame(run)
    per_role = cost_by_role(frame)
    assert list(per_role.index) == ["lead", "planner", "worker", "reviewer"]
    assert per_role.loc["worker"].to_dict() == {"calls": 2, "tokens_in": 692, "tokens_out": 36,
                                                "cost_usd": 0.002616}
    assert per_role["cost_usd"].sum() == pytest.approx(run.snapshot.cost.cost_usd)
    running = cumulative_cost(frame)
    assert list(running["seq"]) == [8, 12, 16, 23, 27]
    assert running["cumulative_usd"].iloc[-1] == run.snapshot.cost.cost_usd
    assert running["cumulative_tokens"].iloc[-1] == 1484 + 152
    assert running["cumulative_usd"].is_monotonic_increasing


def test_timeline_points_and_figure(run) -> None:
    lanes, _ = timeline_points(events_frame(run))
    assert lanes[:2] == ["user", "hook:(none)"] and "tool:echo" in lanes
    fig = timeline_figure(run)
    assert isinstance(fig, Figure) and isinstance(fig, WorkbenchFigure)
    data = fig.data
    assert isinstance(data, pd.DataFrame) and len(data) == 32 and not data["failed"].any()
    assert list(data.columns) == ["seq", "lane", "actor", "layer", "type", "failed"]
    order = [*dict.fromkeys(data.sort_values("lane")["actor"])]
    assert order[:6] == ["user", "lead", "planner", "worker", "reviewer", "tool:echo"]
    assert order[-1] == "system"
    svg = fig._repr_svg_()
    assert svg.startswith("<?xml") and "<svg" in svg
    for label in ("s0001: events by actor lane", "hook:stop_after_one", "L1 MCP-first Tool Protocol",
                  "event seq (position in the log; no clock)"):
        assert label in svg
    assert repr(fig) == "figure: s0001: events by actor lane"


def test_failures_are_marked_on_the_timeline(ws: Path) -> None:
    bad = run_agent("hello", faults="malformed_worker", workspace=ws)
    data = timeline_figure(bad).data
    assert list(data.loc[data["failed"], "seq"]) == [24]
    assert "failure" in timeline_figure(bad).svg


def test_cost_figure_draws_its_tables(run) -> None:
    fig = cost_figure(run)
    assert isinstance(fig, Figure)
    pd.testing.assert_frame_equal(fig.data, cumulative_cost(events_frame(run)))
    assert list(cost_by_role(fig.data).index) == ["lead", "planner", "worker", "reviewer"]
    for label in ("$0.001227", "$0.002616", "tokens and cost per role", "s0001: cumulative cost"):
        assert label in fig.svg


def test_timeline_figure_draws_into_a_users_pyplot_axes(run, ws: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    mine, ax = plt.subplots()
    try:
        out = timeline_figure(run.session_id, ws, ax=ax)
        assert out is mine and not isinstance(out, WorkbenchFigure)  # the user's own Figure back
        assert ax.get_title() == "s0001: events by actor lane"
        assert len(ax.collections) == out.data["layer"].nunique()  # a scatter per layer
        assert [t.get_text() for t in ax.get_yticklabels()][:2] == ["user", "lead"]
        assert len(out.data) == 32
        assert mine.get_size_inches().tolist() == [6.4, 4.8]  # its layout untouched
    finally:
        plt.close(mine)


def test_figures_compose_in_one_workbench_figure_and_restyle(run) -> None:
    fig, (left, mid, right) = subplots(1, 3, figsize=(14, 3))
    assert timeline_figure(run, ax=left) is fig
    assert cost_figure(run, ax=(mid, right)) is fig
    pd.testing.assert_frame_equal(fig.data, cumulative_cost(events_frame(run)))  # the last drawing's
    assert fig.title == "s0001: events by actor lane | s0001: tokens and cost per role, and cumulative"
    left.set_title("restyled")
    left.collections[0].set_color("#123456")
    svg = fig._repr_svg_()
    assert "restyled" in svg and "#123456" in svg and svg == fig.svg  # the SVG follows the restyle
    assert "agentos-timeline-s0001+cost-s0001" in svg  # ids salted by what was drawn


def test_a_figure_shows_as_its_svg_alone_even_under_pyplots_inline_backend(ip, run) -> None:
    from IPython.core.pylabtools import select_figure_formats

    formatters, active = ip.display_formatter.formatters, ip.display_formatter.active_types
    ip.display_formatter.active_types = ip.display_formatter.format_types  # a kernel's, not a terminal's
    select_figure_formats(ip, {"png"})  # what pyplot's inline backend registers for every Figure
    try:
        fig = timeline_figure(run)
        data, _ = ip.display_formatter.format(fig)
        assert sorted(data) == ["image/svg+xml", "text/plain"]  # shown once, no PNG rendered
        assert data["image/svg+xml"] == fig.svg
        assert data["text/plain"] == "figure: s0001: events by actor lane"
        plain = Figure()
        plain.add_subplot().plot([1, 2])
        assert "image/png" in ip.display_formatter.format(plain)[0]  # other figures: untouched
    finally:
        for mime in ("image/png", "image/jpeg", "application/pdf"):
            formatters[mime].type_printers.pop(Figure, None)
        ip.display_formatter.active_types = active


def test_a_wrong_ax_names_the_fix(run) -> None:
    _, (a, b) = subplots(1, 2)
    with pytest.raises(TypeError, match=r"cost_figure draws two panels: pass ax=\(left, right\)"):
        cost_figure(run, ax=a)
    with pytest.raises(TypeError, match=r"timeline_figure: ax must be a matplotlib Axes"):
        timeline_figure(run, ax=(a, b))
    with pytest.raises(TypeError, match=r"phase_graph_figure: ax must be a matplotlib Axes"):
        phase_graph_figure(run, ax="left")


def test_svg_bytes_are_deterministic_and_carry_no_clock(ws: Path, tmp_path: Path) -> None:
    other = tmp_path / "other"
    shutil.copytree(ws, other)
    a, b = run_agent("hello, greet Ada", workspace=ws), run_agent("hello, greet Ada", workspace=other)
    for make in (timeline_figure, cost_figure, phase_graph_figure):
        first, again, elsewhere = make(a).svg, make(a).svg, make(b).svg
        assert first == again == elsewhere
        assert "<dc:date>" not in first and "Matplotlib v" not in first
        assert not re.search(r"\d{4}-\d\d-\d\dT\d\d:\d\d", first)


def _wf(seq: int, type: str, payload: dict) -> Event:
    return Event(f"w-e{seq}", "w", f"2026-01-01T00:00:00.{seq:03d}Z", type, "system", payload, seq=seq)


CYCLE = [
    _wf(1, "workflow.started", {"cycle_id": "review", "session_id": "w"}),
    _wf(2, "workflow.phase_advanced", {"cycle_id": "review", "from_phase": "plan", "to_phase": "work",
                                       "generation": 1, "advanced": True}),
    _wf(3, "workflow.policy_gated", {"cycle_id": "review", "phase": "work", "policy_id": "p0-gate",
                                     "decision": "deny", "reason": "p0 open"}),
    _wf(4, "workflow.phase_advanced", {"cycle_id": "review", "from_phase": "work", "to_phase": "plan",
                                       "generation": 2, "advanced": False}),
    _wf(5, "workflow.phase_advanced", {"cycle_id": "review", "from_phase": "plan", "to_phase": "work",
                                       "generation": 2, "advanced": True}),
    _wf(6, "workflow.completed", {"cycle_id": "review", "verdict": "halted", "reason": "loop bound",
                                  "phase": "work", "generations": 2}),
]


def test_phase_graph_data_folds_the_workflow_events() -> None:
    graph = phase_graph_data(CYCLE, phases=["plan", "work", "review"])
    assert graph.cycle_id == "review"
    assert graph.phases == ("plan", "work", "review")
    assert graph.visited == ("plan", "work", "plan", "work")
    assert graph.transitions == (("plan", "work"), ("work", "plan"), ("plan", "work"))
    assert graph.policies == (("p0-gate", "deny"),)
    assert graph.verdict == "halted" == replay(CYCLE).workflow["verdict"]
    assert phase_graph_data(CYCLE).phases == ("plan", "work")  # undeclared: the phases the log names


def test_phase_graph_figure(tmp_path: Path) -> None:
    sessions = tmp_path / "sessions" / "w"
    sessions.mkdir(parents=True)
    from agentos_kernel.store.events import canonical

    (sessions / ".events.jsonl").write_bytes(b"".join(canonical(e.to_dict()) + b"\n" for e in CYCLE))
    (tmp_path / "agentos.yaml").write_text((Path(__file__).parents[2] / "agentos.yaml").read_text())
    fig = phase_graph_figure("w", phases=["plan", "work", "review"], workspace=tmp_path)
    for label in ("verdict: halted", "cycle review", "policy decisions: 1 (deny 1)", ">review<", "×2"):
        assert label in fig.svg
    data = fig.data
    assert list(data["seq"]) == [1, 2, 3, 4, 5, 6]
    assert list(data["to_phase"].fillna("-")) == ["-", "work", "-", "plan", "work", "-"]
    assert data["decision"].dropna().tolist() == ["deny"] and data["verdict"].dropna().tolist() == ["halted"]
    assert isinstance(data["decision"].dtype, pd.CategoricalDtype)
    pd.testing.assert_frame_equal(data, workflow_frame(CYCLE))


def test_phase_graph_of_a_session_without_a_cycle(run) -> None:
    fig = phase_graph_figure(run)
    assert phase_graph_data(run.events).cycle_id is None
    assert fig.data.empty and list(fig.data.columns) == ["seq", "type", "from_phase", "to_phase",
                                                         "policy_id", "decision", "verdict"]
    assert "no workflow events in this session (no cycle ran)" in fig.svg

"""The instructor's views of a class (agentos_kernel/classroom/views.py, jupyter/class_figures.py;
issue 14): a small simulated class, each view checked against what the logs and the fault
plans say."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pandas as pd
import pytest

from agentos_kernel.classroom.views import (
    LAB_FAULTS,
    LABS,
    NO_LAB,
    SimulatedClass,
    class_frame,
    class_timeline,
    cost_per_lab,
    failures_by_code,
    lab_of,
    sessions_per_student,
    simulate_class,
    workspaces_source,
)
from agentos_kernel.store.replay.fold import replay_path

# The fail-closed code each preset leaves as its log's root cause (the spec's Fail-closed Cases).
ROOT_CAUSE = {
    "unknown_tool": "TOOL_NOT_FOUND", "tool_out_of_scope": "TOOL_NOT_ALLOWED", "hook_deny": "GATE_DENIED",
    "hook_error": "GATE_DENIED", "prompt_denied": "PROMPT_DENIED", "schema_violation": "SCHEMA_INVALID",
    "malformed_worker": "MALFORMED_AGENT_MESSAGE", "malformed_planner": "MALFORMED_AGENT_MESSAGE",
    "reviewer_fail": "HUMAN_ESCALATION", "provider_down": "PROVIDER_ERROR",
}


@pytest.fixture(scope="module")
def klass(tmp_path_factory: pytest.TempPathFactory) -> SimulatedClass:
    """6 students × 5 sessions (one per lab), half of them broken."""
    return simulate_class(tmp_path_factory.mktemp("class") / "c", students=6, sessions=5, seed=3,
                          fail_share=0.5)


@pytest.fixture(scope="module")
def frame(klass: SimulatedClass):  # -> pd.DataFrame
    return class_frame(workspaces_source(klass.root))


def test_every_preset_gives_its_spec_code() -> None:
    assert set(ROOT_CAUSE) == {p for presets in LAB_FAULTS.values() for p in presets}


def test_simulated_class_layout_and_faults(klass: SimulatedClass) -> None:
    assert klass.students == tuple(f"student{i:03d}" for i in range(6))
    assert klass.sessions == 30
    for s in klass.students:
        ids = sorted(p.name for p in (klass.root / s / "sessions").iterdir())
        assert ids == sorted(f"{lab}.1" for lab in LABS)
    assert 5 <= len(klass.faults) < 30  # some broken, not all
    for (_student, sid), preset in klass.faults.items():
        assert preset in LAB_FAULTS[lab_of(sid)]


def test_frame_one_row_per_session_with_root_cause_and_cost(klass: SimulatedClass, frame) -> None:
    assert len(frame) == 30 and list(frame["student"].unique()) == list(klass.students)
    for row in frame.itertuples():
        preset = klass.faults.get((row.student, row.session_id))
        if preset:
            assert row.code == ROOT_CAUSE[preset], (row.student, row.session_id)
        else:  # nothing failed closed: missing, not "" (a code is never blank)
            assert row.code is pd.NA, (row.student, row.session_id)
        assert bool(row.ok) is (preset is None)
        snap = replay_path(klass.root / row.student / "sessions" / row.session_id / ".events.jsonl")
        assert row.cost_usd == pytest.approx(snap.cost.cost_usd)
        assert row.tokens_in == snap.cost.input_tokens and row.tokens_out == snap.cost.output_tokens
    assert frame.loc[frame["ok"].astype(bool), "cost_usd"].gt(0).all()
    assert frame["code"].dtype == "string" and frame["ok"].dtype == "boolean"


def test_sessions_per_student(klass: SimulatedClass, frame) -> None:
    table = sessions_per_student(frame)
    broken = Counter(s for s, _ in klass.faults)
    assert sorted(table.index) == list(klass.students)
    for student, row in table.iterrows():
        assert (row["sessions"], row["failed"], row["ok"], row["open"]) == \
            (5, broken[student], 5 - broken[student], 0)
    assert list(table["failed"]) == sorted(table["failed"], reverse=True)  # who needs help first


def test_an_open_session_is_counted_open_not_failed(klass: SimulatedClass) -> None:
    source = list(workspaces_source(klass.root))
    student, sid, events = source[0]
    table = sessions_per_student(class_frame([(student, sid, events[:-1])]))  # no session.close
    assert table.loc[student, ["sessions", "ok", "failed", "open"]].tolist() == [1, 0, 0, 1]


def test_failures_by_code(klass: SimulatedClass, frame) -> None:
    table = failures_by_code(frame)
    expected = Counter(ROOT_CAUSE[p] for p in klass.faults.values())
    assert dict(table["sessions"]) == dict(expected)
    assert list(table["sessions"]) == sorted(expected.values(), reverse=True)
    for code, row in table.iterrows():
        labs = {lab_of(sid) for (_, sid), p in klass.faults.items() if ROOT_CAUSE[p] == code}
        assert row["labs"] == ", ".join(sorted(labs))
        assert row["students"] == len({s for (s, _), p in klass.faults.items() if ROOT_CAUSE[p] == code})
        assert row["recovered"] == 0


def test_cost_per_lab(klass: SimulatedClass, frame) -> None:
    table = cost_per_lab(frame)
    assert list(table.index) == list(LABS) and table["sessions"].tolist() == [6] * 5
    assert table["cost_usd"].sum() == pytest.approx(frame["cost_usd"].sum())
    for lab in LABS:
        rows = frame[frame["lab"] == lab]
        assert table.loc[lab, "cost_usd"] == pytest.approx(rows["cost_usd"].sum(), abs=1e-6)
        failed = [(s, sid) for s, sid in zip(rows["student"], rows["session_id"], strict=True)
                  if (s, sid) in klass.faults]
        spent = rows[[(s, sid) in failed for s, sid in zip(rows["student"], rows["session_id"], strict=True)]]
        assert table.loc[lab, "failed_usd"] == pytest.approx(spent["cost_usd"].sum(), abs=1e-6)


def test_class_timeline_spreads_labs_over_days(klass: SimulatedClass, frame) -> None:
    table = class_timeline(frame, "30min")
    assert table["sessions"].sum() == 30 and table["failed"].sum() == len(klass.faults)
    # lab j meets on day j, 09:00-11:00 UTC: the logical clock starts at each session's minute
    days = sorted({t.day for t in table.index})
    assert days == [1, 2, 3, 4, 5]
    assert all(9 <= t.hour < 11 for t in table.index)
    for _, row in table.iterrows():
        if row["failed"]:
            assert row["top_code"] in set(ROOT_CAUSE.values())
        else:
            assert row["top_code"] is pd.NA
        assert row["students"] <= row["sessions"]


def test_lab_of() -> None:
    assert lab_of("lab-02-hooks.3") == "lab-02-hooks"
    assert lab_of("s0001") == NO_LAB and lab_of("a.b") == NO_LAB and lab_of(".1") == NO_LAB


def test_same_seed_same_class(tmp_path: Path, frame) -> None:
    again = simulate_class(tmp_path / "c", students=6, sessions=5, seed=3, fail_share=0.5)
    assert class_frame(workspaces_source(again.root)).equals(frame)


def test_workspaces_source_names_a_missing_folder(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="no such folder of student workspaces"):
        list(workspaces_source(tmp_path / "nope"))


def test_figures_carry_their_view_and_are_deterministic(frame) -> None:
    from matplotlib.figure import Figure

    from agentos_kernel.jupyter import (
        class_timeline_figure,
        failures_figure,
        lab_cost_figure,
        sessions_figure,
    )

    for make, view in ((sessions_figure, sessions_per_student), (failures_figure, failures_by_code),
                       (lab_cost_figure, cost_per_lab), (class_timeline_figure, class_timeline)):
        fig = make(frame)
        assert isinstance(fig, Figure) and fig.data.equals(view(frame)), make.__name__
        assert fig.svg == make(frame).svg and fig.svg.startswith("<?xml")
        assert fig._repr_svg_() == fig.svg
    assert all(code in failures_figure(frame).svg for code in failures_by_code(frame).index)
    assert all(lab in lab_cost_figure(frame).svg for lab in LABS)


def test_class_figures_draw_into_a_callers_axes(frame) -> None:
    from matplotlib.figure import Figure

    from agentos_kernel.jupyter import class_timeline_figure, lab_cost_figure

    mine = Figure()
    left, right = mine.subplots(1, 2)
    assert lab_cost_figure(frame, ax=left) is mine
    assert left.get_title(loc="left").startswith("Cost per lab") and len(left.patches) >= len(LABS)
    assert mine.data.equals(cost_per_lab(frame))  # type: ignore[attr-defined]
    assert class_timeline_figure(frame, ax=right) is mine
    assert right.get_title(loc="left").startswith("Timeline")
    assert mine.data.equals(class_timeline(frame))  # type: ignore[attr-defined]  # the last drawing's

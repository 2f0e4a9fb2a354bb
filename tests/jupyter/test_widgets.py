"""LayerStepper and ReplayScrubber, driven from Python the way a student drives them by
clicking: each test clicks or moves the slider and reads what the widgets display."""

from __future__ import annotations

import html
import re
from pathlib import Path

import ipywidgets as W
import pytest

from agentos_kernel import replay
from agentos_kernel.jupyter import LayerStepper, ReplayScrubber, UnknownSession, diff_snapshots, run_agent


@pytest.fixture
def run(ws: Path):
    return run_agent("hello, greet Ada", workspace=ws)


def active(stepper: LayerStepper) -> list[str]:
    """The layers the diagram highlights (it must be exactly one)."""
    return re.findall(r'class="agentos-layer active" data-layer="(L\d)"', stepper.diagram.value)


def text(markup: str) -> str:
    """What a reader sees: tags dropped, entities decoded, whitespace collapsed."""
    plain = re.sub(r"<[^>]+>", "", re.sub(r"<br>|</tr>|</td>|</div>", " ", markup))
    return re.sub(r"\s+", " ", html.unescape(plain)).strip()


def test_stepper_is_a_container_that_starts_at_the_first_event(run) -> None:
    s = LayerStepper(run)
    assert isinstance(s, W.VBox)
    assert (s.index, s.slider.min, s.slider.max) == (1, 1, 32)
    assert s.prev_button.disabled and not s.next_button.disabled
    assert active(s) == ["L4"]
    assert "#1 session.start" in text(s.event_view.value)
    assert "event 1 of 32" in text(s.position.value)
    assert repr(s) == "LayerStepper(s0001: event 1 of 32, session.start, layer L4)"
    # what the state is, not `state null`; the empty fields named in one row, not hidden
    snap = text(s.snapshot_view.value)
    assert "state none yet: no agent.transition so far" in snap and "null" not in snap
    empty = re.search(r"false, 0 or empty so far (.*)$", snap)
    assert empty and "tools_invoked" in empty.group(1).split(", ")
    assert snap.count("tools_invoked") == 1
    s.go(6)  # the lead's first transition
    assert re.search(r'state "LEAD"', text(s.snapshot_view.value))
    s.go(19)
    assert 'tools_invoked [{"args": {"text": "Hello, Ada!"}, "id": "t1", "name": "echo"}]' in \
        text(s.snapshot_view.value)


def test_next_and_prev_move_through_the_layers(run) -> None:
    s = LayerStepper(run)
    s.next_button.click()
    assert s.index == 2 and active(s) == ["L6"] and not s.prev_button.disabled
    assert "SessionStart (none) -> allow (no handler registered)" in text(s.hook_view.value)
    seen = [active(s)[0]]
    for _ in range(30):
        s.next_button.click()
        seen.append(active(s)[0])
    assert s.index == 32 and s.next_button.disabled
    s.next_button.click()  # at the end a click changes nothing
    assert s.index == 32 and "#32 session.close" in text(s.event_view.value)
    assert set(seen) == {"L1", "L2", "L3", "L4", "L5", "L6"}
    s.prev_button.click()
    assert s.index == 31 and active(s) == ["L5"] and "skill.complete" in text(s.event_view.value)


def test_the_stepper_shows_schema_hook_payload_and_snapshot(run) -> None:
    s = LayerStepper("s0001", workspace=run.workspace.root)
    s.slider.value = 19  # tool.invoke echo
    assert active(s) == ["L1"]
    assert "payload checked against event_tool_invoke_v1 (schemas/events/event_tool_invoke_v1.json)" \
        in text(s.schema_view.value)
    hooks = text(s.hook_view.value)
    assert "#17 PreToolUse deny_dangerous_tools -> allow" in hooks
    assert "#18 PreToolUse pre_tool_use_default -> allow (default-allow)" in hooks
    assert '"text": "Hello, Ada!"' in text(s.payload_view.value)
    snap = text(s.snapshot_view.value)
    assert re.search(r"state\s+\"WORK\"", snap) and re.search(r"llm_calls\s+3", snap)
    assert s.snapshot == replay(run.events, 19)
    s.go(13)  # plan.created: a role handoff, checked against the role's schema
    assert "payload checked against plan_v1 (schemas/plan_v1.json)" in text(s.schema_view.value)
    assert "none: no hook gates this event" in text(s.hook_view.value)


def test_the_stepper_shows_where_a_request_failed_closed(ws: Path) -> None:
    bad = run_agent("hello, greet Ada", faults="schema_violation", workspace=ws)
    s = LayerStepper(bad)
    s.go(bad.failure.seq)
    assert s.event.type == "schema.violation" and active(s) == ["L7"]
    assert "color:#cf222e" in s.event_view.value
    assert "records a failed check: plan_v1 at planner output: /: \"steps\" is a required property" in \
        text(s.schema_view.value)
    denied = run_agent("hello, greet Ada", faults="hook_deny", workspace=ws)
    s = LayerStepper(denied)
    s.go(next(e.seq for e in denied.events if e.type == "domain.error"))
    assert active(s) == ["L6"] and "GATE_DENIED: PreToolUse denied echo" in text(s.event_view.value)
    s.prev_button.click()
    assert "PreToolUse deny_all -> deny (denied by deny_all (fault injection))" in text(s.hook_view.value)
    assert "color:#cf222e" in s.hook_view.value


def test_scrubber_shows_the_state_after_event_k_and_the_diff(run) -> None:
    sc = ReplayScrubber(run)
    assert isinstance(sc, W.VBox) and (sc.slider.min, sc.slider.max, sc.at) == (0, 32, 32)
    assert sc.snapshot.closed and "state after event 32 of 32" in text(sc.header.value)
    sc.slider.value = 0
    assert sc.snapshot.events == 0 and "before any event" in text(sc.header.value)
    assert "nothing" in text(sc.diff_view.value)
    sc.slider.value = 8  # the lead's llm.response
    assert sc.snapshot == replay(run.events, 8)
    assert "cost.input_tokens 0 → 259" in text(sc.diff_view.value)
    assert ("llm_calls", "0", "1") in sc.diff
    sc.go(6)
    assert ("state", "null", '"LEAD"') in sc.diff and ("roles.lead", "null", '"LEAD"') in sc.diff
    assert "background:#fff3b0" in sc.snapshot_view.value  # the changed rows are highlighted
    assert repr(sc) == "ReplayScrubber(s0001: after event 6 of 32)"


def test_scrubbing_is_pure_replay(run) -> None:
    log = run.workspace.sessions / "s0001" / ".events.jsonl"
    before = (log.read_bytes(), sorted(p.name for p in run.workspace.sessions.iterdir()))
    sc = ReplayScrubber("s0001", workspace=run.workspace.root)
    for k in range(33):
        sc.slider.value = k
        assert sc.snapshot == replay(run.events, k)
    LayerStepper(run).go(32)
    assert (log.read_bytes(), sorted(p.name for p in run.workspace.sessions.iterdir())) == before


def test_diff_of_lists_shows_what_was_appended(run) -> None:
    a, b = replay(run.events, 18), replay(run.events, 19)
    assert diff_snapshots(a, b)[-1] == ("tools_invoked", "0 item(s)",
                                        '+ [{"args": {"text": "Hello, Ada!"}, "id": "t1", "name": "echo"}]')


def test_unknown_sessions_are_refused(ws: Path) -> None:
    with pytest.raises(UnknownSession, match=r"no session 's0042' in this workspace \(sessions: none yet"):
        LayerStepper("s0042", workspace=ws)
    with pytest.raises(UnknownSession):
        ReplayScrubber("s0042", workspace=ws)
    with pytest.raises(TypeError, match="expected a session id or the result of %agent, not int"):
        LayerStepper(42)


def test_long_snapshot_values_are_cut_with_an_ellipsis(run) -> None:
    """Class-day defect 10: a cut is marked, never a silent stop mid-token."""
    st = LayerStepper(run)
    st.go(32)
    rows = re.findall(r"<b>(\w+)</b></td><td[^>]*><code>(.*?)</code>", st.snapshot_view.value)
    cells = dict(rows)
    assert len(html.unescape(cells["hook_decisions"])) == 300 and cells["hook_decisions"].endswith("…")
    assert cells["output"] == "&quot;Hello, Ada!&quot;"  # short values are whole


def test_widgets_on_a_5k_event_session_fold_a_bounded_number_of_events_per_step(ws: Path) -> None:
    from agentos_kernel.store.replay.index import CHECKPOINT_EVERY
    from agentos_kernel.testing import write_long_session

    write_long_session(ws / "sessions", "long", 5000)
    s = LayerStepper("long", workspace=ws)
    # one snapshot (event 1: one event folded from the first mark), not one per event
    assert (s.replay_index.built, s.replay_index.folded) == (1, 1)
    s.go(2500)
    start = s.replay_index.folded
    for _ in range(300):  # Next across a mark: one event folded per click
        s.next_button.click()
    assert s.index == 2800 and s.replay_index.folded - start <= 300
    for k in (4999, 17, 3333, 1, 5000, 2048):
        before = s.replay_index.folded
        s.go(k)
        assert s.replay_index.folded - before < CHECKPOINT_EVERY
        assert s.snapshot.events == k
    sc = ReplayScrubber("long", workspace=ws)
    # the end (the pass's own fold) and the one before (from the last mark), for the diff
    assert sc.replay_index.built == 2 and sc.replay_index.folded < CHECKPOINT_EVERY
    for k in (4000, 4001, 123, 122, 0, 5000):
        before = sc.replay_index.folded
        sc.go(k)  # the snapshot and the one before it, for the diff
        assert sc.replay_index.folded - before < 2 * CHECKPOINT_EVERY
    assert sc.snapshot == s.replay_index.snapshot(5000)

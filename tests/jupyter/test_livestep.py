"""LiveStepper (issue 11): a live-stepped request driven through the widget's own buttons,
as a click would; the deny clicked at the HumanHook ends up in the log with actor human."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentos_kernel.jupyter.widgets.livestep import LiveStepper
from agentos_kernel.store.events import read_log

CANONICAL = "hello, greet Ada"


def test_next_appends_one_event_and_the_trace_shows_it(ws: Path) -> None:
    w = LiveStepper(CANONICAL, workspace=ws, human=False)
    assert w.pause.event.type == "session.start" and w.logged == []
    assert 'data-layer="L4"' in w.event_view.value and "not in the log yet" in w.event_view.value
    w.next_button.click()
    assert [e.type for e in w.logged] == ["session.start"]
    assert w.pause.event.type == "hook.fired" and "session.start" in w.trace_view.value
    assert "2 event(s) logged" not in w.position.value and "1 event(s) logged" in w.position.value
    w.finish_button.click()
    assert w.pause.done and w.next_button.disabled and "ok: Hello, Ada!" in w.event_view.value
    log = ws / "sessions" / w.session_id / ".events.jsonl"
    assert [e.id for e in read_log(log)] == [e.id for e in w.logged]


def test_unticking_layers_skips_their_events(ws: Path) -> None:
    w = LiveStepper(CANONICAL, workspace=ws, human=False, layers={"L4"})
    assert w.pause.event.type == "session.start"
    w.layer_boxes["L4"].value = False
    w.layer_boxes["L1"].value = True  # now it pauses only at the tool call
    w.next_button.click()
    assert w.pause.event.type == "tool.invoke"


def test_a_deny_clicked_at_the_human_hook_is_in_the_log(ws: Path) -> None:
    w = LiveStepper(CANONICAL, workspace=ws, layers={"L1"})
    assert w.pause.question is not None and w.question_box.layout.display == ""
    assert json.loads(w.args_editor.value) == {"text": "Hello, Ada!"}
    assert w.next_button.disabled  # the run waits for the person, not for Next
    w.deny_button.click()
    while not w.pause.done:
        if w.pause.question is not None:
            w.deny_button.click()
        else:
            w.next_button.click()
    denied = [e for e in w.logged if e.actor == "human"]
    assert denied and denied[0].payload["decision"] == "deny"
    assert denied[0].payload["reason"] == "denied by the instructor"
    assert not any(e.type == "tool.invoke" for e in w.logged)
    assert "NOT ok" in w.event_view.value and w.question_box.layout.display == "none"


def test_allow_edited_uses_the_args_typed_in(ws: Path) -> None:
    w = LiveStepper(CANONICAL, workspace=ws, layers={"L1"})
    w.args_editor.value = '{"text": "Hello, Grace!"}'
    w.edit_button.click()
    assert w.pause.event.type == "tool.invoke" and w.pause.event.payload["args"] == {"text": "Hello, Grace!"}
    w.finish()


def test_args_that_are_not_json_are_said_and_nothing_moves(ws: Path) -> None:
    w = LiveStepper(CANONICAL, workspace=ws, layers={"L1"})
    w.args_editor.value = "{oops"
    w.edit_button.click()
    assert "not JSON" in w.question_view.value and w.pause.question is not None
    w.allow_button.click()
    assert w.pause.event.type == "tool.invoke"
    w.finish()


def test_unknown_layers_are_refused(ws: Path) -> None:
    with pytest.raises(ValueError, match="unknown layer"):
        LiveStepper(CANONICAL, workspace=ws, layers={"L9"})


def test_agent_step_returns_the_live_stepper(ip) -> None:
    w = ip.run_line_magic("agent", '--step --layer L1 "hello, greet Ada"')
    assert isinstance(w, LiveStepper) and w.pause.question is not None
    w.allow()
    assert w.pause.event.type == "tool.invoke"
    w.finish()
    assert w.pause.done


def test_agent_step_options_are_checked(ip) -> None:
    from IPython.core.error import UsageError

    with pytest.raises(UsageError, match="invalid choice: 'L9'"):
        ip.run_line_magic("agent", '--step --layer L9 "hello"')
    with pytest.raises(UsageError, match="--layer applies to --step"):
        ip.run_line_magic("agent", '--layer L1 "hello"')
    with pytest.raises(UsageError, match="--step shows the trace in the widget"):
        ip.run_line_magic("agent", '--step --live "hello"')


def test_a_cycle_asks_a_person_at_each_phase_advance(ip) -> None:
    w = ip.run_line_magic("agent", '--step --layer L8 --cycle code-review "review the change in auth.py"')
    while w.pause.question is None and not w.pause.done:
        w.next()
    q = w.pause.question
    assert q is not None and q.hook == "PhaseAdvance" and "review → report" in w.question_view.value
    assert json.loads(w.args_editor.value) == "report"
    w.deny_button.click()
    w.finish()
    human = [e for e in w.logged if e.actor == "human"]
    assert human and human[0].payload["hook"] == "PhaseAdvance" and human[0].payload["decision"] == "deny"
    assert any(e.type == "workflow.aborted" for e in w.logged)
    assert ("NOT ok: cycle code-review verdict abort: PhaseAdvance denied review -&gt; report"
            in w.event_view.value)


def test_an_edited_phase_must_be_a_phase_of_the_cycle(ws: Path) -> None:
    w = LiveStepper("review the change in auth.py", workspace=ws, cycle="code-review", layers=set())
    assert w.pause.question is not None
    w.args_editor.value = '"nowhere"'
    w.edit_button.click()
    w.finish()
    human = [e for e in w.logged if e.actor == "human"]
    assert human[0].payload["decision"] == "transform"
    assert any(e.type == "schema.violation" or e.type == "workflow.aborted" for e in w.logged)
    assert not any(e.type == "workflow.phase_advanced" and e.payload["to_phase"] == "nowhere"
                   for e in w.logged)

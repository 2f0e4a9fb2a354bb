"""%agent --fork, %diff and the LogDiff widget (issue 11)."""

from __future__ import annotations

import html

import pytest
from IPython.core.error import UsageError

from agentos_kernel.jupyter.display import AgentRun

CANONICAL = '"hello, greet Ada"'


def test_agent_fork_runs_the_rest_live(ip) -> None:
    ip.run_line_magic("agent", CANONICAL)
    run = ip.run_line_magic("agent", "--fork s0001@14 --faults hook_deny")
    assert isinstance(run, AgentRun)
    assert run.session_id == "s0002" and not run.ok
    assert run.prompt == "hello, greet Ada"  # the parent's request
    assert run.events[14].type == "session.forked"
    assert run.events[14].payload["parent_session"] == "s0001"
    assert next(e.payload["code"] for e in run.failures if e.type == "domain.error") == "GATE_DENIED"
    assert "GATE_DENIED" in repr(run)


@pytest.mark.parametrize(("line", "start"), [
    ("--fork s0001@15", "%agent: cannot fork s0001@15: event 15 is a llm.request"),
    ('--fork s0001@14 "hello"', "%agent: --fork runs the parent's own request"),
    ("--fork s0001", "%agent: 's0001' is not ID@K"),
])
def test_agent_fork_bad_input_is_one_line(ip, line: str, start: str) -> None:
    ip.run_line_magic("agent", CANONICAL)
    with pytest.raises(UsageError) as info:
        ip.run_line_magic("agent", line)
    assert str(info.value).startswith(start), str(info.value)
    assert "\n" not in str(info.value)


def test_diff_magic_shows_the_first_divergence_and_the_deltas(ip) -> None:
    ip.run_line_magic("agent", CANONICAL)
    ip.run_line_magic("agent", "--fork s0001@25 --faults reviewer_fail")
    view = ip.run_line_magic("diff", "s0001 s0002")
    from agentos_kernel.jupyter import DiffView

    assert isinstance(view, DiffView) and not view.identical
    text = repr(view)
    assert text.splitlines()[0] == ("s0001 and s0002 diverge at event 26: s0001 has llm.request "
                                    "(reviewer), s0002 has session.forked (system)")
    assert any(x.startswith(">") and "session.forked" in x for x in text.splitlines())
    assert any(x.startswith("reviewer ") for x in text.splitlines())
    html = view._repr_html_()
    assert 'class="agentos-logdiff"' in html and "outline:2px solid" in html
    assert html.count("outline:2px solid") == 1
    same = ip.run_line_magic("diff", "s0001 s0001")
    assert same.identical and repr(same).startswith("s0001 and s0001 do the same thing (32 events)")


@pytest.mark.parametrize(("line", "start"), [
    ("s0001", "%diff: name both sessions"),
    ("s0001 nosuch", "%diff: no session 'nosuch' in this workspace"),
])
def test_diff_bad_input_is_one_line(ip, line: str, start: str) -> None:
    ip.run_line_magic("agent", CANONICAL)
    with pytest.raises(UsageError) as info:
        ip.run_line_magic("diff", line)
    assert str(info.value).startswith(start), str(info.value)


def test_logdiff_widget_is_driven_like_a_student_would(ip) -> None:
    import ipywidgets as W

    from agentos_kernel.jupyter import LogDiff

    ip.run_line_magic("agent", CANONICAL)
    ip.run_line_magic("agent", "--fork s0001@14 --faults hook_deny")
    w = LogDiff("s0001", "s0002")
    assert isinstance(w, W.VBox)
    assert repr(w).startswith("LogDiff(s0001 vs s0002: diverge at event 15;")
    # it opens on the first divergence, only the differing steps listed
    assert w.changes_only.value is True and w.row is w.diff.rows[w.diff.first_row]
    assert "the first divergence" in w.detail.value and "session.forked" in w.detail.value
    assert 'class="agentos-diff-same"' not in w.table.value
    w.changes_only.value = False
    assert 'class="agentos-diff-same"' in w.table.value
    # the slider counts steps from 1, as its caption does (class-day defect, issue 22)
    assert (w.step.min, w.step.max) == (1, len(w.diff.rows))
    assert f"step {w.step.value} of {len(w.diff.rows)}: only_b · the first divergence" in w.detail.value
    w.step.value = 1  # both logs' session.start, side by side
    assert w.row is w.diff.rows[0] and w.detail.value.count("#1 session.start") == 2
    assert f"step 1 of {len(w.diff.rows)}: same</b>" in w.detail.value
    w.step.value = len(w.diff.rows)  # the last step is reachable, and is the last row
    assert w.row is w.diff.rows[-1] and w.row.kind != "only_a"
    w.step.value = 7  # the lead's llm.request: prompts shown as text, not JSON-escaped
    assert w.row.a.type == "llm.request"
    pane = html.unescape(w.detail.value)
    assert "\\n" not in pane and '\\"' not in pane
    assert "Return JSON:\n      {\n        \"intent\": " in pane  # the system prompt's own lines
    assert 'When a user prompt contains "greet", "hello"' in pane  # a JSON input's string, as text
    assert "&lt;one-sentence statement" in w.detail.value  # still escaped for HTML
    w.first_button.click()
    assert w.row is w.diff.rows[w.diff.first_row] and w.step.value == w.diff.first_row + 1
    assert "Δ tokens" in w.usage.value and ">worker<" in w.usage.value

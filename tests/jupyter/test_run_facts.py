"""A run's rows from the events as appended (runfacts.of_logged) against the rows from the
events read back and their fold (of_events, and session 3's row code kept below as the
oracle); and the run's events made only when read. Generated events: payload values that
read back as they are and ones that do not (tuples, NaN, str subclasses, wrong types)."""

from __future__ import annotations

import copy
import dataclasses
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentos_kernel import replay
from agentos_kernel.jupyter import api, runfacts
from agentos_kernel.jupyter.display import AgentRun
from agentos_kernel.jupyter.layers import FAILURE_TYPES
from agentos_kernel.store.events import Event
from agentos_kernel.store.recorder import layer_of


class Named(str):
    """A str subclass (read back: a plain str)."""


ODD = st.sampled_from([None, 3, 2.5, float("nan"), True, (1,), [1], {"a": 1}, Named("x"), "", "x"])
TEXT = st.sampled_from(["PLAN", "WORK", "REWORK", "L3", "E_X", "s1-e1", "schema_a"]) | ODD
NUMBER = st.integers(0, 10**6) | st.floats(0, 1, allow_nan=False) | ODD
USAGE = st.fixed_dictionaries({}, optional={"input_tokens": NUMBER, "output_tokens": NUMBER,
                                            "cost_usd": NUMBER}) | ODD
VIOLATIONS = st.lists(st.fixed_dictionaries({"path": TEXT}) | ODD, max_size=2) | ODD
PAYLOAD = st.fixed_dictionaries({}, optional={
    "usage": USAGE, "to": TEXT, "code": TEXT, "layer": TEXT, "schema_id": TEXT, "violations": VIOLATIONS,
    "target_id": TEXT | st.just("s1-e1"), "field": st.just("output"), "prompt": TEXT})
TYPES = st.sampled_from(["session.start", "llm.response", "agent.transition", "domain.error",
                         "schema.violation", "human.escalation", "llm.error", "event.amended",
                         "worker.report", "tool.invoke", "workflow.started", "session.close"])


def events_of(kinds: list[tuple[str, Any]]) -> list[Event]:
    return [Event.trusted({"id": f"s1-e{i}", "session_id": "s1", "ts": "2026-01-01T00:00:00Z", "type": t,
                           "actor": "worker", "payload": p, "schema_version": "v1", "parent_id": None,
                           "seq": i, "chain": "c"}) for i, (t, p) in enumerate(kinds, 1)]


def outcome(fn: Any) -> Any:
    try:
        return fn()
    except Exception as exc:  # what the rows raised is part of what they do
        return type(exc)


@settings(max_examples=400, deadline=None)
@given(kinds=st.lists(st.tuples(TYPES, PAYLOAD | ODD), min_size=1, max_size=8))
def test_the_facts_of_the_events_as_appended_are_those_of_the_read_back(kinds: list[tuple[str, Any]]) -> None:
    same_facts(kinds)


def same_facts(kinds: list[tuple[str, Any]]) -> None:
    events = events_of(kinds)
    got = runfacts.of_logged(events)
    read = runfacts.whole_log(events, "s1")
    assert read is not None
    want = outcome(lambda: runfacts.of_events(read, lambda: replay(read), path=True))
    if got is not None:  # only when it is sure: then the same facts, and nothing the rows would raise
        assert got == want
        path = ["INTAKE", *got.path]
        assert outcome(lambda: " → ".join(["INTAKE", *(want.path or ())])) == " → ".join(path)


def old_rows(run: AgentRun) -> list[tuple[str, str]]:
    """Session 3's AgentRun._rows (the oracle), from `events` and the fold."""
    snap = replay(run.events)
    counts: dict[str, int] = {f"L{i}": 0 for i in range(1, 9)}
    for e in run.events:
        counts[layer_of(e)] = counts.get(layer_of(e), 0) + 1
    failures = [e for e in run.events if e.type in FAILURE_TYPES]

    def name(ev: Event) -> str:
        p = ev.payload if isinstance(ev.payload, dict) else {}
        return f"SCHEMA_INVALID ({p.get('schema_id')})" if ev.type == "schema.violation" \
            else str(p.get("code") or ev.type)
    rows = []
    if run.cycle is not None:
        c = run.cycle
        rows += [("cycle", f"{c.cycle_id}: verdict {c.verdict} after {c.generations} phase run(s): "
                           f"{c.reason}"),
                 ("phases", " → ".join(c.visited) or "(not started)")]
    if run.ok:
        rows.append(("output", str(run.output)))
    elif run.error is not None or run.cycle is None:
        code = run.error.code if run.error else None
        exact = [e for e in failures if isinstance(e.payload, dict) and e.payload.get("code") == code]
        fail = next(iter(exact or failures), None)
        where = f" at {layer_of(fail)}, event {fail.seq} by {fail.actor}" if fail is not None else ""
        rows.append(("error", f"{code or '?'}{where}: {run.error.message if run.error else ''}"))
    if failures:
        shown = [f"#{e.seq} {layer_of(e)} {name(e)}" for e in failures[:5]]
        more = len(failures) - len(shown)
        rows.append(("failed", " · ".join(shown) + (f" (+{more} more)" if more else "")))
    if run.cycle is None:
        rows.append(("path", " → ".join(["INTAKE"] + [e.payload.get("to") for e in run.events
                                                      if e.type == "agent.transition"])))
    rows.append(("events", f"{len(run.events)} (" + " · ".join(f"{k} {v}" for k, v in counts.items()) + ")"))
    cost = snap.cost
    rows.append(("usage", f"{snap.llm_calls} LLM calls · {cost.input_tokens} in / {cost.output_tokens} "
                          f"out tokens · ${cost.cost_usd:.6f}"))
    sid = run.session_id
    rows.append(("next", f"%replay {sid} · %events {sid} · LayerStepper({sid!r})"))
    return rows


@pytest.mark.parametrize("line", ['"hello, greet Ada"', '--faults malformed_worker "hello"',
                                  '--faults hook_deny "hello, greet Ada"', '--faults provider_down "hello"',
                                  '--faults schema_violation "hello, greet Ada"',
                                  '--cycle code-review "review the change in auth.py"',
                                  '--cycle code-review --faults phase_advance_denied "review it"'])
def test_a_runs_rows_are_session_3s(ip: Any, line: str) -> None:
    run = ip.run_line_magic("agent", line)
    rows = run._rows
    assert rows == old_rows(run) == dataclasses.replace(run)._rows  # as appended; read back


def test_showing_a_run_neither_makes_its_events_nor_folds_them(ws: Path, ip: Any,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    from agentos_kernel.jupyter import display

    made: list[int] = []
    folds: list[int] = []
    real_made, real_fold = runfacts.made_events, display.replay
    monkeypatch.setattr(runfacts, "made_events", lambda *a: made.append(1) or real_made(*a))
    monkeypatch.setattr(api, "made_events", runfacts.made_events)
    monkeypatch.setattr(display, "replay", lambda events: folds.append(1) or real_fold(events))
    run = api.run_agent("hello, greet Ada", workspace=ws)
    data, _ = ip.display_formatter.format(run)
    assert "5 LLM calls" in data["text/plain"] and made == [] and folds == []
    assert "events" not in vars(run)
    on_disk = tuple(api.Runtime.from_workspace(ws).events(run.session_id))
    assert run.events == on_disk and run.events is run.events and made == [1]
    assert "events" in vars(run) and run.snapshot == replay(on_disk) and folds == [1]


BASE = [("session.start", {"prompt": "hi"}),
        ("llm.response", {"usage": {"input_tokens": 3, "output_tokens": 4, "cost_usd": 0.25}}),
        ("agent.transition", {"to": "WORK"}),
        ("domain.error", {"code": "E_X", "layer": "L3"}),
        ("schema.violation", {"schema_id": "schema_a", "violations": [{"path": "/"}]}),
        ("human.escalation", {"code": None}),
        ("event.amended", {"target_id": "s1-e1", "field": "output"})]
"""A run every read of which is plain: of_logged gives its facts."""
PLACES = [(1, ("usage",)), (1, ("usage", "input_tokens")), (1, ("usage", "output_tokens")),
          (1, ("usage", "cost_usd")), (2, ("to",)), (3, ("code",)), (3, ("layer",)), (4, ("schema_id",)),
          (4, ("violations",)), (4, ("violations", 0)), (5, ("code",)), (6, ("target_id",))]


@pytest.mark.parametrize("at, place", PLACES)
@pytest.mark.parametrize("odd", [None, 3, 2.5, float("nan"), float("inf"), True, (1,), [1], {"a": 1},
                                 Named("x"), "", "x", [{"path": "/"}], {"path": "/"}])
def test_each_value_read_is_plain_or_the_facts_are_not_taken(at: int, place: tuple[Any, ...],
                                                              odd: Any) -> None:
    assert runfacts.of_logged(events_of(BASE)) is not None
    kinds = [(t, copy.deepcopy(p)) for t, p in BASE]
    where: Any = kinds[at][1]
    for key in place[:-1]:
        where = where[key]
    where[place[-1]] = odd
    same_facts(kinds)


def old_html(run: AgentRun) -> str:
    """Session 3's AgentRun._repr_html_ (the oracle)."""
    from agentos_kernel.jupyter.layers import LAYER_COLORS, LAYER_NAMES, esc, text_on

    color = "#1a7f37" if run.ok else "#cf222e"
    verdict = (f'<span style="background:{color};color:#fff;padding:1px 6px;border-radius:3px">'
               f'{esc("ok" if run.ok else "NOT ok · fail-closed")}</span>')
    cells = []
    for layer, n in run._counts.items():
        style = f"background:{LAYER_COLORS[layer]};color:{text_on(layer)}" if n else "color:#888"
        cells.append(f'<span title="{esc(LAYER_NAMES[layer])}" style="{style};padding:1px 5px;'
                     f'margin-right:2px;border-radius:3px">{layer} {n}</span>')
    rows = "".join(
        f'<tr><td style="text-align:left;padding-right:8px;vertical-align:top"><b>{esc(k)}</b></td>'
        f'<td style="text-align:left">{"".join(cells) if k == "events" else esc(v)}</td></tr>'
        for k, v in old_rows(run))
    box = "border:1px solid #bbb;border-radius:4px;padding:6px 10px;margin:2px 0;font-family:monospace"
    return (f'<div class="agentos-run" style="{box}">{verdict} <b>{esc(run.session_id)}</b> '
            f"{esc(repr(run.prompt))} · profile {esc(run.profile)} ({esc(run.model)})"
            f"<table>{rows}</table></div>")


def test_a_runs_html_is_session_3s_and_escapes_only_its_values(ip: Any,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    from agentos_kernel.jupyter import display

    runs = [ip.run_line_magic("agent", line) for line in
            ('"hello, greet Ada"', '--faults hook_deny "hello, greet Ada"',
             '--faults schema_violation "hi <b>"', '--cycle code-review "review the change in auth.py"')]
    calls: list[object] = []
    real = display.esc
    monkeypatch.setattr(display, "esc", lambda v: calls.append(v) or real(v))
    for run in runs:
        calls.clear()
        html = run._repr_html_()
        assert html == old_html(run)
        # the verdict, id, prompt, profile, model and each row's value but the strip's
        assert len(calls) == 5 + len(run._rows) - 1

"""A cell running `%agent` (issue 24's displayed line magic) against the way IPython did it
before the shortcuts in jupyter/shell.py: the bundle `AgentRun._repr_mimebundle_` hands over
is what IPython's formatters make of the run without it (generated runs, texts and formatter
settings), the line the magic parses is what IPython's own `$var`/`{expr}` expansion gives
(generated lines, from a cell and from a function's locals), and the layer counts are
`layer_of`'s. Plus speed-independent guards: what each display and each line asks IPython
for (counts of calls, never times)."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from IPython.lib import pretty

from agentos_kernel.errors import DomainError
from agentos_kernel.jupyter import api, layers, magics, runfacts
from agentos_kernel.jupyter.display import AgentRun
from agentos_kernel.store.events import Event
from agentos_kernel.store.recorder import layer_of

FIXTURES = settings(max_examples=60, deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture])
# Line breaks of every kind str.splitlines knows, quotes, and non-ASCII: where `pretty` and
# `repr` part ways.
TEXT = st.text(alphabet=st.sampled_from(list("ab \n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029'\"<&>é字\t")),
               max_size=12)


@pytest.fixture
def runs(ip: Any) -> list[AgentRun]:
    """Real runs: ok, failing closed in several layers, and L8 cycles that end three ways."""
    lines = ['"hello, greet Ada"', '--faults malformed_worker "hello"',
             '--faults hook_deny "hello, greet Ada"', '--faults provider_down "hello"',
             '--faults schema_violation "hello, greet Ada"',
             '--cycle code-review "review the change in auth.py"',
             '--cycle bugfix --faults p0_finding "fix the login bug"',
             '--cycle code-review --faults phase_advance_denied "review it"']
    return [ip.run_line_magic("agent", line) for line in lines]


def old_format(ip: Any, run: AgentRun, **kw: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """What IPython made of a run before it had a `_repr_mimebundle_`."""
    with pytest.MonkeyPatch.context() as mp:
        mp.delattr(AgentRun, "_repr_mimebundle_")
        return ip.display_formatter.format(dataclasses.replace(run), **kw)  # nothing kept from before


@pytest.fixture
def plain(ip: Any) -> Iterator[Any]:
    """The shell's text/plain formatter, with text/html switched on as in a kernel (the test
    shell is a terminal's); every setting put back afterwards."""
    f, html = ip.display_formatter.formatters["text/plain"], ip.display_formatter.formatters["text/html"]
    kept = f.pprint, f.newline, f.enabled, dict(f.type_printers), html.enabled
    html.enabled = True
    yield f
    f.pprint, f.newline, f.enabled, html.enabled = kept[0], kept[1], kept[2], kept[4]
    f.type_printers.clear()
    f.type_printers.update(kept[3])


@pytest.mark.parametrize("setting", ["default", "pprint off", "CRLF", "text/plain off",
                                     "a printer registered", "include html", "exclude html",
                                     "include plain", "a terminal"])
def test_the_bundle_is_what_the_formatters_made(ip: Any, runs: list[AgentRun], plain: Any,
                                                setting: str) -> None:
    kw: dict[str, Any] = {}
    if setting == "pprint off":
        plain.pprint = False
    elif setting == "CRLF":
        plain.newline = "\r\n"
    elif setting == "text/plain off":
        plain.enabled = False
    elif setting == "a printer registered":
        plain.for_type(AgentRun, lambda obj, p, cycle: p.text(f"run {obj.session_id}"))
    elif setting == "a terminal":
        ip.display_formatter.formatters["text/html"].enabled = False
    elif setting.startswith(("include", "exclude")):
        kw[setting.split()[0]] = {"text/html" if setting.endswith("html") else "text/plain"}
    for run in runs:
        new = ip.display_formatter.format(dataclasses.replace(run), **kw)
        assert new == old_format(ip, run, **kw)
    if setting == "default":
        assert set(new[0]) == {"text/plain", "text/html"} and new[1] == {}


@FIXTURES
@given(prompt=TEXT, output=st.none() | TEXT, message=TEXT, ok=st.booleans(), pprint_on=st.booleans())
def test_generated_runs_give_the_same_bundle(ip: Any, runs: list[AgentRun], plain: Any, prompt: str,
                                             output: str | None, message: str, ok: bool,
                                             pprint_on: bool) -> None:
    plain.pprint = pprint_on
    for run in runs[:2]:
        error = None if ok else DomainError("L3", "WORKER_OUTPUT_INVALID", message, False, run.session_id)
        made = dataclasses.replace(run, prompt=prompt, output=output, ok=ok, error=error, profile=message)
        assert ip.display_formatter.format(made) == old_format(ip, made)


def test_a_run_that_cannot_be_shown_fails_as_it_did(ip: Any, runs: list[AgentRun], plain: Any,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    broken = [Event.trusted(dict(vars(e), payload={"usage": "many"})) if e.type == "llm.response" else e
              for e in runs[0].events]
    run = dataclasses.replace(runs[0], events=tuple(broken))
    shown: list[object] = []
    monkeypatch.setattr(ip, "showtraceback", lambda *a, **k: shown.append(a))
    new = ip.display_formatter.format(dataclasses.replace(run))
    new_tracebacks, shown[:] = len(shown), []
    assert new == old_format(ip, run) == ({}, {})
    assert new_tracebacks == len(shown) == 2  # text/plain and text/html, each as before


def test_a_run_is_shown_without_pretty_printing_and_its_html_made_once(
        ip: Any, runs: list[AgentRun], plain: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []
    real_pretty, real_html = pretty.RepresentationPrinter.pretty, AgentRun._repr_html_
    monkeypatch.setattr(pretty.RepresentationPrinter, "pretty",
                        lambda self, obj: calls.append("pretty") or real_pretty(self, obj))
    monkeypatch.setattr(AgentRun, "_repr_html_", lambda self: calls.append("html") or real_html(self))
    data, _ = ip.display_formatter.format(dataclasses.replace(runs[0]))
    assert calls == ["html"] and data["text/plain"].startswith("AgentRun s0001 ok")


# -- the line: $var and {expr} expanded as IPython expands them ----------------------------

LINE = st.lists(st.sampled_from([*"ab $${}'\".:-", "who", "name", "n", "$$", "{n}", "$name", "\n"]),
                max_size=14).map("".join)


@pytest.fixture
def seen(ip: Any, monkeypatch: pytest.MonkeyPatch) -> dict[str, list[str]]:
    """The line %agent would parse, and the line a magic IPython expands would get."""
    got: dict[str, list[str]] = {"agent": [], "reference": []}
    monkeypatch.setattr(magics.AGENT, "parse_cached", lambda line: got["agent"].append(line))
    ip.register_magic_function(lambda line: got["reference"].append(line), "line", "reference_echo")
    ip.user_ns.update(who="Bob", n=3)
    return got


@FIXTURES
@given(line=LINE)
@example(line='"$$name, {{n}}, $who"')  # expanded twice, it would read "Ada, 3, Bob"
def test_the_line_is_expanded_as_ipython_would(ip: Any, seen: dict[str, list[str]], line: str) -> None:
    def in_a_function() -> None:
        name, n = "Ada", 7  # noqa: F841 (read by the expansion, from this frame's locals)
        ip.run_line_magic("agent", line)
        ip.run_line_magic("reference_echo", line)

    in_a_function()
    ip.run_line_magic("agent", line)
    ip.run_line_magic("reference_echo", line)
    if "\n" not in line and "\r" not in line:  # a cell's %magic is one line
        ip.run_cell(f"%agent {line}", store_history=False)
        ip.run_cell(f"%reference_echo {line}", store_history=False)
    assert seen["agent"] == seen["reference"]
    seen["agent"].clear()
    seen["reference"].clear()


def test_the_shell_expands_only_a_line_with_something_to_expand(ip: Any, seen: dict[str, list[str]],
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []
    real = type(ip).var_expand
    monkeypatch.setattr(type(ip), "var_expand",
                        lambda self, cmd, *a, **k: calls.append(cmd) or real(self, cmd, *a, **k))
    ip.run_line_magic("agent", '--profile scripted "hello, greet Ada"')
    assert calls == []
    ip.run_line_magic("agent", '"hello, greet $who"')
    assert calls == ['"hello, greet $who"'] and seen["agent"][-1] == '"hello, greet Bob"'


def test_the_magic_called_directly_expands_nothing(ip: Any, seen: dict[str, list[str]]) -> None:
    magic = ip.magics_manager.registry["AgentMagics"]
    magic.agent('"hello, $who"')
    # from another magic run_line_magic ran: IPython expanded that one's line, once
    ip.register_magic_function(lambda line: magic.agent(line), "line", "via")
    ip.run_line_magic("via", '"hello, $$who"')
    ip.run_cell('%via "hello, $$who"', store_history=False)
    assert seen["agent"] == ['"hello, $who"'] * 3


# -- layer counts ----------------------------------------------------------------------------

TYPES = st.sampled_from(["session.start", "llm.request", "tool.invoke", "hook.fired", "domain.error",
                         "schema.violation", "workflow.started", "nope", "x.y.z", "", "domain", "L1"])


@settings(max_examples=200, deadline=None)
@given(kinds=st.lists(st.tuples(TYPES, st.sampled_from([None, "L1", "L6", "L9", 3])), max_size=12))
def test_layer_counts_are_layer_ofs(kinds: list[tuple[str, object]]) -> None:
    events = [Event.trusted({"id": f"s1-e{i}", "session_id": "s1", "ts": "t", "type": t, "actor": "user",
                             "payload": {} if layer is None else {"layer": layer}, "schema_version": "v1",
                             "parent_id": None, "seq": i, "chain": "c"})
              for i, (t, layer) in enumerate(kinds, 1)]
    expected = dict.fromkeys(layers.LAYER_NAMES, 0)
    for ev in events:
        expected[layer_of(ev)] = expected.get(layer_of(ev), 0) + 1
    for _ in range(2):  # the second time from what the first kept
        got = layers.layer_counts(events)
        assert got == expected and list(got) == list(expected)


def test_layer_counts_look_each_type_up_once(ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(layers, "_LAYER_OF_TYPE", {})
    calls: list[str] = []
    monkeypatch.setattr(layers, "layer_of", lambda ev: calls.append(ev.type) or layer_of(ev))
    run = api.run_agent("hello, greet Ada", workspace=ws)
    layers.layer_counts(run.events)
    assert sorted(calls) == sorted({e.type for e in run.events})
    calls.clear()
    layers.layer_counts(api.run_agent("hello, greet Ada", workspace=ws).events)
    assert calls == []


# -- the run's events, made from their canonical bytes as reading the log back would ---------

class Named(str):
    """A str subclass a caller might pass as an actor or type (read back: a plain str)."""


JSONISH = st.recursive(
    st.none() | st.booleans() | st.integers(-2**63, 2**63 - 1) | st.floats() | st.text(max_size=4),
    lambda inner: st.lists(inner, max_size=3) | st.lists(inner, max_size=3).map(tuple)
    | st.dictionaries(st.text(max_size=3), inner, max_size=3),
    max_leaves=8)


@settings(max_examples=200, deadline=None)
@given(payloads=st.lists(JSONISH, min_size=1, max_size=5), named=st.booleans(), parent=st.booleans())
def test_the_runs_events_are_what_reading_the_log_back_gives(payloads: list[object], named: bool,
                                                              parent: bool) -> None:
    import orjson

    from agentos_kernel.store.events import canonical

    events = [Event.trusted({"id": f"s1-e{i}", "session_id": "s1", "ts": "2026-01-01T00:00:00Z",
                             "type": "session.start", "actor": Named("user") if named and i == 2 else "user",
                             "payload": p, "schema_version": "v1", "parent_id": "s1-e1" if parent else None,
                             "seq": i, "chain": "c"}) for i, p in enumerate(payloads, 1)]
    made = runfacts.whole_log(events, "s1")
    read = tuple(Event.from_dict(orjson.loads(canonical(e.to_dict()))) for e in events)
    assert made is not None
    assert made == read and repr(made) == repr(read)
    # the fields in the order they were before: the runtime's, or (made whole from the bytes) sorted
    whole = any(type(e.actor) is Named for e in events)
    assert [list(vars(e)) for e in made] == [list(vars(e)) for e in (read if whole else events)]
    assert all(type(m) is Event for m in made)
    assert all(m.payload is not e.payload or m.payload is None or type(m.payload) in (bool, int, float, str)
               for m, e in zip(made, events, strict=True))  # nothing shared with what the runtime holds

"""%agent builds its AgentRun from the events as they were appended, not from the log read
back: the same events and the same snapshot as the read-back, for a request that succeeds,
one that fails closed, one whose prompt is redacted and one traced live. And the magics'
parser formats its usage once, not on every line (a count, never a time)."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from agentos_kernel import replay
from agentos_kernel.jupyter import api, runfacts
from agentos_kernel.jupyter.magics import AGENT
from agentos_kernel.store.events import read_log


@pytest.mark.parametrize("prompt, kw", [
    ("hello, greet Ada", {}),
    ("hello", {"faults": "malformed_worker"}),
    ("hello, greet Ada, my key is sk-ant-api03-" + "A" * 40, {}),
    ("hello, greet Ada", {"live": True}),
])
def test_the_run_is_what_reading_its_log_back_gives(ws: Path, prompt: str, kw: dict[str, object],
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    reads: list[str] = []
    real = api.Runtime.events
    monkeypatch.setattr(api.Runtime, "events", lambda self, sid: reads.append(sid) or real(self, sid))
    run = api.run_agent(prompt, workspace=ws, **kw)
    assert reads == []  # nothing read back
    on_disk = tuple(read_log(ws / "sessions" / run.session_id / ".events.jsonl"))
    assert run.events == on_disk
    assert repr(run.events) == repr(on_disk)  # the same values, the keys in the same order
    assert run.snapshot == replay(on_disk)
    assert run.prompt == on_disk[0].payload["prompt"] and "A" * 40 not in run.prompt


def test_usage_is_formatted_once_and_help_is_unchanged(monkeypatch: pytest.MonkeyPatch,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(AGENT, "usage", None)
    fresh = AGENT.format_help()  # the help as argparse writes it with no usage set
    AGENT.parse_line('"hello"')
    calls: list[int] = []
    real = argparse.ArgumentParser.format_usage
    monkeypatch.setattr(type(AGENT), "format_usage", lambda self: calls.append(1) or real(self))
    for _ in range(3):
        assert AGENT.parse_line('--profile scripted "hello, greet Ada"').prompt == ["hello, greet Ada"]
    assert calls == []
    assert AGENT.format_help() == fresh
    assert AGENT.parse_line("--help") is None
    assert capsys.readouterr().out == fresh + "\n"


def test_a_run_counts_its_layers_once_however_often_it_is_shown(ws: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []
    real = runfacts.layer_counts
    monkeypatch.setattr(runfacts, "layer_counts", lambda events: calls.append(1) or real(events))
    run = api.run_agent("hello, greet Ada", workspace=ws)
    text, html = repr(run), run._repr_html_()
    assert (repr(run), run._repr_html_()) == (text, html)
    assert calls == [1]
    assert "events:" in text and "L4" in html


def test_a_line_parsed_before_is_not_parsed_again(monkeypatch: pytest.MonkeyPatch,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    from IPython.core.error import UsageError

    monkeypatch.setattr(AGENT, "_parsed", {})
    calls: list[str] = []
    real = type(AGENT).parse_line
    monkeypatch.setattr(type(AGENT), "parse_line", lambda self, line: calls.append(line) or real(self, line))
    line = '--step --layer L1 --layer L3 "hello, greet Ada"'
    first = AGENT.parse_cached(line)
    assert first is not None and first.layer == ["L1", "L3"]
    first.layer.append("L8")  # a caller's change stays its own
    second = AGENT.parse_cached(line)
    assert second is not None and second.layer == ["L1", "L3"] and second.prompt == ["hello, greet Ada"]
    assert calls == [line]
    for _ in range(2):  # a problem or --help is shown every time
        with pytest.raises(UsageError, match="--nope"):
            AGENT.parse_cached('--nope "hello"')
        assert AGENT.parse_cached("--help") is None
        assert "usage:" in capsys.readouterr().out
    assert calls == [line] + ['--nope "hello"', "--help"] * 2


def test_a_run_whose_fields_are_not_plain_strings_is_made_as_it_reads_back() -> None:
    import orjson

    from agentos_kernel.store.events import Event, canonical

    class Named(str):
        def __repr__(self) -> str:
            return f"Named({str(self)!r})"

    events = [Event.trusted({"id": f"s1-e{i}", "session_id": "s1", "ts": "2026-01-01T00:00:00Z",
                             "type": "session.start", "actor": Named("user") if i == 2 else "user",
                             "payload": {"b": (1, float("nan")), "a": "x"}, "schema_version": "v1",
                             "parent_id": None, "seq": i, "chain": "c"}) for i in (1, 2)]
    made = runfacts.whole_log(events, "s1")
    read = tuple(Event.from_dict(orjson.loads(canonical(e.to_dict()))) for e in events)
    assert made == read and repr(made) == repr(read)
    assert "Named" not in repr(made) and list(made[0].payload) == ["a", "b"]


def test_a_runs_snapshot_is_folded_once_and_only_when_asked_for(ws: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    from agentos_kernel.jupyter import display

    folds: list[int] = []
    real = display.replay
    monkeypatch.setattr(display, "replay", lambda events: folds.append(len(events)) or real(events))
    run = api.run_agent("hello, greet Ada", workspace=ws)
    assert folds == []
    assert run.snapshot == replay(run.events) and run.snapshot.llm_calls == 5
    assert "5 LLM calls" in repr(run)
    assert folds == [len(run.events)]


def test_a_run_keeps_its_events_without_the_watching_generator(ws: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[object] = []
    real = api.Runtime.watching
    monkeypatch.setattr(api.Runtime, "watching", lambda self, w, **k: calls.append(w) or real(self, w, **k))
    rt = api.cached_runtime(ws)
    before = list(rt.watchers)
    run = api.run_agent("hello, greet Ada", workspace=ws)
    assert calls == [] and len(run.events) == 32 and rt.watchers == before  # nothing left behind
    live = api.run_agent("hello, greet Ada", workspace=ws, live=True)  # the live trace still watches
    assert len(calls) == 1 and live.events[-1].type == "session.close" and rt.watchers == before

"""The streaming log diff (runs/diff.py, runs/diffrows.py) against the engine it replaced
(tests/diff_oracle: both logs read whole, every row holding its Events), on generated pairs
of logs; and its memory, in a fresh interpreter."""

from __future__ import annotations

import random
import subprocess
import sys
from dataclasses import astuple, replace
from pathlib import Path
from typing import Any

import orjson
import pytest

from agentos_kernel.jupyter.widgets.diffview import DiffView, rows_html
from agentos_kernel.runs import difftext
from agentos_kernel.runs.diff import diff_events
from agentos_kernel.store.events import Event, LogError, canonical, read_log
from agentos_kernel.testing import write_long_session

from .diff_oracle import diff as old_diff
from .diff_oracle import difftext as old_text
from .peak_script import peak_script

MUTATIONS = ("payload", "ignored", "type", "actor", "insert", "delete", "end", "fork", "renamed", "role")


def _mutate(events: list[Event], rnd: random.Random, how: str) -> list[Event]:
    out = list(events)
    i = rnd.randrange(len(out))
    e = out[i]
    if how == "payload":
        x = rnd.choice([1, "1", True, None, [1]])
        out[i] = replace(e, payload={**e.payload, "x": x} if isinstance(e.payload, dict) else 7)
    elif how == "ignored":  # a volatile field: no divergence
        hooks = [k for k, x in enumerate(out) if x.type == "hook.fired"]
        if hooks:
            k = rnd.choice(hooks)
            out[k] = replace(out[k], payload={**out[k].payload, "ms": 12345})
    elif how == "type":
        out[i] = replace(e, type=rnd.choice(["tool.invoke", "hook.fired", "llm.response", "x.y"]))
    elif how == "actor":
        out[i] = replace(e, actor=rnd.choice(["hook:other", "tool:x", "planner", "kernel"]))
    elif how == "insert":
        out.insert(i, replace(out[rnd.randrange(len(out))], id=f"ins{i}"))
    elif how == "delete":
        del out[i]
    elif how == "end":
        del out[i:]
    elif how == "fork":
        out.insert(i, replace(e, id="fork", type="session.forked", actor="kernel", payload={"at": i}))
        for k in range(i + 1, min(len(out), i + rnd.randint(1, 6))):
            out[k] = replace(out[k], payload={"changed": k}) if rnd.random() < 0.5 else out[k]
    elif how == "role":  # a role only this side has, early (usage lists roles A's first)
        calls = [k for k, x in enumerate(out) if x.type == "llm.response"]
        if calls:
            k = calls[rnd.randrange(min(3, len(calls)))]
            out[k] = replace(out[k], payload={**out[k].payload, "role": f"new{k}"})
    elif how == "renamed":  # A's session id inside a payload, read as B's
        out[i] = replace(e, payload={"about": e.session_id})
    return out


def _pair(tmp: Path, seed: int) -> tuple[Path, Path]:
    rnd = random.Random(seed)
    n = rnd.choice([2, 3, 63, 64, 65, 130, rnd.randint(2, 300)])
    a = list(read_log(write_long_session(tmp / "src", "sa", n)))
    b = list(read_log(write_long_session(tmp / "src", "sb", n)))
    kinds = [] if seed % 7 == 0 else rnd.sample(MUTATIONS, rnd.randint(1, 3))
    for how in kinds:
        if rnd.random() < 0.3:
            a = _mutate(a, rnd, how) or a
        else:
            b = _mutate(b, rnd, how) or b
    if seed % 3 == 1:  # values alike in Python or in bytes, and A's id where it is renamed
        i = rnd.randrange(min(len(a), len(b)))
        v = rnd.choice([1, 1.0, True, "1"])
        a[i] = replace(a[i], payload={"p": 1, "q": v, "r": rnd.choice(["sa", "z"])},
                       actor=rnd.choice(["x:sa", "x"]))
        q = rnd.choice([1, 1.0, True, "1"])
        b[i] = replace(b[i], payload={"r": rnd.choice(["sa", "sb", "z"]), "q": q, "p": 1},
                       actor=rnd.choice(["x:sb", "x:sa", "x"]))
    paths = []
    for name, events in (("a", a), ("b", b)):
        p = tmp / name / ".events.jsonl"
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(b"".join(canonical(e.to_dict()) + b"\n" for e in events))
        paths.append(p)
    return paths[0], paths[1]


def _head(d: Any) -> tuple[object, ...]:
    # (the oracle's dataclasses are its own classes: compared as tuples)
    return (d.a, d.b, d.first and astuple(d.first), d.compared, [astuple(u) for u in d.roles],
            d.first_row, d.identical)


def _rows(d: object) -> list[tuple[object, ...]]:
    return [(r.kind, r.a, r.b, r.path, r.step) for r in d.rows]  # type: ignore[attr-defined]


@pytest.mark.parametrize("seed", range(90))
def test_the_streaming_diff_is_the_whole_log_diff(tmp_path: Path, seed: int) -> None:
    pa, pb = _pair(tmp_path, seed)
    new, old = difftext.diff_logs(pa, pb), old_text.diff_logs(pa, pb)
    assert _head(new) == _head(old)
    assert _rows(new) == _rows(old)
    backwards = [new.rows[k] for k in range(len(new.rows) - 1, -1, -1)]  # random access
    assert [(r.kind, r.a, r.b, r.path) for r in backwards] == [r[:4] for r in _rows(old)][::-1]
    assert difftext.verdict(new) == old_text.verdict(old)
    for only in (False, True):
        assert difftext.diff_lines(new, only) == old_text.diff_lines(old, only)
    assert difftext.usage_lines(new) == old_text.usage_lines(old)
    # the engine on lists of Events (rerun --verify's form), rename included
    ea, eb = list(read_log(pa)), list(read_log(pb))
    listed = diff_events(ea, eb, ("sa", "sb"))
    assert _rows(listed) == _rows(old_diff.diff_events(ea, eb, ("sa", "sb")))
    assert repr(DiffView(new)) == "\n".join(
        [old_text.verdict(old), *(old_text.diff_lines(old, True) if old.first else []),
         *old_text.usage_lines(old)])


@pytest.mark.parametrize(("actors", "payloads"), [
    (("x:sa", "x:sa"), ({"p": 1}, {"p": 1})),  # A's id in the actor: renamed, so they differ
    (("x", "x"), ({"r": "sa"}, {"r": "sa"})),  # ... in the payload
    (("x:sa", "x:sb"), ({"r": "sa"}, {"r": "sb"})),  # ... read as B's: the same
    (("x", "x"), ({"q": 1}, {"q": 1.0})),
    (("x", "x"), ({"q": 1}, {"q": True})),
    (("x", "x"), ({"p": 1, "q": [2]}, {"q": [2], "p": 1})),  # other bytes, the same values
])
def test_values_alike_in_bytes_or_in_python_are_told_apart_as_before(
        tmp_path: Path, actors: tuple[str, str], payloads: tuple[Any, Any]) -> None:
    paths = []
    for sid, actor, payload in zip(("sa", "sb"), actors, payloads, strict=True):
        p = write_long_session(tmp_path, sid, 80)
        lines = p.read_bytes().splitlines(keepends=True)
        e = Event.from_dict(orjson.loads(lines[40]))
        lines[40] = canonical(replace(e, actor=actor, payload=payload).to_dict()) + b"\n"
        p.write_bytes(b"".join(lines))
        paths.append(p)
    new, old = difftext.diff_logs(*paths), old_text.diff_logs(*paths)
    assert _head(new) == _head(old) and _rows(new) == _rows(old)


def _outcome(fn: Any) -> Any:
    try:
        return fn()
    except LogError as exc:
        return "LogError", str(exc)


@pytest.mark.parametrize("bad", ["a", "b", "both", "b-early"])
def test_a_bad_line_is_the_error_the_whole_read_gave(tmp_path: Path, bad: str) -> None:
    pa, pb = (write_long_session(tmp_path, s, 200) for s in ("sa", "sb"))
    for side, p in (("a", pa), ("b", pb)):
        if bad in (side, "both", "b-early"):
            lines = p.read_bytes().splitlines(keepends=True)
            at = 5 if bad == "b-early" and side == "b" else len(lines) - 3
            lines.insert(at, b'{"id": "x", "no": "envelope"}\n' if side == "a" else b"{not json\n")
            p.write_bytes(b"".join(lines))
    found = _outcome(lambda: difftext.diff_logs(pa, pb))
    assert found[0] == "LogError" and found == _outcome(lambda: old_text.diff_logs(pa, pb))
    assert found[1].startswith(str(pb if bad == "b" else pa))


def test_the_same_row_asked_twice_is_the_same_row(tmp_path: Path) -> None:
    pa, pb = _pair(tmp_path, 3)
    d = difftext.diff_logs(pa, pb)
    assert d.rows[len(d.rows) // 2] is d.rows[len(d.rows) // 2]


def test_the_table_shows_a_window_of_rows_around_the_step(tmp_path: Path) -> None:
    write_long_session(tmp_path, "sa", 1200)
    write_long_session(tmp_path, "sb", 1200)
    d = difftext.diff_logs(tmp_path / "sa" / ".events.jsonl", tmp_path / "sb" / ".events.jsonl")
    whole = rows_html(d)
    assert whole.count("<tr class=") == 1200 and "shown" not in whole
    shown = rows_html(d, window=500, around=900)
    assert shown.count("<tr class=") == 500 and "rows 651-1150 of 1200 shown" in shown
    assert shown.count("<td>900</td>") == 2 and "<td>650</td>" not in shown  # seq = row + 1
    assert rows_html(d, window=500, around=1199).count("rows 701-1200 of 1200") == 1


_PEAKS = peak_script("from agentos_kernel.jupyter.widgets.diffview import LogDiff", """\
for n in sizes:
    write_long_session(ws + "/sessions", f"a{n}", n)
    write_long_session(ws + "/sessions", f"b{n}", n)
    p = write_long_session(ws + "/sessions", f"c{n}", n)
    lines = p.read_bytes().splitlines(keepends=True)
    lines[n // 2] = lines[n // 2].replace(b'"actor":"', b'"actor":"x', 1)  # diverges halfway
    p.write_bytes(b"".join(lines))
LogDiff(f"a{sizes[0]}", f"b{sizes[0]}", workspace=ws)  # warm
tracemalloc.start()
for n in sizes:
    for other in ("b", "c"):
        gc.collect()
        tracemalloc.reset_peak()
        before = tracemalloc.get_traced_memory()[0]  # (ipywidgets keeps every widget made)
        w = LogDiff(f"a{n}", f"{other}{n}", workspace=ws)
        w.step.value = n // 3
        print(other, n, (tracemalloc.get_traced_memory()[1] - before) / 1e6)
""")


def test_a_log_diff_keeps_memory_flat_in_the_agreeing_prefix(tmp_path: Path) -> None:
    """Peak traced memory of opening a LogDiff and stepping to a third, in a fresh interpreter:
    two agreeing 40k-event logs within 1 MB of two 4k-event ones (the whole-log engine: 52 MB
    at 10k, bench/RESULTS.md); diverging halfway, under 200 bytes an event after the
    divergence (an interned key and a row's positions)."""
    done = subprocess.run([sys.executable, "-c", _PEAKS, str(tmp_path / "ws"), "4000", "40000"],
                          capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    lines = (line.split() for line in done.stdout.split("\n") if line)
    peaks = {(k, int(n)): float(mb) for k, n, mb in lines}
    assert peaks["b", 40000] < 8.0, peaks
    assert peaks["b", 40000] - peaks["b", 4000] < 1.0, peaks
    assert peaks["c", 40000] - peaks["c", 4000] < 200 * 18000 / 1e6, peaks


def test_agreeing_logs_read_from_files_are_compared_by_their_bytes(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """The lockstep walk compares two logs' JSON bytes first (the exact comparison only where
    they differ): a count of calls, not a timing."""
    from agentos_kernel.runs import diff as engine

    calls: list[int] = []
    exact = engine.first_difference

    def counted(*args: Any) -> Any:
        calls.append(1)
        return exact(*args)

    monkeypatch.setattr(engine, "first_difference", counted)
    pa, pb = (write_long_session(tmp_path, s, 300) for s in ("sa1", "sb1"))
    assert difftext.diff_logs(pa, pb).identical and not calls
    listed = diff_events(list(read_log(pa)), list(read_log(pb)), ("sa1", "sb1"))
    assert listed.identical and len(calls) == 300  # (lists of live Events: the exact way)

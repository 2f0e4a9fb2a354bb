"""The on-demand LogEvents and the bounded ReplayIndex against the forms they replaced
(tests/replay_oracle: the whole file's bytes held, a fold of every event kept): generated
logs (blank and whitespace lines, CRLF, torn, unterminated and corrupt lines, blocks of every
length), read at random positions in random order, must give the same events, line numbers,
bytes, errors and snapshots."""

from __future__ import annotations

import random
import subprocess
import sys
from array import array
from pathlib import Path
from typing import Any

import orjson
import pytest

from agentos_kernel import replay
from agentos_kernel.jupyter.widgets.snapview import diff_snapshots, json_head, snapshot_rows
from agentos_kernel.store.events import LogError, TornTail, read_log
from agentos_kernel.store.replay.index import CHECKPOINT_EVERY, ReplayIndex
from agentos_kernel.store.replay.logview import ROWS_BATCH, STRIDE, LogEvents
from agentos_kernel.testing import write_long_session

from .peak_script import peak_script
from .replay_oracle.index import ReplayIndex as OldReplayIndex
from .replay_oracle.logview import LogEvents as OldLogEvents

SEEDS = range(40)


def _generated(tmp: Path, seed: int) -> Path:
    """A chained log of 2..5 blocks' worth of events, mangled as a seed says."""
    rnd = random.Random(seed)
    n = rnd.choice([2, 3, STRIDE - 1, STRIDE, STRIDE + 1, 2 * STRIDE, rnd.randint(2, 5 * STRIDE)])
    lines = write_long_session(tmp / "src", f"s{seed}", n).read_bytes().splitlines(keepends=True)
    out: list[bytes] = []
    for line in lines:
        r = rnd.random()
        if r < 0.05:
            out.append(rnd.choice([b"\n", b"   \n", b"\t\r\n", b"\r\n"]))
        if r > 0.97:
            line = line.replace(b"\n", b"\r\n")
        out.append(line)
    tail = rnd.choice(["none", "none", "torn", "unterminated", "space", "bad", "bad-last", "blank-end"])
    if tail == "torn":
        out.append(b'{"id": "half')
    elif tail == "unterminated":
        out[-1] = out[-1].rstrip(b"\r\n")
    elif tail == "space":
        out.append(b"   ")
    elif tail == "bad":
        out.insert(rnd.randrange(len(out)), b"{not json\n")
    elif tail == "bad-last":
        out.append(b"{not json\n")
        out.append(b"  ")
    elif tail == "blank-end":
        out.append(b"\n\n")
    path = tmp / f"log{seed}.jsonl"
    path.write_bytes(b"".join(out))
    return path


def _outcome(fn: Any) -> Any:
    """What a call gives: its value, or the error it raises (type and message)."""
    try:
        value = fn()
    except (LogError, IndexError) as exc:
        return type(exc).__name__, str(exc)
    return bytes(value) if isinstance(value, memoryview) else value


def _open(cls: type, path: Path) -> tuple[Any, list[TornTail]]:
    torn: list[TornTail] = []
    return cls(path, on_torn=torn.append), torn


@pytest.mark.parametrize("seed", SEEDS)
def test_log_events_read_what_the_whole_bytes_read(tmp_path: Path, seed: int) -> None:
    path = _generated(tmp_path, seed)
    old, old_torn = _open(OldLogEvents, path)
    new, new_torn = _open(LogEvents, path)
    assert new_torn == old_torn and len(new) == len(old)
    rnd = random.Random(seed)
    n = len(old)
    positions = list(range(n))
    rnd.shuffle(positions)
    for i in positions:  # random order: blocks read, dropped and read again
        assert _outcome(lambda i=i: new.where(i)) == _outcome(lambda i=i: old.where(i))
        assert _outcome(lambda i=i: new.record(i)) == _outcome(lambda i=i: old.record(i))
        assert _outcome(lambda i=i: new[i]) == _outcome(lambda i=i: old[i])
    for _ in range(30):
        lo = rnd.randrange(n + 1)
        hi = rnd.randrange(lo, n + 1)
        assert _outcome(lambda lo=lo, hi=hi: new.span(lo, hi)) == \
            _outcome(lambda lo=lo, hi=hi: tuple(bytes(x) if isinstance(x, memoryview) else x
                                                for x in old.span(lo, hi)))
        batch = rnd.choice([1, 7, STRIDE, 8192])
        assert _outcome(lambda lo=lo, hi=hi, b=batch: list(new.records(lo, hi, b))) == \
            _outcome(lambda lo=lo, hi=hi, b=batch: list(old.records(lo, hi, b)))
        assert _outcome(lambda lo=lo, hi=hi: list(new.rows(lo, hi))) == \
            _outcome(lambda lo=lo, hi=hi: list(old.rows(lo, hi)))
    assert _outcome(lambda: new[-1] if n else None) == _outcome(lambda: old[-1] if n else None)


def test_a_log_rewritten_after_it_was_opened_is_refused_not_misread(tmp_path: Path) -> None:
    path = write_long_session(tmp_path, "s", 3 * STRIDE)
    events = LogEvents(path)
    first = events[0]
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join([lines[0], b"\n", *lines[1:]]))  # every later offset moves by one
    assert events[0] == first  # the block read before is kept
    with pytest.raises(LogError, match=rf"{path.name}:{STRIDE + 1}: changed since it was opened"):
        events[STRIDE + 5]


def test_lines_appended_after_opening_are_not_part_of_it(tmp_path: Path) -> None:
    path = write_long_session(tmp_path, "s", STRIDE + 3)
    events = LogEvents(path)
    with path.open("ab") as f:
        f.write(path.read_bytes().splitlines(keepends=True)[-1])
    assert len(events) == STRIDE + 3 and events[-1].seq == STRIDE + 3
    assert len(list(events.records())) == STRIDE + 3


@pytest.mark.parametrize("n", [STRIDE - 1, STRIDE, 2 * STRIDE])
def test_a_torn_line_at_a_block_start_is_set_aside(tmp_path: Path, n: int) -> None:
    path = write_long_session(tmp_path, "s", n)
    with path.open("ab") as f:
        f.write(b'{"id": "half')
    old, old_torn = _open(OldLogEvents, path)
    new, new_torn = _open(LogEvents, path)
    assert new_torn == old_torn and len(old_torn) == 1 and len(new) == len(old) == n
    assert list(new) == list(old) and list(new.records()) == list(old.records())


HOOKS = ["PreToolUse", "PostToolUse", "SkillStart", "Stop", "WorkflowStart", "PhaseAdvance"]


def _event_log(tmp: Path, seed: int, n: int, many_types: bool = False) -> Path:
    """A log of n random events crossing every part of the fold: hook decisions of several
    hooks, tool calls, reports whose ids repeat, amendments of the latest and of older
    reports, L8 cycles, failures of any layer, closes, usage; `many_types`: 300 more types."""
    rnd = random.Random(seed)
    reports: list[str] = []
    lines = []
    for i in range(n):
        eid, payload, actor = f"e{i}", {}, rnd.choice(["lead", "worker", "reviewer", "hook:x", "system"])
        t = rnd.choice(["hook.fired"] * 4 + ["tool.invoke", "tool.result", "worker.report", "event.amended",
                        "workflow.started", "workflow.phase_advanced", "workflow.policy_gated",
                        "workflow.completed", "domain.error", "schema.violation", "session.close",
                        "agent.transition", "llm.response", "skill.invoke", "human.escalation",
                        "llm.request", "skill.complete"])
        if many_types and rnd.random() < 0.5:
            t = f"x{rnd.randrange(300)}.made_up"
        if t == "hook.fired":
            payload = {"hook": rnd.choice(HOOKS), "handler": f"h{rnd.randrange(3)}",
                       "decision": rnd.choice(["allow", "deny"]), "reason": "r" * rnd.randrange(40)}
        elif t == "tool.invoke":
            payload = {"id": f"t{i}", "name": rnd.choice(["read_file", "echo"]), "args": {"n": i}}
        elif t == "worker.report":
            if reports and rnd.random() < 0.4:
                eid = rnd.choice(reports)  # an id reported before
            reports.append(eid)
            payload = {"output": f"out {i}"}
        elif t == "event.amended" and reports:
            payload = {"target_id": rnd.choice([reports[-1], rnd.choice(reports), "nothing"]),
                       "field": rnd.choice(["output", "output", "other"]), "value": f"amended {i}"}
        elif t.startswith("workflow."):
            payload = {"cycle_id": "c", "mode": "auto", "entry_phase": rnd.choice(["a", None]),
                       "from_phase": rnd.choice(["a", "b", None]), "to_phase": rnd.choice(["b", "c"]),
                       "verdict": "done", "reason": "ok"}
        elif t == "domain.error":
            payload = {"code": "X", "layer": rnd.choice(["L1", "L2", "L5", "L7"]), "message": "m"}
        elif t == "schema.violation":
            payload = {"schema_id": "s", "where": "w", "violations": [{"path": "/a", "message": "bad"}]}
        elif t == "session.close":
            payload = {"ok": rnd.random() < 0.5, "reason": "done"}
        elif t == "agent.transition":
            payload = {"to": rnd.choice(["PLAN", "WORK", "REVIEW", "REWORK", "DONE"])}
        elif t == "llm.response":
            payload = {"usage": {"input_tokens": rnd.randrange(99), "output_tokens": 3, "cost_usd": 0.0001}}
        elif t == "skill.invoke":
            payload = {"skill": rnd.choice(["greet", "note"])}
        if rnd.random() < 0.02:
            payload = rnd.choice([None, [1, 2], "text"])  # a payload that is not an object
        lines.append({"id": eid, "session_id": "s", "ts": "2026-01-01T00:00:00Z", "type": t,
                      "actor": actor, "payload": payload, "schema_version": "v1", "parent_id": None,
                      "seq": i + 1})
    path = tmp / f"events{seed}.jsonl"
    path.write_bytes(b"".join(orjson.dumps(d) + b"\n" for d in lines))
    return path


@pytest.mark.parametrize("seed", range(12))
def test_the_bounded_index_answers_what_the_full_fold_answered(tmp_path: Path, seed: int) -> None:
    rnd = random.Random(seed)
    every = rnd.choice([1, 5, 64, CHECKPOINT_EVERY])
    path = _event_log(tmp_path, seed, 1500 if seed == 11 else rnd.randint(1, 900), many_types=seed == 11)
    old, new = OldReplayIndex(OldLogEvents(path), every=every), ReplayIndex(LogEvents(path), every=every)
    n = len(old)
    assert len(new) == n
    if seed == 11:
        assert isinstance(new._codes, array)  # past 255 codes: two bytes each
    order = list(range(n + 1))
    rnd.shuffle(order)
    for k in order[:150] + list(range(min(n, 40) + 1)):
        assert new.snapshot(k) == old.snapshot(k), k
        shown = new.view(k)
        assert shown == old.snapshot(k), k
        assert snapshot_rows(shown, compact=True) == snapshot_rows(old.snapshot(k), compact=True)
        if k:
            assert diff_snapshots(new.view(k - 1), new.view(k)) == \
                diff_snapshots(old.snapshot(k - 1), old.snapshot(k))
        assert list(new.layer_counts(k).items()) == list(old.layer_counts(k).items())
    for i in rnd.sample(range(n), min(n, 200)):
        assert (new.type(i), new.layer(i)) == (old.type(i), old.layer(i))
        for hook in HOOKS:
            assert new.hook_run(i, hook) == old.hook_run(i, hook), (i, hook)


def test_snapshot_lists_read_from_the_log_are_the_folds_lists(tmp_path: Path) -> None:
    path = _event_log(tmp_path, 99, 700)
    index = ReplayIndex(LogEvents(path))
    full = replay(read_log(path))
    view = index.view(len(index))
    assert len(view.hook_decisions) == len(full.hook_decisions) > 100
    assert view.hook_decisions[5] == full.hook_decisions[5]
    assert view.hook_decisions[-1] == full.hook_decisions[-1]
    assert view.hook_decisions[3:6] == full.hook_decisions[3:6] and list(view.errors) == list(full.errors)
    assert json_head(view.hook_decisions) == json_head(full.hook_decisions)
    assert index.snapshot(len(index)).to_dict() == full.to_dict()


_PEAKS = peak_script("from agentos_kernel.jupyter.widgets.stepper import LayerStepper, ReplayScrubber", """\
for n in sizes:
    write_long_session(ws + "/sessions", f"s{n}", n)
LayerStepper(f"s{sizes[0]}", workspace=ws), ReplayScrubber(f"s{sizes[0]}", workspace=ws)  # warm
tracemalloc.start()
for n in sizes:
    for cls in (LayerStepper, ReplayScrubber):
        gc.collect()
        tracemalloc.reset_peak()
        before = tracemalloc.get_traced_memory()[0]  # (ipywidgets keeps every widget made)
        w = cls(f"s{n}", workspace=ws)
        w.go(n // 2)
        print(cls.__name__, n, (tracemalloc.get_traced_memory()[1] - before) / 1e6)
""")


def test_opening_the_widgets_keeps_memory_flat_in_the_log(tmp_path: Path) -> None:
    """Peak traced memory of opening a LayerStepper and a ReplayScrubber and stepping to the
    middle, in a fresh interpreter (other tests' threads allocate inside tracemalloc's window
    in the whole suite): a 40k-event log within 1 MB of a 4k-event one, both under 8 MB (the
    whole-bytes LogEvents and the full fold, tests/replay_oracle: 3.4 MB at 4k, 31.9 MB at
    40k)."""
    done = subprocess.run([sys.executable, "-c", _PEAKS, str(tmp_path / "ws"), "4000", "40000"],
                          capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    peaks: dict[tuple[str, int], float] = {}
    for line in done.stdout.split("\n"):
        if line:
            name, n, mb = line.split()
            peaks[name, int(n)] = float(mb)
    for name in ("LayerStepper", "ReplayScrubber"):
        small, big = peaks[name, 4000], peaks[name, 40000]
        assert big < 8.0, f"{name}: {big:.1f} MB traced at 40k events"
        assert big - small < 1.0, f"{name}: {small:.2f} MB at 4k, {big:.2f} MB at 40k"


def test_the_cyclic_collector_is_back_on_after_the_pass_even_when_it_fails(tmp_path: Path) -> None:
    import gc

    path = _event_log(tmp_path, 3, 50)
    assert gc.isenabled()
    ReplayIndex(LogEvents(path))
    assert gc.isenabled()
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(path.read_bytes() + b"{not json\n")
    with pytest.raises(LogError, match=r"bad\.jsonl:51: -: not JSON"):
        ReplayIndex(LogEvents(bad))
    assert gc.isenabled()
    gc.disable()
    try:
        ReplayIndex(LogEvents(path))
        assert not gc.isenabled()  # left as the caller had it
    finally:
        gc.enable()


def test_two_lines_that_are_json_only_when_joined_are_refused(tmp_path: Path) -> None:
    """Line k opens a string its next line closes, and that line holds a second event: joined
    with a comma they parse as two events for two lines, though line k alone is no JSON. A
    batch of lines is parsed line by line, so this is the LogError naming line k, not two
    events that are not in the log."""
    log = write_long_session(tmp_path, "joined", 3 * ROWS_BATCH)
    lines = log.read_bytes().splitlines(keepends=True)
    k = ROWS_BATCH + 7
    head = lines[k].split(b'"type":"', 1)[0]  # `type` is the last key of a canonical line
    lines[k] = head + b'"type":"x\n'  # the string runs on into the next line ...
    lines[k + 1] = b'y"},' + lines[k + 1]  # ... which closes it and holds the next event
    log.write_bytes(b"".join(lines))
    joined = orjson.loads(b"[" + lines[k].rstrip(b"\n") + b"," + lines[k + 1].rstrip(b"\n") + b"]")
    assert len(joined) == 2, "the two lines parse as two events once joined"
    events = LogEvents(log)
    with pytest.raises(LogError, match=rf":{k + 1}: -: not JSON"):
        list(events.rows())
    with pytest.raises(LogError, match=rf":{k + 1}: -: not JSON"):
        list(events.records())

"""Crash safety: a writer SIGKILLed at random points while appending leaves a log that loads.

Each run starts tests/crash_writer.py (a new session in one shared workspace, appended
through the real SessionLog / JsonlEventStore), waits until it begins a chosen append, waits
a random moment more and kills it with SIGKILL. Then: every complete line is intact and
chained (verify finds no problem), a torn final line is reported and set aside by every
reader, nothing the child reported as appended is missing, and the next child (a new session
in the same workspace), a new request and a `rerun` of a complete session still work.

20 runs by default (seeded); AGENTOS_STRESS=1 runs 500 and prints the tally.
"""

from __future__ import annotations

import os
import random
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from agentos_kernel import Runtime
from agentos_kernel.runs.rerun import rerun
from agentos_kernel.store.events import TornTail, read_log
from agentos_kernel.store.integrity import verify_log
from agentos_kernel.store.replay.fold import replay_path

from .helpers import CANONICAL, Run, RunRequest

RUNS = 500 if os.environ.get("AGENTOS_STRESS") == "1" else 20
WRITER = Path(__file__).with_name("crash_writer.py")


@dataclass(frozen=True)
class Kill:
    """What the child said before it died."""

    session_id: str
    started: frozenset[int]
    """Seqs whose append had begun (`> N`)."""
    appended: frozenset[int]
    """Seqs whose append had returned (`= N`)."""


def kill_writer(workspace: Path, seed: int, mode: str, rng: random.Random) -> Kill:
    """Start a writer, let it begin append number `target`, wait a random moment, SIGKILL it."""
    target = rng.randrange(2, 16)
    # `log` appends spend most of their time before the write (redaction, schema check);
    # `store` appends mostly write, so a short wait lands inside write() often.
    delay = rng.uniform(0, 0.02 if mode == "log" else 0.003)
    child = subprocess.Popen([sys.executable, str(WRITER), str(workspace), str(seed), mode],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=workspace)
    try:
        assert child.stdout is not None
        said = [child.stdout.readline().decode()]
        while said[-1] and said[-1] != f"> {target}\n":
            said.append(child.stdout.readline().decode())
        assert said[-1], f"the writer ended early: {child.stderr.read().decode() if child.stderr else ''}"
        time.sleep(delay)
        child.kill()  # SIGKILL: no handler, no flush, no close
        rest = child.stdout.read().decode()
    finally:
        child.kill()
        child.wait()
    assert child.returncode == -9
    lines = [*said[1:], *rest.splitlines(keepends=True)]
    seqs = {tag: frozenset(int(x[2:]) for x in lines if x.startswith(tag)) for tag in ("> ", "= ")}
    return Kill(said[0].strip(), seqs["> "], seqs["= "])


@dataclass
class Tally:
    runs: int = 0
    torn: int = 0
    events: int = 0
    lost: int = 0


def check_killed_log(path: Path, kill: Kill, tally: Tally) -> None:
    report = verify_log(path)
    assert report.problem is None, report.verdict()  # every complete line intact and chained
    torn: list[TornTail] = []
    seqs = [e.seq for e in read_log(path, on_torn=torn.append)]
    complete = len(seqs)
    assert seqs == list(range(1, complete + 1))
    tally.lost += len(kill.appended - set(seqs))
    assert kill.appended <= set(seqs), "an event whose append returned is missing"
    assert complete <= max(kill.started), "an event that was never begun is in the log"
    if report.torn is None:
        assert torn == [] and path.read_bytes().endswith(b"\n")
    else:
        tally.torn += 1
        assert torn == [report.torn] and report.torn.line == complete + 1
        assert report.torn.offset + report.torn.size == path.stat().st_size
        assert complete + 1 in kill.started - kill.appended  # the append in flight, and only it
    assert replay_path(path, on_torn=lambda _t: None).events == complete
    tally.events += complete


@pytest.fixture
def complete_run(run_request: RunRequest) -> Run:
    run = run_request()
    assert run.ok
    return run


def test_sigkill_while_appending_loses_nothing_complete(workspace: Path, complete_run: Run) -> None:
    rng = random.Random(1309)
    tally = Tally()
    for run in range(RUNS):
        kill = kill_writer(workspace, run, ("log", "store")[run % 2], rng)
        check_killed_log(workspace / "sessions" / kill.session_id / ".events.jsonl", kill, tally)
        tally.runs += 1
    print(f"\ncrash suite: {tally.runs} SIGKILLs, {tally.events} complete events checked, "
          f"{tally.torn} torn tails found and set aside, {tally.lost} events lost")
    assert tally.lost == 0
    # After the crashes: a new request runs and verifies, and a complete session re-runs.
    rt = Runtime.from_workspace(workspace)
    result = rt.handle_user_request(CANONICAL)
    assert result.value.output == "Hello, Ada!"
    assert verify_log(rt.store.path(result.value.session_id)).ok
    report = rerun(rt, complete_run.session_id).value
    assert report.verified, report.verdict()

"""What each fsync policy costs (run by hand, never in the test suite).

    python bench/bench_durability.py [--quick] [--dir DIR]

On the filesystem of DIR (default: the system temp directory), measures:
- a bare fsync of a log file and of a directory;
- the per-append cost of a checked, chained SessionLog.append in sessions of 32 events (the
  canonical request's length), claim and close included, for each policy;
- the canonical request ("hello, greet Ada", scripted) end to end under each policy;
- the writer lock on its own (take + release in a session directory that has its log).
Prints Markdown rows for bench/RESULTS.md.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import platform
import statistics
import tempfile
import time
from pathlib import Path

import yaml

from agentos_kernel import Runtime
from agentos_kernel.cli.main import main as cli_main
from agentos_kernel.clock import CounterIds, LogicalClock
from agentos_kernel.schemas.registry import SchemaRegistry
from agentos_kernel.store.durability import Durability
from agentos_kernel.store.jsonl import JsonlEventStore
from agentos_kernel.store.lock import SessionLock
from agentos_kernel.store.recorder import SessionLog
from agentos_kernel.workspace import reference_dir

POLICIES = (Durability("never"), Durability("close"), Durability("every_n", 8), Durability("always"))
EVENTS = 32  # the canonical request's log length (sessions/example/.events.jsonl)


def label(d: Durability) -> str:
    return f"every_n ({d.every})" if d.fsync == "every_n" else d.fsync


def bare_fsync(tmp: Path, n: int) -> tuple[float, float]:
    """Median µs of fsync on a file just appended to, and on a directory."""
    files, dirs = [], []
    with (tmp / "bare.jsonl").open("ab") as f:
        fd = os.open(tmp, os.O_RDONLY | os.O_DIRECTORY)
        for _ in range(n):
            f.write(b'{"type":"tool.invoke","payload":{"name":"echo"}}\n')
            f.flush()
            t = time.perf_counter()
            os.fsync(f.fileno())
            files.append(time.perf_counter() - t)
            t = time.perf_counter()
            os.fsync(fd)
            dirs.append(time.perf_counter() - t)
        os.close(fd)
    return statistics.median(files) * 1e6, statistics.median(dirs) * 1e6


class FsyncClock:
    """Wraps os.fsync to add up the time spent in it (the policy's direct cost)."""

    def __init__(self) -> None:
        self.real, self.spent = os.fsync, 0.0

    def __call__(self, fd: int) -> None:
        t = time.perf_counter()
        self.real(fd)
        self.spent += time.perf_counter() - t


def per_append(tmp: Path, sessions: int) -> dict[str, float]:
    """Median µs per event over sessions of EVENTS events each (claim to close), the
    policies taking turns session by session so that they share the machine's noise."""
    schemas = SchemaRegistry.load(reference_dir() / "schemas")
    stores = {label(p): JsonlEventStore(tmp / f"append-{label(p)}", p) for p in POLICIES}
    payload = {"id": "t1", "name": "echo", "args": {"text": "Hello, Ada!"}}
    runs: dict[str, list[float]] = {name: [] for name in stores}
    for i in range(sessions):
        for name, store in stores.items():
            sid = f"b{i}"
            t = time.perf_counter()
            store.create(sid)
            log = SessionLog(store, schemas, LogicalClock(), CounterIds(), sid)
            for _ in range(EVENTS):
                log.append("tool.invoke", "worker", payload)
            log.close()
            runs[name].append((time.perf_counter() - t) / EVENTS)
    return {name: statistics.median(r) * 1e6 for name, r in runs.items()}


def _workspace(tmp: Path, durability: Durability) -> Runtime:
    ws = tmp / f"ws-{label(durability)}"
    with contextlib.redirect_stdout(io.StringIO()):
        cli_main(["init", str(ws)])
    doc = yaml.safe_load((ws / "agentos.yaml").read_text())
    doc["profiles"]["scripted"]["fsync"] = durability.fsync
    if durability.fsync == "every_n":
        doc["profiles"]["scripted"]["fsync_every"] = durability.every
    (ws / "agentos.yaml").write_text(yaml.safe_dump(doc))
    rt = Runtime.from_workspace(ws)
    rt.handle_user_request("hello, greet Ada")  # warm the validators
    return rt


def requests(tmp: Path, n: int) -> dict[str, tuple[float, float]]:
    """Per policy: median ms of the canonical request, and median ms of it spent in fsync
    (the policies take turns, request by request)."""
    runtimes = {label(p): _workspace(tmp, p) for p in POLICIES}
    spy = FsyncClock()
    os.fsync = spy
    times: dict[str, list[tuple[float, float]]] = {name: [] for name in runtimes}
    try:
        for _ in range(n):
            for name, rt in runtimes.items():
                spy.spent = 0.0
                t = time.perf_counter()
                rt.handle_user_request("hello, greet Ada")
                times[name].append((time.perf_counter() - t, spy.spent))
    finally:
        os.fsync = spy.real
    return {name: (statistics.median(a for a, _ in r) * 1000, statistics.median(b for _, b in r) * 1000)
            for name, r in times.items()}


def lock_us(tmp: Path, n: int) -> float:
    """µs to take and release one session's writer lock, in a session directory that already
    holds its log (as every real session's does): the lock's own cost per session."""
    dirs = [tmp / "locks" / f"c{i}" for i in range(n)]
    for d in dirs:
        d.mkdir(parents=True)
        (d / ".events.jsonl").write_bytes(b"{}\n")
    t = time.perf_counter()
    for i, d in enumerate(dirs):
        SessionLock.acquire(d, f"c{i}").release()
    return (time.perf_counter() - t) / n * 1e6


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer iterations")
    ap.add_argument("--dir", type=Path, default=None, help="where to write (its filesystem is measured)")
    args = ap.parse_args()
    k = 10 if args.quick else 1
    with tempfile.TemporaryDirectory(dir=args.dir) as d:
        tmp = Path(d)
        f_us, d_us = bare_fsync(tmp, 500 // k)
        appends = per_append(tmp, 200 // k)
        reqs = requests(tmp, 200 // k)
        claim = lock_us(tmp, 2000 // k)
    where = f"{platform.python_version()}, {os.cpu_count()} cores, {args.dir or tempfile.gettempdir()}"
    print(f"bare fsync: file {f_us:.0f} µs, directory {d_us:.0f} µs; the writer lock "
          f"(take + release, per session) {claim:.0f} µs  <!-- {where} -->\n")
    print("| fsync | per append (32-event session) | canonical request (of which fsync) | fsyncs per "
          "32-event session | a power cut loses |")
    print("|---|---|---|---|---|")
    base = reqs["never"][0]
    losses = {"never": "what the OS had not yet written back (typically up to ~30 s)",
              "close": "a still-running session (never a closed one)",
              "every_n (8)": "at most the last 7 events of a running session",
              "always": "nothing appended"}
    syncs = {"never": "0", "close": "1 + 2 directories (at close)", "every_n (8)": "5 + 2 directories",
             "always": "32 + 2 directories"}
    for name, us in appends.items():
        ms, in_fsync = reqs[name]
        print(f"| {name} | {us:.1f} µs | {ms:.2f} ms ({ms / base:.2f}x; fsync {in_fsync:.2f} ms) "
              f"| {syncs[name]} | {losses[name]} |")


if __name__ == "__main__":
    main()

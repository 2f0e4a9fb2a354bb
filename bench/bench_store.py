"""A class appending at once: PostgreSQL event store vs JSONL (issue 14; run by hand, never in
the test suite).

    python bench/bench_store.py [--students 200] [--procs 4] [--sessions 3] [--quick]

Starts a throwaway PostgreSQL server (tests/pg_server.py, fsync on: commits are durable, as in a
class), migrates it and makes one login role per student. Each simulated student is a thread
with its own role and its own PostgresEventStore (its pool of one connection plus the claim
connection, as one student's kernel on a hub would have), spread over --procs processes;
each writes --sessions sessions of the reference trace's 32 events (sessions/example) as fast
as it can. Measures events/s over the whole run, p50/p99 of one `append` (one committed
transaction), and counts every row afterwards: 0 lost. Then the same students on
JsonlEventStore in a temp folder (fsync policy `close`, the default). Prints Markdown rows
for bench/RESULTS.md.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import platform
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

import orjson

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from agentos_kernel.store.events import Event  # noqa: E402
from agentos_kernel.store.jsonl import JsonlEventStore  # noqa: E402

TRACE = [orjson.loads(line) for line in (REPO / "sessions/example/.events.jsonl").read_bytes().splitlines()]


def events_of(sid: str) -> list[Event]:
    """The reference trace's events, as session `sid`."""
    return [Event.from_dict({**d, "session_id": sid}) for d in TRACE]


def student(kind: str, target: str, name: str, sessions: int, start: threading.Barrier,
            out: list[float]) -> None:
    """Write `sessions` sessions; each append's seconds go to `out`."""
    if kind.startswith("postgres"):
        from agentos_kernel.store.durability import Durability
        from agentos_kernel.store.postgres.store import PostgresEventStore
        store = PostgresEventStore(target, pool_max=1,
                                   durability=Durability("never" if kind.endswith("never") else "close"))
    else:
        store = JsonlEventStore(Path(target) / name)
    batches = [events_of(f"{name}-{k}") for k in range(sessions)]
    start.wait()
    for evs in batches:
        sid = evs[0].session_id
        store.create(sid)
        for ev in evs:
            t = time.perf_counter()
            store.append(ev)
            out.append(time.perf_counter() - t)
        store.close(sid)


def proc(kind: str, targets: list[tuple[str, str]], sessions: int, ready: mp.Barrier, q: mp.Queue) -> None:
    """One process of students (threads); puts its latencies on `q`."""
    lat: list[list[float]] = [[] for _ in targets]
    start = threading.Barrier(len(targets) + 1)
    threads = [threading.Thread(target=student, args=(kind, t, n, sessions, start, lat[i]))
               for i, (t, n) in enumerate(targets)]
    for th in threads:
        th.start()
    ready.wait()
    start.wait()
    for th in threads:
        th.join()
    q.put([x for xs in lat for x in xs])


def run(kind: str, targets: list[tuple[str, str]], procs: int, sessions: int) -> tuple[float, list[float]]:
    """Wall seconds and every append latency, all students at once."""
    ctx = mp.get_context("fork")
    ready, q = ctx.Barrier(procs + 1), ctx.Queue()
    chunks = [targets[i::procs] for i in range(procs)]
    ps = [ctx.Process(target=proc, args=(kind, c, sessions, ready, q)) for c in chunks]
    for p in ps:
        p.start()
    ready.wait()  # every process has its threads up (stores made, events built)
    t0 = time.perf_counter()
    lat = [x for _ in ps for x in q.get()]
    wall = time.perf_counter() - t0
    for p in ps:
        p.join()
        assert p.exitcode == 0, f"a student process failed ({p.exitcode})"
    return wall, lat


def row(kind: str, n_students: int, wall: float, lat: list[float], lost: int) -> str:
    q = statistics.quantiles(lat, n=100)
    return (f"| {kind} | {n_students} | {len(lat)} | {len(lat) / wall:,.0f} | {q[49] * 1e3:.3f} ms | "
            f"{q[98] * 1e3:.3f} ms | {lost} |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--students", type=int, default=200)
    ap.add_argument("--procs", type=int, default=4)
    ap.add_argument("--sessions", type=int, default=3, help="sessions per student (32 events each)")
    ap.add_argument("--quick", action="store_true", help="20 students, 1 session each")
    args = ap.parse_args()
    if args.quick:
        args.students, args.sessions = 20, 1
    import psycopg

    from agentos_kernel.store.postgres.roles import add_role
    from agentos_kernel.store.postgres.schema import migrate
    from tests.pg_server import PgServer

    expected = args.students * args.sessions * len(TRACE)
    print(f"# {args.students} students x {args.sessions} sessions x {len(TRACE)} events = {expected}; "
          f"{args.procs} processes; {os.cpu_count()} cores; Python {platform.python_version()}",
          file=sys.stderr)
    server = PgServer.start(max_connections=2 * args.students + 20, fsync=True)
    try:
        with psycopg.connect(server.admin_dsn, autocommit=True) as conn:
            conn.execute("CREATE DATABASE bench")
        admin = server.dsn("agentos_admin", server.password, "bench")
        migrate(admin)
        names = [f"student{i:03d}" for i in range(args.students)]
        for n in names:
            add_role(admin, n, "pw-" + n)
        print("| store | students | events | events/s | p50 append | p99 append | lost |")
        print("|---|---|---|---|---|---|---|")
        for kind, label, rnd in (("postgres", "postgres (synchronous commit, 1 tx per append)", "a"),
                                 ("postgres-never", "postgres, profile fsync: never (synchronous_commit "
                                                    "off)", "b")):
            wall, lat = run(kind, [(server.dsn(n, "pw-" + n, "bench"), f"{n}{rnd}") for n in names],
                            args.procs, args.sessions)
            with psycopg.connect(admin) as conn:
                stored = conn.execute("SELECT count(*) FROM agentos.events WHERE session_id LIKE %s",
                                      (f"%{rnd}-%",)).fetchone()[0]
                gaps = conn.execute("SELECT count(*) FROM (SELECT owner, session_id FROM agentos.events "
                                    "GROUP BY 1, 2 HAVING max(pos) <> count(*)) g").fetchone()[0]
            assert gaps == 0, f"{gaps} sessions with a gap in their positions"
            print(row(label, args.students, wall, lat, expected - stored), flush=True)
    finally:
        server.stop()
    with tempfile.TemporaryDirectory(prefix="agentos-bench-jsonl-") as tmp:
        wall, lat = run("jsonl", [(tmp, n) for n in names], args.procs, args.sessions)
        stored = sum(len(p.read_bytes().splitlines()) for p in Path(tmp).glob("*/*/.events.jsonl"))
        print(row("jsonl (fsync: close, the default)", args.students, wall, lat, expected - stored))


if __name__ == "__main__":
    main()

"""Benchmarks for the performance budget in DESIGN.md (run by hand, never in the test suite).

    python bench/bench_runtime.py [--quick]

Measures: the canonical request on the scripted provider; one checked, chained event
append against a bare json.dumps + write + flush; replay throughput and peak memory on a
long log; the cold import time of agentos_kernel.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

from agentos_kernel import Runtime
from agentos_kernel.cli.main import main as cli_main
from agentos_kernel.clock import CounterIds, LogicalClock
from agentos_kernel.schemas.registry import SchemaRegistry
from agentos_kernel.store.jsonl import JsonlEventStore
from agentos_kernel.store.recorder import SessionLog
from agentos_kernel.store.replay.fold import replay_path
from agentos_kernel.workspace import reference_dir


def _median_ms(fn, n: int) -> float:
    times = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t) * 1000)
    return statistics.median(times)


def bench_request(tmp: Path, n: int) -> float:
    ws = tmp / "ws"
    cli_main(["init", str(ws)])
    rt = Runtime.from_workspace(ws)
    rt.handle_user_request("hello, greet Ada")  # warm caches (validators compile on first use)
    return _median_ms(lambda: rt.handle_user_request("hello, greet Ada"), n)


def bench_append(tmp: Path, n: int) -> tuple[float, float]:
    schemas = SchemaRegistry.load(reference_dir() / "schemas")
    store = JsonlEventStore(tmp / "sessions")
    log = SessionLog(store, schemas, LogicalClock(), CounterIds(), "bench")
    payload = {"id": "t1", "name": "echo", "args": {"text": "Hello, Ada!"}}
    t = time.perf_counter()
    for _ in range(n):
        log.append("tool.invoke", "worker", payload)
    ours = (time.perf_counter() - t) / n * 1e6
    store.close("bench")
    with (tmp / "bare.jsonl").open("a", encoding="utf-8") as f:
        t = time.perf_counter()
        for i in range(n):
            f.write(json.dumps({"id": str(i), "type": "tool.invoke", "payload": payload}) + "\n")
            f.flush()
        bare = (time.perf_counter() - t) / n * 1e6
    return ours, bare


def bench_replay(tmp: Path, n: int) -> tuple[float, float]:
    schemas = SchemaRegistry.load(reference_dir() / "schemas")
    store = JsonlEventStore(tmp / "sessions")
    log = SessionLog(store, schemas, LogicalClock(), CounterIds(), "long")
    for i in range(n):
        log.append("llm.response", "worker", {
            "text": "{}", "tool_calls": [], "finish_reason": "stop", "model": "scripted-1",
            "usage": {"input_tokens": 10 + i % 7, "output_tokens": 3, "cost_usd": 0.0001},
            "schema_version": "v1", "role": "worker", "call_id": f"c{i}"})
    store.close("long")
    path = store.path("long")
    t = time.perf_counter()
    snap = replay_path(path)
    elapsed = time.perf_counter() - t
    assert snap.events == n
    # Memory is measured in a second pass: tracemalloc slows the fold several times over.
    tracemalloc.start()
    replay_path(path)
    peak = tracemalloc.get_traced_memory()[1] / 1e6
    tracemalloc.stop()
    return n / elapsed, peak


def bench_import() -> float:
    code = "import time; t=time.perf_counter(); import agentos_kernel; print(time.perf_counter()-t)"
    runs = [float(subprocess.check_output([sys.executable, "-c", code], text=True)) for _ in range(5)]
    return statistics.median(runs) * 1000


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer iterations")
    args = ap.parse_args()
    k = 10 if args.quick else 1
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        req = bench_request(tmp, 200 // k)
        ours, bare = bench_append(tmp, 20000 // k)
        rate, peak = bench_replay(tmp, 200000 // k)
    imp = bench_import()
    print(f"canonical request (scripted, deterministic): {req:8.2f} ms  (budget ≈ 2 ms)")
    print(f"event append, checked + chained + flushed:   {ours:8.1f} µs  "
          f"vs bare dumps+write+flush {bare:.1f} µs = {ours / bare:.1f}x  (budget ≤ 3x)")
    print(f"replay throughput:                           {rate:8.0f} events/s, peak {peak:.2f} MB "
          f"(budget ≥ 200k/s, flat memory)")
    print(f"cold `import agentos_kernel`:                {imp:8.1f} ms")


if __name__ == "__main__":
    main()

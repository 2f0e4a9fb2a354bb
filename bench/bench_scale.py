"""Class-scale benchmarks for issue 12 (run by hand, never in the test suite).

    python bench/bench_scale.py [--quick] [--only widgets,agent,import,sessions,l8]

Prints Markdown rows for bench/RESULTS.md, each with the goal beside it. Every figure is a
median of interleaved runs in one process (the machine's 2 cores are shared), except the
import times, which need a fresh interpreter each (subprocesses, interleaved).

- widgets: LayerStepper / ReplayScrubber on a session of N events (the reference trace's
  request repeated, `agentos_kernel.testing.write_long_session`): build time, peak traced
  memory, and the time of a step at random positions and of Next.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import random
import statistics
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path

from agentos_kernel.cli import main as cli_main
from agentos_kernel.testing import write_long_session

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))


def init_workspace(root: Path) -> Path:
    with contextlib.redirect_stdout(io.StringIO()):
        assert cli_main(["init", str(root)]) == 0
    return root


def timed(fn: Callable[[], object]) -> float:
    """Seconds one call of fn takes."""
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def peak_mb(fn: Callable[[], object]) -> float:
    """Peak traced memory of one call (a separate pass: tracemalloc slows code down)."""
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1] / 1e6
    finally:
        tracemalloc.stop()


def bench_widgets(tmp: Path, sizes: list[int], repeat: int) -> list[str]:
    from agentos_kernel.jupyter.widgets import LayerStepper, ReplayScrubber

    ws = init_workspace(tmp / "ws-widgets")
    rows = []
    for n in sizes:
        sid = f"long{n}"
        write_long_session(ws / "sessions", sid, n)
        for cls in (LayerStepper, ReplayScrubber):
            build = statistics.median(timed(lambda c=cls: c(sid, workspace=ws)) for _ in range(repeat))
            peak = peak_mb(lambda c=cls: c(sid, workspace=ws))
            w = cls(sid, workspace=ws)
            jumps = []
            for k in random.Random(n).sample(range(1, n), 60):
                jumps.append(timed(lambda k=k: w.go(k)) * 1000)
            w.go(n // 2)
            nexts = [timed(lambda: w.go(w.slider.value + 1)) * 1000 for _ in range(100)]
            rows.append(f"| {cls.__name__} | {n:,} | {build:.2f} s | {peak:.0f} MB | "
                        f"{statistics.median(jumps):.1f} / {max(jumps):.1f} ms | "
                        f"{statistics.median(nexts):.1f} ms | < 2 s, < 200 MB, step < 20 ms |")
    return rows


SECTIONS: dict[str, Callable[[Path, argparse.Namespace], list[str]]] = {
    "widgets": lambda tmp, a: bench_widgets(tmp, [10_000] if a.quick else [10_000, 100_000], 3),
}
HEADERS = {
    "widgets": "| widget | events | build (median) | peak traced | jump median / max | Next | goal |\n"
               "|---|---|---|---|---|---|---|",
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small sizes, fewer runs")
    ap.add_argument("--only", default=",".join(SECTIONS), help="comma-separated sections")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-scale-") as d:
        for name in args.only.split(","):
            print(f"\n{HEADERS[name]}")
            for row in SECTIONS[name](Path(d), args):
                print(row, flush=True)


if __name__ == "__main__":
    main()

"""The canonical request of two checkouts side by side, with the floor (run by hand, never in
the test suite): what a change to the hot path bought, measured so that a noisy machine
cancels out.

    git archive main | tar -x -C /tmp/main     # the checkout to compare against
    python bench/bench_versions.py /tmp/main [--rounds 30] [--calls 20]

Each checkout runs in a process of its own (`PYTHONPATH` = the checkout, its bench/
scripts), built once and warmed up; then in each round the processes take turns, the order
rotating, each timing `--calls` requests in a row (`Runtime.handle_user_request("hello,
greet Ada")`, `fsync: never`, as bench_floor.py builds it) and the floor (bench_floor.py's
`floor_writer`: the same 32 lines written by hand), wall time and CPU time (`thread_time`,
system calls included) per call. Printed: medians per contender and the per-round ratios
(min / median), with the load average before and after.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent

WORKER = r"""
import sys, tempfile, time
from pathlib import Path
sys.path.insert(0, "bench")
from bench_floor import floor_writer, request
from bench_peers import workspaces
tmp = Path(tempfile.mkdtemp(prefix="agentos-versions-"))
_, nosync = workspaces(tmp)
jobs = {"request": request(nosync), "floor": floor_writer(tmp / "floor")}
for _ in range(100):
    jobs["request"](); jobs["floor"]()
print("ready", flush=True)
for line in sys.stdin:
    name, n = line.split()
    job, n = jobs[name], int(n)
    cpu, wall = time.thread_time(), time.perf_counter()
    for _ in range(n):
        job()
    print(f"{(time.perf_counter() - wall) / n * 1e3} {(time.thread_time() - cpu) / n * 1e3}", flush=True)
"""


class Checkout:
    """One checkout's worker process."""

    def __init__(self, root: Path) -> None:
        self.root = root
        env = dict(os.environ, PYTHONPATH=str(root))
        self.proc = subprocess.Popen([sys.executable, "-c", WORKER], cwd=root, env=env, text=True,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.stdin, self.stdout = self.proc.stdin, self.proc.stdout
        if self.stdout.readline().strip() != "ready":
            raise SystemExit(f"{root}: the worker did not start (see its error above)")

    def time(self, job: str, calls: int) -> tuple[float, float]:
        """(wall ms, CPU ms) per call of `calls` calls of `job`."""
        self.stdin.write(f"{job} {calls}\n")
        self.stdin.flush()
        wall, cpu = self.stdout.readline().split()
        return float(wall), float(cpu)

    def close(self) -> None:
        self.stdin.close()
        self.proc.wait()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("base", type=Path, help="the checkout to compare against (e.g. main, extracted)")
    ap.add_argument("--rounds", type=int, default=30, help="interleaved rounds (default 30)")
    ap.add_argument("--calls", type=int, default=20, help="calls per contender per round (default 20)")
    args = ap.parse_args()
    load_before = Path("/proc/loadavg").read_text().split()[:3]
    base, this = Checkout(args.base.resolve()), Checkout(HERE.parent)
    contenders = {"base request": (base, "request"), "this request": (this, "request"),
                  "floor": (this, "floor")}
    times: dict[str, list[tuple[float, float]]] = {k: [] for k in contenders}
    try:
        for r in range(args.rounds):
            names = list(contenders)
            for name in names[r % 3:] + names[:r % 3]:
                checkout, job = contenders[name]
                times[name].append(checkout.time(job, args.calls))
    finally:
        base.close()
        this.close()
    load_after = Path("/proc/loadavg").read_text().split()[:3]
    print(f"{args.rounds} interleaved rounds of {args.calls} calls each; base {args.base}; load "
          f"average {' '.join(load_before)} before, {' '.join(load_after)} after.\n")
    print("| contender | wall ms per call (median) | CPU ms per call (median) |\n|---|---|---|")
    for name, ts in times.items():
        print(f"| {name} | {statistics.median(t[0] for t in ts):.3f} | "
              f"{statistics.median(t[1] for t in ts):.3f} |")
    print("\n| ratio (per round) | wall min | wall median | CPU min | CPU median |\n|---|---|---|---|---|")
    for top, bottom in (("this request", "base request"), ("base request", "floor"),
                        ("this request", "floor")):
        row = []
        for i in (0, 1):
            ratios = [a[i] / b[i] for a, b in zip(times[top], times[bottom], strict=True)]
            row += [f"{min(ratios):.2f}×", f"{statistics.median(ratios):.2f}×"]
        print(f"| {top} / {bottom} | {' | '.join(row)} |")


if __name__ == "__main__":
    main()

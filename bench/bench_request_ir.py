"""The canonical request at `fsync: never` and its hand-written floor, counted in CPU
instructions (valgrind's callgrind), for a machine too loaded for wall-clock figures (run by
hand, never in the test suite).

    python bench/bench_request_ir.py [--calls 10]

Each figure is the slope between two runs of a child interpreter under
`valgrind --tool=callgrind` (`PYTHONHASHSEED=0`), one making `--calls` calls and one four
times as many, so the interpreter's start, its imports and the warm-up cancel out:
instructions per call. The child builds the bench's workspace at `fsync: never`
(bench_peers.workspaces) and makes five warm calls first; mode `request` is
`Runtime.handle_user_request` (bench_floor's "request, fsync never"), mode `floor` is
bench_floor's `floor_writer` (the same 32 lines written by hand). Counts weigh every
instruction alike (a cache miss or a system call's kernel time counts nothing), so they rank
changes of Python code, not milliseconds. The child runs once outside valgrind first, so both
counted runs read the same bytecode caches. Needs `valgrind` on PATH.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

CHILD = """
import sys
sys.path.insert(0, sys.argv[1])
from pathlib import Path
from bench_peers import CANONICAL, workspaces
from bench_floor import floor_writer, request
mode, calls, tmp = sys.argv[2], int(sys.argv[3]), Path(sys.argv[4])
_, ws = workspaces(tmp)
run = request(ws) if mode == "request" else floor_writer(tmp / "floor")
for _ in range(5):
    run()
for _ in range(calls):
    run()
"""


def warm(mode: str) -> None:
    """Run the child once outside valgrind, so that both counted runs import from the same
    bytecode caches (else the first compiles what the second reads, and the slope is low)."""
    with tempfile.TemporaryDirectory(prefix="agentos-ir-") as tmp:
        subprocess.run([sys.executable, "-c", CHILD, str(Path(__file__).resolve().parent), mode,
                        "0", tmp], check=True, cwd=tmp, capture_output=True)


def instructions(mode: str, calls: int) -> int:
    """Instructions (callgrind's Ir) of one child interpreter making `calls` calls, in a
    folder of its own (not the checkout: `-c` puts the working directory first on sys.path,
    so PYTHONPATH picks the checkout counted)."""
    with tempfile.TemporaryDirectory(prefix="agentos-ir-") as tmp:
        argv = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable,
                "-c", CHILD, str(Path(__file__).resolve().parent), mode, str(calls), tmp]
        stderr = subprocess.run(argv, capture_output=True, text=True, check=True, cwd=tmp,
                                env={**os.environ, "PYTHONHASHSEED": "0"}).stderr
    counted = re.findall(r"Collected : (\d+)", stderr)
    if not counted:
        raise SystemExit(f"valgrind counted nothing:\n{stderr[-2000:]}")
    return int(counted[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=10, help="calls in the shorter run (default 10)")
    ap.add_argument("--mode", choices=("both", "request", "floor"), default="both",
                    help="what to count (default both)")
    args = ap.parse_args()
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not on PATH (apt-get install valgrind)")
    modes = ("request", "floor") if args.mode == "both" else (args.mode,)
    for m in modes:
        warm(m)
    per = {m: (instructions(m, 4 * args.calls) - instructions(m, args.calls)) / (3 * args.calls)
           for m in modes}
    print("| what | M instructions per call |\n|---|---|")
    for m in modes:
        print(f"| {m} | {per[m] / 1e6:.3f} |")
    if len(per) == 2:
        print(f"| request / floor | {per['request'] / per['floor']:.2f}× |")


if __name__ == "__main__":
    main()

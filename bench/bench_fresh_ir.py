"""A fresh kernel's first `%agent` and a warm one, counted in CPU instructions (valgrind's
callgrind), for a machine too loaded for wall-clock figures (run by hand, never in the
test suite).

    python bench/bench_fresh_ir.py [--calls 20]

Each figure is the slope between two runs of a child interpreter under
`valgrind --tool=callgrind` (`PYTHONHASHSEED=0`), one making `--calls` calls and one twice
as many, so the interpreter's start and its imports cancel out: instructions per call. The
child builds the bench's workspace at `fsync: never` (bench_peers.workspaces), makes five
warm calls, then in mode `fresh` each call is `jupyter.api.run_agent` after everything a
kernel keeps once it has read a workspace is forgotten (`runtime_cache.clear()`,
`schemas.loading.forget_loaded()`, `yamlload.forget_read()`: bench_floor's "%agent, fresh
kernel"), and in mode `warm` the same call on the cached Runtime. Counts are independent of
other load on the machine; they weigh every instruction alike (a cache miss costs nothing
here), so they rank changes, not milliseconds. Needs `valgrind` on PATH.
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
from agentos_kernel import yamlload
from agentos_kernel.jupyter import api, runtime_cache
from agentos_kernel.schemas import loading
mode, calls, tmp = sys.argv[2], int(sys.argv[3]), Path(sys.argv[4])
_, ws = workspaces(tmp)
for _ in range(5):
    api.run_agent(CANONICAL, workspace=ws)
for _ in range(calls):
    if mode == "fresh":
        runtime_cache.clear(); loading.forget_loaded(); yamlload.forget_read()
    assert api.run_agent(CANONICAL, workspace=ws).output == "Hello, Ada!"
"""


def instructions(mode: str, calls: int) -> int:
    """Instructions (callgrind's Ir) of one child interpreter making `calls` calls."""
    tmp = tempfile.mkdtemp(prefix="agentos-ir-")
    try:
        done = subprocess.run(
            ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable, "-c",
             CHILD, str(Path(__file__).resolve().parent), mode, str(calls), tmp],
            capture_output=True, text=True, check=True, env={**os.environ, "PYTHONHASHSEED": "0"},
            cwd=tmp)  # not the checkout: `-c` puts the working directory first on sys.path
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    found = re.search(r"Collected : (\d+)", done.stderr)
    if found is None:
        raise SystemExit(f"no instruction count in valgrind's output:\n{done.stderr[-2000:]}")
    return int(found.group(1))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=20, help="calls in the shorter run (default 20)")
    args = ap.parse_args()
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not on PATH (apt-get install valgrind)")
    per = {}
    for mode in ("fresh", "warm"):
        per[mode] = (instructions(mode, 2 * args.calls) - instructions(mode, args.calls)) / args.calls
    print(f"| %agent | instructions per call (millions) |\n|---|---|\n"
          f"| fresh kernel | {per['fresh'] / 1e6:.2f} |\n| warm | {per['warm'] / 1e6:.2f} |\n"
          f"| fresh / warm | {per['fresh'] / per['warm']:.2f}× |")


if __name__ == "__main__":
    main()

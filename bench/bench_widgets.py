"""The workbench's log widgets on long logs (issue 24: flat memory, <= 1.5x the fold), run by
hand, never in the test suite.

    python bench/bench_widgets.py [--sizes 10000,100000,1000000] [--rounds 5] [--before TREE]

On a session of N events (`write_long_session`: the reference trace's request repeated,
chained), each arm opens a widget as a notebook cell does and renders its first view:

- LayerStepper: `LayerStepper(ID)` (starts at event 1; reads the whole log once to index it);
- ReplayScrubber: `ReplayScrubber(ID)` (starts after the last event, with its diff);
- stepper 60 jumps: an open LayerStepper sent to 60 random events (`go(k)`), each rendered;
- LogDiff: `LogDiff(ID, COPY)`, the log against a copy of itself under another session id
  (the two read side by side).

against `chain_fold` (bench_scale.py: each line parsed with orjson and hashed after the
previous sha256 digest), in CPU time, the arms' order rotating each round; the ratio is taken
within each round (min / median over the rounds). Peak traced memory (tracemalloc) of each
arm in a separate pass; peak resident memory (VmHWM) of each arm in a fresh interpreter,
against the same interpreter having only imported the widgets (`import only`).
`--before TREE`: the resident figures of a tree of the package as it was too
(`git archive main agentos_kernel | tar -x -C TREE`), put first on PYTHONPATH.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))

from bench_scale import chain_fold, init_workspace, peak_mb  # noqa: E402

from agentos_kernel.testing import write_long_session  # noqa: E402

OPEN = {
    "import only": "None",
    "LayerStepper": "LayerStepper(sid, workspace=ws)",
    "ReplayScrubber": "ReplayScrubber(sid, workspace=ws)",
    "LogDiff": "LogDiff(sid, sid + 'copy', workspace=ws)",
}
RSS = ("import sys\n"
       "from agentos_kernel.jupyter.widgets.stepper import LayerStepper, ReplayScrubber\n"
       "from agentos_kernel.jupyter.widgets.diffview import LogDiff\n"
       "ws, sid = sys.argv[1], sys.argv[2]\n"
       "w = {code}\n"
       "hwm = [x for x in open('/proc/self/status') if x.startswith('VmHWM:')][0].split()[1]\n"
       "print(hwm)")
# VmHWM, not ru_maxrss: Linux carries maxrss across fork and exec (bench_scale's note).


def copy_session(ws: Path, sid: str) -> str:
    """The log of `sid` under the session id `sid + 'copy'` (ids in payloads left as they are:
    the diff reads A's id as B's)."""
    src = ws / "sessions" / sid / ".events.jsonl"
    dst = ws / "sessions" / f"{sid}copy" / ".events.jsonl"
    dst.parent.mkdir(exist_ok=True)
    with src.open("rb") as f, dst.open("wb") as out:
        for line in f:
            out.write(line.replace(f'"session_id":"{sid}"'.encode(), f'"session_id":"{sid}copy"'.encode()))
    return f"{sid}copy"


def resident_mb(ws: Path, sid: str, arm: str, pythonpath: str | None = None) -> str:
    env = {**os.environ, "PYTHONPATH": pythonpath} if pythonpath else None
    out = subprocess.run([sys.executable, "-c", RSS.format(code=OPEN[arm]), str(ws), sid],
                         capture_output=True, text=True, cwd=tempfile.gettempdir(), env=env)
    if out.returncode:
        return f"failed: {out.stderr.strip().splitlines()[-1]}"
    return f"{int(out.stdout.split()[-1]) / 1024:.0f} MB"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="10000,100000,1000000")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--before", metavar="TREE", help="also the resident figures of this tree")
    ap.add_argument("--arms", default=",".join(a for a in OPEN if a != "import only") + ",stepper 60 jumps")
    ap.add_argument("--before-upto", type=int, default=100_000,
                    help="--before's figures only up to this many events")
    ap.add_argument("--diff-upto", type=int, default=10**9,
                    help="LogDiff only up to this many events (the --before tree's keeps every event)")
    args = ap.parse_args()
    from agentos_kernel.jupyter.widgets.diffview import LogDiff
    from agentos_kernel.jupyter.widgets.stepper import LayerStepper, ReplayScrubber

    wanted = args.arms.split(",")
    tmp = Path(tempfile.mkdtemp(prefix="bench-widgets-"))
    try:
        ws = init_workspace(tmp / "ws")
        print(f"load average {' '.join(Path('/proc/loadavg').read_text().split()[:3])}, "
              f"{args.rounds} interleaved rounds, CPU time")
        print("\n| arm | events | time (median) | vs the orjson + sha256 fold, per round (min / median) "
              "| peak traced | load average after |\n|---|---|---|---|---|---|")
        resident: list[str] = []
        for n in (int(s) for s in args.sizes.split(",")):
            sid = f"long{n}"
            path = write_long_session(ws / "sessions", sid, n)
            copy = copy_session(ws, sid)
            os.sync()
            opened = LayerStepper(sid, workspace=ws)
            ks = random.Random(n).sample(range(1, n + 1), 60)

            def jumps(w: LayerStepper = opened, ks: list[int] = ks) -> None:
                for k in ks:
                    w.go(k)

            arms: dict[str, Callable[[], object]] = {
                "fold": lambda p=path: chain_fold(p),
                "LayerStepper": lambda s=sid: LayerStepper(s, workspace=ws),
                "ReplayScrubber": lambda s=sid: ReplayScrubber(s, workspace=ws),
                "stepper 60 jumps": jumps,
                "LogDiff": lambda s=sid, c=copy: LogDiff(s, c, workspace=ws),
            }
            arms = {k: v for k, v in arms.items() if k == "fold" or k in wanted}
            if n > args.diff_upto:
                arms.pop("LogDiff", None)
            times: dict[str, list[float]] = {k: [] for k in arms}
            for r in range(args.rounds):
                names = list(arms)
                for name in names[r % len(names):] + names[:r % len(names)]:
                    t = time.process_time()
                    arms[name]()
                    times[name].append(time.process_time() - t)
            load = " ".join(Path("/proc/loadavg").read_text().split()[:3])
            for name in list(arms)[1:]:
                ratios = [t / f for t, f in zip(times[name], times["fold"], strict=True)]
                print(f"| {name} | {n:,} | {statistics.median(times[name]):.2f} s | "
                      f"{min(ratios):.2f}x / {statistics.median(ratios):.2f}x | "
                      f"{peak_mb(arms[name]):.2f} MB | {load} |", flush=True)
            print(f"| (fold) | {n:,} | {statistics.median(times['fold']):.2f} s | 1.00x | "
                  f"{peak_mb(arms['fold']):.2f} MB | {load} |", flush=True)
            del opened
            for arm in OPEN:
                if arm != "import only" and arm not in wanted:
                    continue
                for tree, label in ((None, ""), (args.before, " (before)")):
                    if label and (not tree or n > args.before_upto):
                        continue  # the tree as it was holds the whole log: gigabytes at 1M
                    if arm == "LogDiff" and n > args.diff_upto:
                        continue
                    resident.append(f"| {arm}{label} | {n:,} | {resident_mb(ws, sid, arm, tree)} |")
            path.unlink()
            shutil.rmtree(ws / "sessions" / copy)
        print("\n| opened in a fresh interpreter | events | peak resident (VmHWM) |\n|---|---|---|")
        print("\n".join(resident))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()

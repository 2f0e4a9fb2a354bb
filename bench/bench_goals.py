"""Every goal of issue 24 measured side by side in one run (run by hand, never in the tests).

    pip install -e ".[bench]"
    python bench/bench_goals.py [--rounds 40] [--scale-rounds 5] [--sizes 10000,100000,1000000]

One process; each phase interleaves its contenders (each round runs every contender once,
the order rotating) and each ratio is taken *within* a round, reported as the minimum and
the median over the rounds, as bench_floor.py and bench_peers.py do (their docstrings say
what each contender covers; this script calls the same functions):

1. the request at `fsync: never`, its log written by hand (the floor), `run_agent` (what
   `%agent` calls), the `%agent` line magic displayed, and the lean LangGraph graph, in
   wall time (ms);
2. the first `%agent` of a fresh kernel and after a contract edit against a warm one;
3. at each size: `verify_log`, `replay --summary` (Runtime.verified_summary) and
   `audit_log` against the orjson + sha256 fold of the same lines, in CPU time;
4. at each size, each in a fresh interpreter: the peak resident memory (VmHWM) of
   `agentos verify`, `agentos replay --summary`, `agentos audit` and of opening the log
   widgets (LayerStepper, ReplayScrubber, LogDiff against a copy of the log under another
   session id: bench_widgets.py's arms); phase 3 times the same three widgets opening
   against the fold (LogDiff against the fold of both logs), and LogDiff of the log and a
   rerun of it (bench_diff.py's rerun shape: every line's id, parent, chain and session id
   different) against the fold of those two.

Prints one Markdown table, each goal beside its figure, and the load average before and
after (the machine is shared: say it with the figures).
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_diff
from bench_floor import floor_writer, line_magic, magic, request
from bench_peers import langgraph_lean, machine, workspaces
from bench_peers import rounds as interleaved
from bench_scale import RSS, chain_fold, init_workspace
from bench_widgets import copy_session

from agentos_kernel import Runtime
from agentos_kernel.testing import write_long_session

WIDGETS = ("import sys\n"
           "from agentos_kernel.jupyter.widgets.stepper import LayerStepper, ReplayScrubber\n"
           "from agentos_kernel.jupyter.widgets.diffview import LogDiff\n"
           "ws, sid, which = sys.argv[1], sys.argv[2], sys.argv[3]\n"
           "if which == 'LogDiff':\n"
           "    LogDiff(sid, sid + 'copy', workspace=ws)\n"
           "else:\n"
           "    {'LayerStepper': LayerStepper, 'ReplayScrubber': ReplayScrubber}[which](sid, workspace=ws)\n"
           "hwm = [x for x in open('/proc/self/status') if x.startswith('VmHWM:')][0].split()[1]\n"
           "print(0, hwm)")
"""Opens one widget on a session in a fresh interpreter; prints `0 VmHWM-kB` as RSS does."""


def rerun_session(sessions: Path, sid: str, n: int) -> str:
    """A rerun of `sid`'s request as another session beside it (bench_diff.py's rerun shape:
    the same payloads, every line's id, parent, chain and session id different); its id."""
    rerun = f"rerun{n}"
    src = write_long_session(sessions.parent / "rerun-tmp", rerun, n)
    bench_diff.copy(src, sessions / rerun, (b'"id":"e', b'"id":"%s-e' % rerun.encode()),
                    (b'"parent_id":"e', b'"parent_id":"%s-e' % rerun.encode()))
    shutil.rmtree(src.parent.parent)
    return rerun


def row(goal: str, times: dict[str, list[float]], top: str, base: str, limit: float) -> str:
    ratios = [a / b for a, b in zip(times[top], times[base], strict=True)]
    med = statistics.median(ratios)
    return (f"| {goal} | {min(ratios):.2f}× / {med:.2f}× | {statistics.median(times[top]):.3f} / "
            f"{statistics.median(times[base]):.3f} | ≤ {limit:.2f}× | {'✓' if med <= limit else '✗'} |")


def cpu_rounds(arms: dict[str, Callable[[], object]], n: int) -> dict[str, list[float]]:
    """Each arm's CPU seconds in `n` interleaved rounds (CPU time: another job's load distorts
    it least)."""
    times: dict[str, list[float]] = {k: [] for k in arms}
    names = list(arms)
    for r in range(n):
        for name in names[r % len(names):] + names[:r % len(names)]:
            t = time.process_time()
            arms[name]()
            times[name].append(time.process_time() - t)
    return times


def hwm_mb(code: str, argv: list[str]) -> float:
    out = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True,
                         cwd=tempfile.gettempdir(), check=False)
    if out.returncode not in (0, 1):
        raise SystemExit(f"bench_goals: {argv} failed:\n{out.stderr}")
    return int(out.stdout.split()[-1]) / 1024


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=40, help="interleaved rounds of phases 1-2 (default 40)")
    ap.add_argument("--scale-rounds", type=int, default=5, help="interleaved rounds of phase 3 (default 5)")
    ap.add_argument("--sizes", default="10000,100000,1000000",
                    help="log sizes in events (default 10k,100k,1M)")
    ap.add_argument("--logdiff-upto", type=int, default=10**9,
                    help="LogDiff only on logs up to this many events (default: every size)")
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    load_before = " ".join(Path("/proc/loadavg").read_text().split()[:3])
    tmp = Path(tempfile.mkdtemp(prefix="agentos-goals-"))
    rows: list[str] = []
    try:
        _, nosync = workspaces(tmp)
        print("phase 1: request, floor, %agent, lean LangGraph", file=sys.stderr)
        t = interleaved({"request": request(nosync), "floor": floor_writer(tmp / "floor"),
                         "%agent": magic(nosync), "%agent displayed": line_magic(nosync),
                         "lean LangGraph": langgraph_lean()}, args.rounds, "phase 1")
        rows += [row("request (`fsync: never`) / its hand-written floor", t, "request", "floor", 2.0),
                 row("`%agent` (`run_agent`) / request", t, "%agent", "request", 1.15),
                 row("`%agent` line magic, displayed / request", t, "%agent displayed", "request", 1.15),
                 row("request (`fsync: never`) / lean LangGraph", t, "request", "lean LangGraph", 0.33)]
        print("phase 2: fresh kernel", file=sys.stderr)
        t = interleaved({"warm": magic(nosync), "fresh kernel": magic(nosync, fresh="kernel"),
                         "after an edit": magic(nosync, fresh="edit")}, args.rounds, "phase 2")
        rows += [row("first `%agent`, fresh kernel / warm", t, "fresh kernel", "warm", 3.0),
                 row("first `%agent` after a contract edit / warm", t, "after an edit", "warm", 3.0)]
        rt = Runtime.from_workspace(init_workspace(tmp / "scale"))
        sessions = rt.workspace.sessions
        from agentos_kernel.jupyter.widgets.diffview import LogDiff
        from agentos_kernel.jupyter.widgets.stepper import LayerStepper, ReplayScrubber
        from agentos_kernel.labs.audit.log import audit_log
        from agentos_kernel.store.integrity import verify_log

        peaks: dict[str, dict[int, float]] = {}
        for n in sizes:
            print(f"phase 3-4: {n:,} events", file=sys.stderr)
            sid = f"long{n}"
            log = write_long_session(sessions, sid, n)

            def summary(s: str = sid) -> None:
                report, got = rt.verified_summary(s)
                assert report.ok and got is not None

            copy = copy_session(sessions.parent, sid)
            rerun = rerun_session(sessions, sid, n)
            ws = str(sessions.parent)

            def both(a: Path = log, b: Path = sessions / copy / log.name) -> None:
                chain_fold(a)
                chain_fold(b)

            arms: dict[str, Callable[[], object]] = {
                "fold": partial(chain_fold, log), "verify": partial(verify_log, log),
                "replay --summary": summary, "audit": partial(audit_log, log),
                "LayerStepper": partial(LayerStepper, sid, workspace=ws),
                "ReplayScrubber": partial(ReplayScrubber, sid, workspace=ws),
                "fold of both logs": both, "LogDiff": partial(LogDiff, sid, copy, workspace=ws),
                "fold of the rerun pair": partial(both, b=sessions / rerun / log.name),
                "LogDiff of a rerun": partial(LogDiff, sid, rerun, workspace=ws)}
            if n > args.logdiff_upto:
                for arm in ("fold of both logs", "LogDiff", "fold of the rerun pair", "LogDiff of a rerun"):
                    del arms[arm]
            t = cpu_rounds(arms, args.scale_rounds)
            for arm in ("verify", "replay --summary", "audit", "LayerStepper", "ReplayScrubber"):
                rows.append(row(f"`{arm}`, {n:,} events / orjson + sha256 fold (CPU s)", t, arm, "fold", 1.5))
            if "LogDiff" in arms:
                rows.append(row(f"`LogDiff` of a log and its copy, {n:,} events / the fold of both (CPU s)",
                                t, "LogDiff", "fold of both logs", 1.5))
                rows.append(row(f"`LogDiff` of a log and a rerun of it, {n:,} events / the fold of both"
                                " (CPU s)", t, "LogDiff of a rerun", "fold of the rerun pair", 1.5))
            probes = {"agentos verify": (RSS, ["--workspace", ws, "verify", sid]),
                      "agentos replay --summary": (RSS, ["--workspace", ws, "replay", sid, "--summary"]),
                      "agentos audit": (RSS, ["audit", str(log)]),
                      **{w: (WIDGETS, [ws, sid, w]) for w in ("LayerStepper", "ReplayScrubber", "LogDiff")}}
            if n > args.logdiff_upto:
                del probes["LogDiff"]
            for name, (code, argv) in probes.items():
                peaks.setdefault(name, {})[n] = hwm_mb(code, argv)
            shutil.rmtree(log.parent)
            shutil.rmtree(sessions / copy)
            shutil.rmtree(sessions / rerun)
        for name, by_size in peaks.items():
            lo, hi = by_size[min(by_size)], by_size[max(by_size)]
            shown = " / ".join(f"{by_size[n]:.0f}" for n in sorted(by_size))
            rows.append(f"| peak resident (VmHWM), {name}, {' / '.join(f'{n:,}' for n in sorted(by_size))} "
                        f"events | {shown} MB | | ≤ +20 MB | {'✓' if hi - lo <= 20 else '✗'} |")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    load_after = " ".join(Path("/proc/loadavg").read_text().split()[:3])
    print(f"Machine: {machine()}; {args.rounds} interleaved rounds (phases 1-2), {args.scale_rounds} "
          f"(phase 3); load average {load_before} before, {load_after} after.\n")
    print("| goal (issue 24) | min / median | medians (ms; CPU s in phase 3) | goal | met |\n"
          "|---|---|---|---|---|")
    print("\n".join(rows))


if __name__ == "__main__":
    main()

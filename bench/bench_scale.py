"""Class-scale benchmarks for issue 12 (run by hand, never in the test suite).

    python bench/bench_scale.py [--quick] [--only SECTION,...]  (sections: see below)

Prints Markdown rows for bench/RESULTS.md, each with the goal beside it. Every figure is a
median of interleaved runs in one process (the machine's 2 cores are shared), except the
import times, which need a fresh interpreter each (subprocesses, interleaved).

- widgets: LayerStepper / ReplayScrubber on a session of N events (the reference trace's
  request repeated, `agentos_kernel.testing.write_long_session`): build time, peak traced
  memory, and the time of a step at random positions and of Next.
- agent: `%agent "hello, greet Ada"` (jupyter.api.run_agent, what the magic calls) against
  the canonical request on a warm Runtime, and against loading the workspace per call (the
  path before the Runtime cache).
- import: `import agentos_kernel`, and `%load_ext agentos_kernel` against `import IPython`.
- l8: the code-review cycle with 3, 24 and 96 reviewer personas
  (`agentos_kernel.testing.add_reviewers`), one run each after a warm-up cycle.
- figures: timeline_figure / cost_figure on a session of N events, whole (binned past
  2000 events) and a 300-event window in the middle: time and SVG size.
- replay: `replay_path` (snapshot_v1) and `summarize_path` (snapshot_v2, bounded) on a log
  of N events: peak traced memory (tracemalloc, a separate pass), and throughput against an
  orjson fold of the same lines (parse each line, read its payload), interleaved.
- sessions: a new session (counter found afresh, as a new Runtime does) in workspaces of
  0, 1k and 10k sessions.
- chain: `verify_log`, `replay --summary` (Runtime.verified_summary) and `audit_log`
  against an orjson + sha256 fold of the same lines (issue 24), per-round ratios and
  peak traced memory at 10k / 100k / 1M events; the list-based audit it replaced (before)
  only up to 100k: it keeps every entry; and the fold hashing each line's canonical
  re-encoding (the least an exact reader does). `--arms` picks some.
- rss: peak resident memory (VmHWM) of `agentos verify`, `agentos replay --summary` and
  `agentos audit` at 10k / 100k / 1M events, each in a fresh interpreter (`--before TREE`:
  also the audit of that tree, up to 100k).
- audit-live: `audit_log` on the same logs with a live run's ids (UUIDv7s, rising) against
  the chain section's fold, per-round ratios and peak traced memory at 10k / 100k / 1M.
- verify: `verify_log` (`agentos verify`: every line's envelope, place and chain) on a log
  of N events: throughput, and against the same orjson fold as replay's, interleaved.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import random
import statistics
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path

from agentos_kernel.cli.main import main as cli_main
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
    from agentos_kernel.jupyter.widgets.stepper import LayerStepper, ReplayScrubber

    ws = init_workspace(tmp / "ws-widgets")
    rows = []
    for n in sizes:
        sid = f"long{n}"
        write_long_session(ws / "sessions", sid, n)
        for cls in (LayerStepper, ReplayScrubber):
            build = statistics.median(timed(lambda c=cls, s=sid: c(s, workspace=ws))
                                      for _ in range(repeat))
            peak = peak_mb(lambda c=cls, s=sid: c(s, workspace=ws))
            w = cls(sid, workspace=ws)
            jumps = [timed(lambda k=k, w=w: w.go(k)) * 1000
                     for k in random.Random(n).sample(range(1, n), 60)]
            w.go(n // 2)
            nexts = [timed(lambda w=w: w.go(w.slider.value + 1)) * 1000 for _ in range(100)]
            rows.append(f"| {cls.__name__} | {n:,} | {build:.2f} s | {peak:.0f} MB | "
                        f"{statistics.median(jumps):.1f} / {max(jumps):.1f} ms | "
                        f"{statistics.median(nexts):.1f} ms | < 2 s, < 200 MB, step < 20 ms |")
    return rows


def bench_figures(tmp: Path, sizes: list[int], repeat: int) -> list[str]:
    from agentos_kernel.jupyter.figures.session import cost_figure, timeline_figure

    ws = init_workspace(tmp / "ws-figures")
    rows = []
    for n in sizes:
        sid = f"long{n}"
        write_long_session(ws / "sessions", sid, n)
        for make in (timeline_figure, cost_figure):
            for window in (None, (n // 2, n // 2 + 299)):
                make(sid, workspace=ws, window=window)  # warm: fonts, matplotlib caches
                t = statistics.median(timed(lambda m=make, w=window, s=sid: m(s, workspace=ws, window=w))
                                      for _ in range(repeat))
                svg = make(sid, workspace=ws, window=window).svg
                shown = "whole" if window is None else f"{window[0]:,}-{window[1]:,}"
                rows.append(f"| {make.__name__} | {n:,} | {shown} | {t:.2f} s | {len(svg) / 1e3:.0f} kB | "
                            f"< 1 s, size bounded |")
    return rows


def bench_replay(tmp: Path, sizes: list[int], repeat: int) -> list[str]:
    import orjson

    from agentos_kernel.store.replay.fold import replay_path
    from agentos_kernel.store.replay.summary import summarize_path

    rows = []
    for n in sizes:
        path = write_long_session(tmp / "replay", f"long{n}", n)

        def fold(path: Path = path) -> None:
            k = 0
            with path.open("rb") as f:
                for line in f:
                    k += len(orjson.loads(line)["payload"])

        arms: dict[str, Callable[[], object]] = {
            "orjson fold": fold, "replay_path (v1)": lambda p=path: replay_path(p),
            "summarize_path (v2)": lambda p=path: summarize_path(p)}
        times: dict[str, list[float]] = {k: [] for k in arms}
        for _ in range(repeat):
            for name, fn in arms.items():
                times[name].append(timed(fn))
        floor = statistics.median(times["orjson fold"])
        for name in ("replay_path (v1)", "summarize_path (v2)"):
            t = statistics.median(times[name])
            rows.append(f"| {name} | {n:,} | {peak_mb(arms[name]):.2f} MB | {n / t / 1e3:.0f}k events/s | "
                        f"{floor / t:.2f}x | flat memory, >= 0.75x |")
        path.unlink()
    return rows


def bench_verify(tmp: Path, sizes: list[int], repeat: int) -> list[str]:
    import orjson

    from agentos_kernel.store.integrity import verify_log

    rows = []
    for n in sizes:
        path = write_long_session(tmp / "verify", f"long{n}", n)

        def fold(path: Path = path) -> None:
            k = 0
            with path.open("rb") as f:
                for line in f:
                    k += len(orjson.loads(line)["payload"])

        times: dict[str, list[float]] = {"fold": [], "verify": []}
        for _ in range(repeat):
            times["fold"].append(timed(fold))
            times["verify"].append(timed(lambda p=path: verify_log(p)))
        t, floor = statistics.median(times["verify"]), statistics.median(times["fold"])
        rows.append(f"| verify_log | {n:,} | {t:.2f} s | {n / t / 1e3:.0f}k events/s | {floor / t:.2f}x | "
                    "not slower |")
        path.unlink()
    return rows


def chain_fold(path: Path) -> None:
    """The least a reader of a chained log does: each line parsed, and hashed after the
    previous digest."""
    import hashlib

    import orjson

    prev = b""
    with path.open("rb") as f:
        for line in f:
            orjson.loads(line)
            prev = hashlib.sha256(prev + line).hexdigest().encode()


def bench_chain(tmp: Path, sizes: list[int], repeat: int, audit_upto: int, only: str = "") -> list[str]:
    """verify_log, `replay --summary` (what `agentos replay ID --summary` runs: the verify
    pass folding the bounded summary, Runtime.verified_summary) and audit_log against an
    orjson + sha256 fold of the same lines (each line parsed, and hashed after the previous
    digest), interleaved, in CPU time (the machine is shared); peak traced memory of each in
    a separate pass.
    "audit_log (before)" is the list-based audit it replaced (kept as the oracle in
    tests/labs/audit_oracle): it keeps every entry, so only up to `audit_upto` events."""
    import hashlib

    import orjson

    from agentos_kernel import Runtime
    from agentos_kernel.labs.audit.log import audit_log
    from agentos_kernel.store.integrity import verify_log

    sys.path.insert(0, str(REPO))
    from tests.labs.audit_oracle import old_audit

    rt = Runtime.from_workspace(init_workspace(tmp / "chain"))
    rows = []
    for n in sizes:
        path = write_long_session(rt.workspace.sessions, f"long{n}", n)
        os.sync()

        def fold(path: Path = path) -> None:
            chain_fold(path)

        def fold_canonical(path: Path = path) -> None:  # what an exact reader cannot skip
            prev = b""
            with path.open("rb") as f:
                for line in f:
                    body = orjson.dumps(orjson.loads(line), option=orjson.OPT_SORT_KEYS)
                    prev = hashlib.sha256(prev + body).hexdigest().encode()

        def replay_summary(sid: str = f"long{n}") -> None:  # what `agentos replay --summary` runs
            report, summary = rt.verified_summary(sid)
            assert report.ok and summary is not None

        arms: dict[str, Callable[[], object]] = {"fold": fold, "verify_log": lambda p=path: verify_log(p),
                                                 "replay --summary": replay_summary}
        arms["fold + canonical dumps"] = fold_canonical
        arms["audit_log"] = lambda p=path: audit_log(p)
        if n <= audit_upto:
            arms["audit_log (before)"] = lambda p=path: old_audit(p)
        if only:
            arms = {k: v for k, v in arms.items() if k == "fold" or k in only.split(",")}
        times: dict[str, list[float]] = {k: [] for k in arms}
        for r in range(repeat):
            names = list(arms)
            for name in names[r % len(names):] + names[:r % len(names)]:
                t = time.process_time()  # CPU time: what another job's load distorts least
                arms[name]()
                times[name].append(time.process_time() - t)
        load = " ".join(Path("/proc/loadavg").read_text().split()[:3])
        for name in list(arms)[1:]:
            ratios = [t / f for t, f in zip(times[name], times["fold"], strict=True)]
            rows.append(f"| {name} | {n:,} | {statistics.median(times[name]):.2f} s | "
                        f"{min(ratios):.2f}x / {statistics.median(ratios):.2f}x | "
                        f"{peak_mb(arms[name]):.2f} MB | {load} |")
        rows.append(f"| (fold) | {n:,} | {statistics.median(times['fold']):.2f} s | 1.00x | "
                    f"{peak_mb(fold):.2f} MB | {load} |")
        path.unlink()
    return rows


def live_ids(log: Path) -> Path:
    """A copy of `log` with a live run's ids (UUIDv7s, rising; parents renamed with them),
    re-chained: `<log>.live`."""
    import orjson

    from agentos_kernel.clock import uuid7
    from agentos_kernel.store.events import Event, canonical, chain_of

    out, new, prev = log.with_suffix(".live"), {}, None
    with log.open("rb") as src, out.open("wb") as dst:
        for line in src:
            o = orjson.loads(line)
            new[o["id"]] = o["id"] = str(uuid7())
            o["parent_id"] = new.get(o["parent_id"], o["parent_id"])
            o.pop("chain")
            o["chain"] = prev = chain_of(prev, Event(**o))
            dst.write(canonical(o) + b"\n")
    return out


def bench_audit_live(tmp: Path, sizes: list[int], repeat: int) -> list[str]:
    """audit_log on a log with a live run's ids (UUIDv7, `live_ids`) against the chain
    section's fold, interleaved, CPU time; peak traced memory in a separate pass."""
    from agentos_kernel.labs.audit.log import audit_log

    rows = []
    for n in sizes:
        base = write_long_session(tmp / "live", f"long{n}", n)
        path = live_ids(base)
        base.unlink()

        times: dict[str, list[float]] = {"fold": [], "audit": []}
        for r in range(repeat):
            for name in (("fold", "audit") if r % 2 else ("audit", "fold")):
                t = time.process_time()
                chain_fold(path) if name == "fold" else audit_log(path)
                times[name].append(time.process_time() - t)
        ratios = [t / f for t, f in zip(times["audit"], times["fold"], strict=True)]
        load = " ".join(Path("/proc/loadavg").read_text().split()[:3])
        rows.append(f"| audit_log, live ids | {n:,} | {statistics.median(times['audit']):.2f} s | "
                    f"{min(ratios):.2f}x / {statistics.median(ratios):.2f}x | "
                    f"{peak_mb(lambda p=path: audit_log(p)):.2f} MB | {load} |")
        path.unlink()
    return rows


RSS = ("import sys\n"
       "from agentos_kernel.cli.main import main\n"
       "sys.stdout = open('/dev/null', 'w'); code = main(sys.argv[1:]); sys.stdout = sys.__stdout__\n"
       "hwm = [x for x in open('/proc/self/status') if x.startswith('VmHWM:')][0].split()[1]\n"
       "print(code, hwm)")
# The peak resident size of this process's own memory (VmHWM, kB). Not `ru_maxrss`: Linux
# carries a process's maxrss across fork and exec, so a child of a parent that grew (this
# script after the chain section: 550 MB) reported the parent's size, whatever it did.


def bench_rss(tmp: Path, sizes: list[int], before: str | None = None) -> list[str]:
    """Peak resident memory (VmHWM, the whole process, the interpreter included) of
    `agentos verify ID`, `agentos replay ID --summary` and `agentos audit PATH`, each in a
    fresh interpreter, on a session of N events in a workspace. `before`: a tree of the
    package as it was (`git archive`), whose `agentos audit` runs too (up to 100k events:
    it keeps every entry)."""
    import subprocess

    ws = init_workspace(tmp / "rss")
    rows = []
    for n in sizes:
        sid = f"long{n}"
        log = write_long_session(ws / "sessions", sid, n)
        for name, argv in (("agentos verify", ["--workspace", str(ws), "verify", sid]),
                           ("agentos replay --summary", ["--workspace", str(ws), "replay", sid, "--summary"]),
                           ("agentos audit", ["audit", str(log)]),
                           ("agentos audit (before)", ["audit", str(log)])):
            if name == "agentos audit (before)" and (before is None or n > 100_000):
                continue  # it keeps every entry: a million would take gigabytes
            env = {**os.environ, "PYTHONPATH": before} if name.endswith("(before)") and before else None
            out = subprocess.run([sys.executable, "-c", RSS, *argv], capture_output=True, text=True,
                                 cwd=tempfile.gettempdir(), env=env)
            code, kb = out.stdout.split()[-2:]
            rows.append(f"| {name} | {n:,} | {int(kb) / 1024:.0f} MB | exit {code} |")
        log.unlink()
    return rows


def bench_agent(tmp: Path, n: int) -> list[str]:
    from agentos_kernel import Runtime
    from agentos_kernel.jupyter import runtime_cache
    from agentos_kernel.jupyter.api import run_agent

    ws = init_workspace(tmp / "ws-agent")
    rt = Runtime.from_workspace(ws)
    arms: dict[str, Callable[[], object]] = {
        "canonical request, warm Runtime": lambda: rt.handle_user_request("hello, greet Ada"),
        "%agent (run_agent, cached Runtime)": lambda: run_agent("hello, greet Ada", workspace=ws),
        "%agent loading the workspace per call (before)": lambda: (
            runtime_cache.clear(), run_agent("hello, greet Ada", workspace=ws)),
        "Runtime.from_workspace alone": lambda: Runtime.from_workspace(ws),
    }
    for fn in arms.values():
        fn()  # warm: validators compile on first use
    times: dict[str, list[float]] = {k: [] for k in arms}
    for _ in range(n):
        for name, fn in arms.items():  # interleaved, so load from others hits every arm alike
            times[name].append(timed(fn) * 1000)
    base = statistics.median(times["canonical request, warm Runtime"])
    return [f"| {name} | {statistics.median(t):.2f} ms | {statistics.median(t) / base:.2f}x |"
            for name, t in times.items()]


def _subprocess_s(code: str, pythonpath: str | None = None) -> float:
    import os
    import subprocess

    env = {**os.environ, **({"PYTHONPATH": pythonpath} if pythonpath else {})}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                         check=True, cwd=tempfile.gettempdir())
    return float(out.stdout.strip().splitlines()[-1])


IMPORT_IPYTHON = "import time; t = time.perf_counter(); import IPython; print(time.perf_counter() - t)"
LOAD_EXT = ("import time; t = time.perf_counter(); import IPython; a = time.perf_counter() - t\n"
            "from IPython.core.interactiveshell import InteractiveShell\n"
            "sh = InteractiveShell.instance(); t = time.perf_counter()\n"
            "sh.run_line_magic('load_ext', 'agentos_kernel'); print(a + time.perf_counter() - t)")
IMPORT_OURS = ("import time; t = time.perf_counter(); import agentos_kernel; "
               "print(time.perf_counter() - t)")


def bench_import(n: int) -> list[str]:
    runs: dict[str, list[float]] = {"import IPython": [], "import IPython + %load_ext agentos_kernel": [],
                                    "import agentos_kernel": []}
    for _ in range(n):
        for name, code in zip(runs, (IMPORT_IPYTHON, LOAD_EXT, IMPORT_OURS), strict=True):
            runs[name].append(_subprocess_s(code) * 1000)
    base = statistics.median(runs["import IPython"])
    return [f"| {name} | {statistics.median(t):.1f} ms | {statistics.median(t) / base:.2f}x |"
            for name, t in runs.items()]


def bench_sessions(tmp: Path, n: int, sizes: tuple[int, ...]) -> list[str]:
    from agentos_kernel import Runtime

    rts = {}
    for size in sizes:
        ws = init_workspace(tmp / f"ws-sessions-{size}")
        for i in range(1, size + 1):
            log = ws / "sessions" / f"s{i:04d}" / ".events.jsonl"
            log.parent.mkdir(parents=True)
            log.touch()
        rts[size] = Runtime.from_workspace(ws)
    # The 11,000 folders just made are still being written back; timed during that, a
    # session's fsyncs wait for them, which is not what is measured here. (Run right after
    # another run, whose 11,000 folders are being deleted, on a disk mounted with `discard`,
    # the 10k row still measured 2-3x here; with a pause between runs, 1.1x.)
    os.sync()

    def start(rt: Runtime) -> None:
        rt._next_n = None  # what a new Runtime does: probe for the next id afresh, O(log N)
        session = rt.start_session("hello, greet Ada")
        with rt.guarded(session):
            session.log.append("session.close", "system", {"ok": True, "output": "done"})

    for rt in rts.values():
        start(rt)  # warm
    times: dict[int, list[float]] = {s: [] for s in sizes}
    for _ in range(n):
        for size, rt in rts.items():
            times[size].append(timed(lambda rt=rt: start(rt)) * 1000)
    base = statistics.median(times[sizes[0]])
    return [f"| {size:,} sessions | {statistics.median(t):.2f} ms | {statistics.median(t) / base:.2f}x |"
            for size, t in times.items()]


PROMPT_L8 = "review the change in auth.py"


def bench_l8(tmp: Path, sizes: tuple[int, ...], n: int) -> list[str]:
    import shutil

    from agentos_kernel import Runtime
    from agentos_kernel.testing import add_reviewers

    template = init_workspace(tmp / "ws-l8")
    rts = {}
    for size in sizes:
        ws = tmp / f"ws-l8-{size}"
        shutil.copytree(template, ws)
        add_reviewers(ws, size)
        rts[size] = Runtime.from_workspace(ws)
        rts[size].run_cycle("code-review", PROMPT_L8)  # warm: the CEL grammar
    times: dict[int, list[float]] = {s: [] for s in sizes}
    for _ in range(n):
        for size, rt in rts.items():
            times[size].append(timed(lambda rt=rt: rt.run_cycle("code-review", PROMPT_L8)))
    base = statistics.median(times[sizes[0]])
    return [f"| {size} personas | {statistics.median(t):.2f} s | {statistics.median(t) / base:.1f}x | "
            f"{'< 1 s' if size == 96 else 'linear'} |" for size, t in times.items()]


SECTIONS: dict[str, Callable[[Path, argparse.Namespace], list[str]]] = {
    "widgets": lambda tmp, a: bench_widgets(tmp, [10_000] if a.quick else [10_000, 100_000], 3),
    "agent": lambda tmp, a: bench_agent(tmp, 20 if a.quick else 100),
    "import": lambda tmp, a: bench_import(5 if a.quick else 15),
    "l8": lambda tmp, a: bench_l8(tmp, (3, 24) if a.quick else (3, 24, 96), 1 if a.quick else 3),
    "figures": lambda tmp, a: bench_figures(tmp, [10_000] if a.quick else [10_000, 100_000], 3),
    "replay": lambda tmp, a: bench_replay(tmp, [10_000, 100_000] if a.quick else [10_000, 100_000, 1_000_000],
                                          5 if a.quick else 3),
    "sessions": lambda tmp, a: bench_sessions(tmp, 20 if a.quick else 100,
                                              (0, 1000) if a.quick else (0, 1000, 10_000)),
    "chain": lambda tmp, a: bench_chain(tmp, [10_000, 100_000] if a.quick else [10_000, 100_000, 1_000_000],
                                        5, 100_000, a.arms),
    "rss": lambda tmp, a: bench_rss(tmp, [10_000, 100_000] if a.quick else [10_000, 100_000, 1_000_000],
                                    a.before),
    "audit-live": lambda tmp, a: bench_audit_live(tmp, [10_000, 100_000] if a.quick
                                                  else [10_000, 100_000, 1_000_000], 5),
    "verify": lambda tmp, a: bench_verify(tmp, [10_000, 100_000] if a.quick else [10_000, 100_000, 1_000_000],
                                          5 if a.quick else 3),
}
HEADERS = {
    "widgets": "| widget | events | build (median) | peak traced | jump median / max | Next | goal |\n"
               "|---|---|---|---|---|---|---|",
    "agent": "| `hello, greet Ada` | median | vs the canonical request |\n|---|---|---|",
    "import": "| cold start (fresh interpreter) | median | vs `import IPython` (goal: %load_ext <= 1.3x) |"
              "\n|---|---|---|",
    "l8": "| code-review cycle | median | vs 3 personas | goal |\n|---|---|---|---|",
    "figures": "| figure | events | range | time (median) | SVG | goal |\n|---|---|---|---|---|---|",
    "replay": "| replay | events | peak traced | throughput | vs an orjson fold | goal |\n"
              "|---|---|---|---|---|---|",
    "sessions": "| new session in a workspace of | median | vs empty (goal: 1.0x) |\n|---|---|---|",
    "chain": "| reads the whole log | events | time (median) | vs the orjson + sha256 fold, per round "
             "(min / median) | peak traced | load average after |\n|---|---|---|---|---|---|",
    "rss": "| command (fresh interpreter) | events | peak resident (VmHWM) | |\n|---|---|---|---|",
    "audit-live": "| reads the whole log | events | time (median) | vs the orjson + sha256 fold, per "
                  "round (min / median) | peak traced | load average after |\n|---|---|---|---|---|---|",
    "verify": "| verify | events | time (median) | throughput | vs an orjson fold | goal |\n"
              "|---|---|---|---|---|---|",
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small sizes, fewer runs")
    ap.add_argument("--only", default=",".join(SECTIONS),
                    help=f"comma-separated sections (default: all of {','.join(SECTIONS)})")
    ap.add_argument("--before", metavar="TREE",
                    help="rss: also run `agentos audit` from this tree of the package as it was "
                         "(`git archive main agentos_kernel | tar -x -C TREE`), on PYTHONPATH")
    ap.add_argument("--arms", default="",
                    help="chain: only these arms, comma-separated (default: all), e.g. "
                         "'audit_log,audit_log (before)'")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-scale-") as d:
        for name in args.only.split(","):
            print(f"\n{HEADERS[name]}")
            for row in SECTIONS[name](Path(d), args):
                print(row, flush=True)


if __name__ == "__main__":
    main()

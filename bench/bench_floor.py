"""The canonical request against its log's physical floor, and `%agent` against the request
(run by hand, never in the test suite).

    python bench/bench_floor.py [--rounds 50]

One process, interleaved rounds (each round runs every contender once, the order rotating);
each figure is a ratio taken *within* a round (so a machine slowing down mid-run cancels
out), reported as the minimum and the median over the rounds. Contenders:

- `request, fsync never`: `Runtime.handle_user_request("hello, greet Ada")` on the scripted
  provider, the runtime built once, the workspace's profile at `fsync: never`.
- `floor`: the same request's log written by hand, the least any writer of it must do: a new
  session folder and its log file (`mkdir`, one `os.open`), the 32 lines of the canonical
  log (sessions/example), each `orjson`-encoded with sorted keys, sha256-chained over the
  previous chain and its bytes, and written with one `os.write` each; then closed. No schema
  check, no hook, no redaction, no model, no clock.
- `%agent`: `jupyter.api.run_agent` (what the magic calls) on the same workspace at
  `fsync: never`, the Runtime cached; and the same request through the API
  (`request, fsync never` above) as its reference.
- `%agent line, displayed`: the line magic in an IPython shell (`run_line_magic`: the line
  parsed) and its result formatted for display (`display_formatter.format`), as a cell does.
- `%agent, fresh kernel`: the first `%agent` of a new kernel, its modules already imported:
  before the timer starts the Runtime cache is emptied (`runtime_cache.clear()`) and so is
  everything else a kernel keeps once it has read a workspace (the schema registries and
  YAML documents kept by their bytes: `schemas.loading.forget_loaded`,
  `yamlload.forget_read`), so every contract file is read, parsed and checked, the schemas
  compiled and the inotify watch started, as in a new process (imports aside).
- `%agent after a contract edit`: a contract file touched before the timer starts
  (`os.utime` on skills/greet/SKILL.md, its bytes unchanged: inotify reports it as an edit),
  so the timed call sees the change, closes the old Runtime's watch, and builds a new Runtime
  in a kernel that has read the workspace before: unchanged schema and YAML bytes are not
  parsed or compiled again (the file reuse by bytes). Both against a warm `%agent`, the three
  alone in a second phase.

- `%agent, new process` (`--processes N`, default 10): the real thing, in N new
  interpreters one after another: `agentos_kernel.jupyter.magics` imported (what `%load_ext`
  loads), then the first `run_agent` timed (its imports of the runtime, YAML and JSON
  Schema libraries included) and, in a second figure, without them (imported first), each
  against the median of five warm calls in the same interpreter. Not interleaved with the
  others (each interpreter is its own round).

Prints a Markdown table with the load average (`/proc/loadavg`) before and after.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import statistics
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

from agentos_kernel import Runtime
from agentos_kernel.workspace import reference_dir

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_peers import CANONICAL, machine, workspaces
from bench_peers import rounds as interleaved

SORT = orjson.OPT_SORT_KEYS


def floor_writer(root: Path) -> Callable[[], Any]:
    """Write the canonical log by hand under `root`/sNNNN: folder, file, 32 chained lines."""
    ref = reference_dir() / "sessions" / "example" / ".events.jsonl"
    bodies = []
    for raw in ref.read_bytes().splitlines():
        d = orjson.loads(raw)
        d.pop("chain")
        bodies.append(d)
    counter = iter(range(1, 10**9))
    root.mkdir(parents=True, exist_ok=True)

    def run() -> None:
        sid = f"s{next(counter):04d}"
        folder = root / sid
        os.mkdir(folder)
        fd = os.open(folder / ".events.jsonl", os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND, 0o644)
        try:
            prev = b""
            for i, body in enumerate(bodies, 1):
                ev = dict(body, id=f"{sid}-e{i:04d}", session_id=sid)
                prev = hashlib.sha256(prev + orjson.dumps(ev, option=SORT)).hexdigest().encode()
                ev["chain"] = prev.decode()
                os.write(fd, orjson.dumps(ev, option=SORT) + b"\n")
        finally:
            os.close(fd)

    return run


def request(ws: Path) -> Callable[[], Any]:
    rt = Runtime.from_workspace(ws)

    def run() -> None:
        assert rt.handle_user_request(CANONICAL).value.output == "Hello, Ada!"

    return run


def magic(ws: Path, fresh: str | None = None) -> Callable[[], Any]:
    """`run_agent`; `fresh`: "kernel" (nothing read before) or "edit" (a contract touched)."""
    from agentos_kernel import yamlload
    from agentos_kernel.jupyter import api, runtime_cache
    from agentos_kernel.schemas import registry
    try:
        from agentos_kernel.schemas import loading
    except ImportError:  # before the reuse by bytes
        loading = registry  # type: ignore[assignment]

    def run() -> None:
        assert api.run_agent(CANONICAL, workspace=ws).output == "Hello, Ada!"

    def setup() -> None:
        if fresh == "edit":
            os.utime(ws / "skills" / "greet" / "SKILL.md")
            return
        # A fresh kernel has no cached Runtime; emptying the cache closes the old one's
        # inotify watch, which a new kernel does not pay for: done here, untimed.
        runtime_cache.clear()
        # (before the reuse by bytes existed there was nothing else to forget)
        for forget in (getattr(loading, "forget_loaded", None), getattr(yamlload, "forget_read", None)):
            if forget is not None:
                forget()

    if fresh:
        run.setup = setup  # type: ignore[attr-defined]
    return run


CHILD = """
import sys, time, statistics
ws, preload, prompt = sys.argv[1], sys.argv[2] == "1", sys.argv[3]
import agentos_kernel.jupyter.magics
if preload:
    import agentos_kernel.jupyter.api, yaml, jsonschema_rs
t = time.perf_counter()
from agentos_kernel.jupyter import api
api.run_agent(prompt, workspace=ws)
first = (time.perf_counter() - t) * 1000
warm = []
for _ in range(5):
    t = time.perf_counter()
    api.run_agent(prompt, workspace=ws)
    warm.append((time.perf_counter() - t) * 1000)
print(first, statistics.median(warm))
"""


def new_processes(ws: Path, n: int, preload: bool) -> dict[str, list[float]]:
    """First `%agent` and warm median (ms) in each of `n` new interpreters."""
    import subprocess

    out: dict[str, list[float]] = {"first": [], "warm": []}
    for _ in range(n):
        done = subprocess.run([sys.executable, "-c", CHILD, str(ws), "1" if preload else "0", CANONICAL],
                              capture_output=True, text=True, check=True)
        first, warm = map(float, done.stdout.split())
        out["first"].append(first)
        out["warm"].append(warm)
    return out


def line_magic(ws: Path) -> Callable[[], Any]:
    """`%agent` as a notebook cell runs it: the line parsed, the request, the result formatted
    for display (every mime type IPython asks a result for)."""
    from IPython.core.interactiveshell import InteractiveShell

    ip = InteractiveShell.instance()
    ip.extension_manager.load_extension("agentos_kernel")
    line = f'--workspace {ws} "{CANONICAL}"'

    def run() -> None:
        result = ip.run_line_magic("agent", line)
        ip.display_formatter.format(result)
        assert result.output == "Hello, Ada!"

    return run


def ratio_row(times: dict[str, list[float]], top: str, base: str, goal: float) -> str:
    ratios = [a / b for a, b in zip(times[top], times[base], strict=True)]
    lo, med = min(ratios), statistics.median(ratios)
    ms = statistics.median(times[top]), statistics.median(times[base])  # ms already
    return (f"| {top} / {base} | {lo:.2f}× | {med:.2f}× | {ms[0]:.3f} / {ms[1]:.3f} ms | "
            f"≤ {goal:.2f}× {'✓' if med <= goal else '✗'} |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=50, help="interleaved rounds (default 50)")
    ap.add_argument("--processes", type=int, default=10,
                    help="new interpreters for the first %%agent of a new process (default 10; 0: none)")
    args = ap.parse_args()
    load_before = Path("/proc/loadavg").read_text().split()[:3]
    tmp = Path(tempfile.mkdtemp(prefix="agentos-floor-"))
    try:
        _, nosync = workspaces(tmp)
        contenders = {"request, fsync never": request(nosync), "floor": floor_writer(tmp / "floor"),
                      "%agent": magic(nosync), "%agent line, displayed": line_magic(nosync)}
        times = interleaved(contenders, args.rounds, "request, floor, %agent")
        # A phase of its own: the garbage a new Runtime leaves is collected in whichever
        # call comes next, which would be another contender's.
        times |= interleaved({"%agent, warm": magic(nosync),
                              "%agent, fresh kernel": magic(nosync, fresh="kernel"),
                              "%agent after a contract edit": magic(nosync, fresh="edit")},
                             args.rounds, "fresh kernel")
        if args.processes:
            for preload in (False, True):
                got = new_processes(nosync, args.processes, preload)
                name = "%agent, new process" + (" (imports done)" if preload else "")
                times[name], times[f"{name}: warm"] = got["first"], got["warm"]
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    load_after = Path("/proc/loadavg").read_text().split()[:3]
    print(f"Machine: {machine()}; {args.rounds} interleaved rounds; per-round ratios; load average "
          f"{' '.join(load_before)} before, {' '.join(load_after)} after.\n")
    print("| ratio | min | median | medians (ms) | goal (issue 24) |\n|---|---|---|---|---|")
    print(ratio_row(times, "request, fsync never", "floor", 2.0))
    print(ratio_row(times, "%agent", "request, fsync never", 1.15))
    print(ratio_row(times, "%agent line, displayed", "request, fsync never", 1.15))
    print(ratio_row(times, "%agent, fresh kernel", "%agent, warm", 3.0))
    print(ratio_row(times, "%agent after a contract edit", "%agent, warm", 3.0))
    if args.processes:
        for name in ("%agent, new process", "%agent, new process (imports done)"):
            print(ratio_row(times, name, f"{name}: warm", 3.0))


if __name__ == "__main__":
    main()

"""The log diff (`LogDiff`, what `agentos diff` and `%diff` run too) on three shapes of a pair of
agreeing logs, against the orjson + sha256 fold of both logs (bench_scale.chain_fold), in CPU
time, interleaved (each round runs every arm once, the order rotating), ratios taken within a
round, min / median over the rounds (run by hand, never in the tests).

    python bench/bench_diff.py [--sizes 10000,100000] [--rounds 5] [--before TREE]

The pairs, each A = a long session (testing.write_long_session):
- copy: B is A under another session id on every line, nothing else changed (bench_widgets'
  `copy_session`, bench_goals' LogDiff arm);
- rerun: what `agentos rerun` writes: the session id in every line's session_id, id and
  parent_id (`s0001-e0008`), and so the chain, differ; payloads do not;
- same id: B is A byte for byte (a session folder copied: the same session id inside).

`--before TREE`: also the engine of another tree (its `agentos_kernel/runs/diff.py`, e.g. main
unpacked with `git archive main | tar -x -C TREE`) behind this tree's widget, in the same rounds.
"""

from __future__ import annotations

import argparse
import importlib.util
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_peers import machine
from bench_scale import chain_fold, init_workspace

from agentos_kernel.jupyter.widgets import diffview
from agentos_kernel.testing import write_long_session


def pairs(sessions: Path, n: int) -> dict[str, tuple[str, str]]:
    """The three pairs of session ids (module docstring), written under `sessions`."""
    a = write_long_session(sessions, f"a{n}", n)
    out = {}
    for shape, sid in (("copy", f"c{n}"), ("same id", f"s{n}")):
        copy(a, sessions / sid, (b'"session_id":"a%d"' % n, b'"session_id":"c%d"' % n)
             if shape == "copy" else (b"", b""))
        out[shape] = (f"a{n}", sid)
    # a rerun: both logs' ids carry their session id (as `agentos run` writes them)
    for sid in (f"q{n}", f"r{n}"):
        src = write_long_session(sessions.parent / "tmp", sid, n)
        copy(src, sessions / sid, (b'"id":"e', b'"id":"%s-e' % sid.encode()),
             (b'"parent_id":"e', b'"parent_id":"%s-e' % sid.encode()))
        shutil.rmtree(src.parent)
    out["rerun"] = (f"q{n}", f"r{n}")
    return out


def copy(src: Path, folder: Path, *subs: tuple[bytes, bytes]) -> None:
    """`src` as `folder`'s log, a line at a time (a 1M-event log is 630 MB), each `(old, new)`
    of `subs` replaced in every line."""
    folder.mkdir()
    with src.open("rb") as f, (folder / src.name).open("wb") as out:
        for line in f:
            for old, new in subs:
                line = line.replace(old, new) if old else line
            out.write(line)


def old_engine(tree: Path) -> Callable[..., object]:
    """`diff_events` of another tree's runs/diff.py (imported beside this tree's package)."""
    spec = importlib.util.spec_from_file_location("agentos_kernel.runs._before_diff",
                                                  tree / "agentos_kernel" / "runs" / "diff.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod.diff_events  # type: ignore[no-any-return]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="10000,100000")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--before", type=Path, help="a tree whose runs/diff.py is the 'before' engine")
    args = ap.parse_args()
    new = diffview.diff_events
    old = old_engine(args.before) if args.before else None
    load = " ".join(Path("/proc/loadavg").read_text().split()[:3])
    tmp = Path(tempfile.mkdtemp(prefix="agentos-diff-"))
    rows = []
    try:
        ws = init_workspace(tmp / "ws")
        sessions = Path(ws) / "sessions"
        for n in (int(s) for s in args.sizes.split(",")):
            print(f"{n:,} events", file=sys.stderr)
            arms: dict[str, Callable[[], object]] = {}
            for shape, (a, b) in pairs(sessions, n).items():
                pa, pb = sessions / a / ".events.jsonl", sessions / b / ".events.jsonl"
                arms[f"fold {shape}"] = lambda pa=pa, pb=pb: (chain_fold(pa), chain_fold(pb))

                def widget(a: str = a, b: str = b, engine: Callable[..., object] = new) -> None:
                    diffview.diff_events = engine  # type: ignore[assignment]
                    diffview.LogDiff(a, b, workspace=ws)

                arms[f"LogDiff {shape}"] = widget
                if old is not None:
                    arms[f"before {shape}"] = lambda a=a, b=b, w=widget: w(a, b, old)
            times: dict[str, list[float]] = {k: [] for k in arms}
            names = list(arms)
            for r in range(args.rounds):
                for name in names[r % len(names):] + names[:r % len(names)]:
                    t = time.process_time()
                    arms[name]()
                    times[name].append(time.process_time() - t)
            diffview.diff_events = new
            for name in names:
                if name.startswith("fold"):
                    continue
                shape = name.split(" ", 1)[1]
                ratios = [x / y for x, y in zip(times[name], times[f"fold {shape}"], strict=True)]
                rows.append(f"| {name.split()[0]} | {shape} | {n:,} | {min(ratios):.2f}× / "
                            f"{statistics.median(ratios):.2f}× | {statistics.median(times[name]):.3f} / "
                            f"{statistics.median(times[f'fold {shape}']):.3f} |")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    head = ["| engine | pair | events | / fold of both (min / median) | medians (CPU s) |", "|" + "---|" * 5]
    print(f"Machine: {machine()}; {args.rounds} interleaved rounds; load average {load} before, "
          f"{' '.join(Path('/proc/loadavg').read_text().split()[:3])} after.\n", *head, *rows, sep="\n")


if __name__ == "__main__":
    main()

"""`audit_log` against the orjson + sha256 fold, this tree's package and an older one's, in
fresh interpreters that alternate (run by hand, never in the tests).

    git archive main agentos_kernel | tar -x -C /tmp/before
    python bench/bench_audit_ab.py --before /tmp/before [--sizes 10000,100000,1000000]

Two versions of the package cannot share a process, so each size runs the older tree, this
one, the older, this one, each a fresh interpreter doing `--rounds` rounds of the fold
(`bench_scale.chain_fold`, what bench_goals.py phase 3 uses) and `audit_log` on the same
`write_long_session` log, the order alternating, in CPU time. The ratio is taken within each
round; the table gives min / median over all rounds of a version (the machine is shared:
the load average is printed with it). bench/RESULTS.md "Session 4, audit3" is its output.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROUNDS = (
    "import json, sys, time\n"
    "from pathlib import Path\n"
    "sys.path.insert(0, sys.argv[3])\n"
    "from bench_scale import chain_fold\n"
    "from agentos_kernel.labs.audit.log import audit_log\n"
    "log, rounds = Path(sys.argv[1]), int(sys.argv[2])\n"
    "audit_log(log); chain_fold(log)\n"
    "out = []\n"
    "for r in range(rounds):\n"
    "    t = {}\n"
    "    for name, f in (('fold', chain_fold), ('audit', audit_log))[::1 if r % 2 else -1]:\n"
    "        t0 = time.process_time(); f(log); t[name] = time.process_time() - t0\n"
    "    out.append((t['audit'], t['fold']))\n"
    "print(json.dumps(out))\n")
"""One interpreter's rounds: prints [(audit CPU s, fold CPU s), ...]."""


def load() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--before", required=True, help="a tree holding the older agentos_kernel package")
    ap.add_argument("--sizes", default="10000,100000,1000000", help="events per log, comma-separated")
    ap.add_argument("--rounds", default="20,8,4", help="rounds per interpreter at each size")
    args = ap.parse_args()
    from agentos_kernel.testing import write_long_session

    sizes = [int(x) for x in args.sizes.split(",")]
    rounds = [int(x) for x in args.rounds.split(",")]
    trees = {"before": str(Path(args.before).resolve()), "after": str(HERE.parent)}
    print(f"load average before: {load()}", file=sys.stderr)
    rows = []
    with tempfile.TemporaryDirectory(prefix="agentos-audit-ab-") as tmp:
        for n, k in zip(sizes, rounds, strict=False):
            log = write_long_session(Path(tmp), f"long{n}", n)
            got: dict[str, list[tuple[float, float]]] = {"before": [], "after": []}
            for _ in range(2):
                for version, tree in trees.items():
                    out = subprocess.run([sys.executable, "-c", ROUNDS, str(log), str(k), str(HERE)],
                                         env={"PYTHONPATH": tree, "PATH": "/usr/bin:/bin"},
                                         capture_output=True, text=True, check=True).stdout
                    got[version] += [tuple(x) for x in json.loads(out)]
            for version, rs in got.items():
                ratios = [a / f for a, f in rs]
                rows.append(f"| {version} | {n:,} | {len(rs)} | {statistics.median(a for a, _ in rs):.3f} | "
                            f"{statistics.median(f for _, f in rs):.3f} | {min(ratios):.2f}x / "
                            f"{statistics.median(ratios):.2f}x |")
            print(f"{n:,} events done; load average {load()}", file=sys.stderr)
    print("| version | events | rounds | audit (median, CPU s) | fold (median, CPU s) | "
          "audit / fold per round (min / median) |\n|---|---|---|---|---|---|")
    print("\n".join(rows))


if __name__ == "__main__":
    main()

"""Benchmark `agentos grade` (run by hand, never in the test suite).

    python bench/bench_grade.py [--n 100] [--jobs N] [--with-hang] [--write]

Generates N submission folders from the Lab 07 fixture set (tests/labs/_grade_fixtures.py),
cycling through every case but the hanging one (a hang costs its full --timeout, which says
nothing about the grader's speed; --with-hang adds one with --timeout 10), then times
`agentos grade DIR` as a subprocess with the default jobs (one per core). Target from the
issue: 100 submissions in under 60 s on 2 cores. --write appends the figures to
bench/RESULTS.md.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.labs._grade_fixtures import MUTATIONS, build_submissions  # noqa: E402


def generate(dest: Path, n: int, with_hang: bool) -> Path:
    """`dest/lab-07/2023NNNN/` for N students, each a copy of one fixture case in turn."""
    cases = [c for c in MUTATIONS if c != "hangs"]
    made = build_submissions(dest / "gen", (*cases, "hangs"))
    root = dest / "lab-07"
    root.mkdir()
    picked = [cases[i % len(cases)] for i in range(n - int(with_hang))] + (["hangs"] if with_hang else [])
    for i, case in enumerate(picked, 1):
        shutil.copytree(made / case, root / f"2023{i:04d}")
    return root


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=100)
    parser.add_argument("--jobs", type=int)
    parser.add_argument("--with-hang", action="store_true")
    parser.add_argument("--write", action="store_true", help="append the figures to bench/RESULTS.md")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-grade-") as tmp:
        root = generate(Path(tmp), args.n, args.with_hang)
        argv = [sys.executable, "-m", "agentos_kernel.cli.main", "grade", str(root), "--no-progress",
                "--csv", str(Path(tmp) / "grades.csv")]
        argv += ["--jobs", str(args.jobs)] if args.jobs else []
        argv += ["--timeout", "10"] if args.with_hang else []
        start = time.perf_counter()
        out = subprocess.run(argv, capture_output=True, text=True, cwd=tmp)
        seconds = time.perf_counter() - start
        if out.returncode != 0:
            print(out.stdout, out.stderr, sep="\n")
            return 1
        rows = sum(1 for _ in (Path(tmp) / "grades.csv").open()) - 1
    cores = len(os.sched_getaffinity(0))
    verdict = "under" if seconds < 60 else "OVER"
    line = (f"| {args.n} submissions{' (one hangs, --timeout 10)' if args.with_hang else ''} | "
            f"{args.jobs or cores} jobs on {cores} cores | {seconds:.1f} s | "
            f"{seconds / args.n * 1000:.0f} ms per submission | {verdict} the 60 s target |")
    print(line)
    assert rows == args.n, f"graded {rows}, expected {args.n}"
    if args.write:
        results = REPO / "bench" / "RESULTS.md"
        head = "" if results.exists() else "# Benchmark results\n"
        with results.open("a", encoding="utf-8") as f:
            if "## agentos grade" not in (results.read_text(encoding="utf-8") if results.exists() else ""):
                f.write(f"{head}\n## agentos grade (bench/bench_grade.py)\n\n"
                        "Each submission: static criteria + two sandboxed pytest runs (unshare, Landlock, "
                        "audit hook).\n\n| set | jobs | wall | per submission | target |\n"
                        "|---|---|---|---|---|\n")
            f.write(f"{line}  <!-- {platform.python_version()}, {time.strftime('%Y-%m-%d')} -->\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

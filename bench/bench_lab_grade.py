"""Benchmark `agentos lab grade` (run by hand, never in the test suite).

    python bench/bench_lab_grade.py [--n 100] [--jobs N] [--no-fork-server] [--write]

Writes N submissions of lab-01 in nbgrader's layout (submitted/<student>/lab-01-tools/
lab-01-tools.ipynb), every other one the solved notebook (full marks) and the released one
(every test fails), then times `agentos lab grade SUBMITTED --source` as a subprocess with
the default jobs (one per core). Goal from the issue: 100 submissions in under 60 s on 2
cores. Each submission gets a fresh kernel in a fresh sandbox, forked from the fork server
(labs/sandbox/forkserver.py) unless --no-fork-server. Besides the wall time it reports the CPU
time of the command and every process under it (kernels included: they are not all waited
for, so rusage would miss them), read from a cgroup v1 cpuacct group made for the run where
the machine lets it (as root), else not shown. --write appends the figure, with the
machine's load, to bench/RESULTS.md.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import os
import platform
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import nbformat

REPO = Path(__file__).resolve().parents[1]
LAB = REPO / "notebooks" / "labs" / "lab-01-tools" / "lab-01-tools.ipynb"


def generate(dest: Path, n: int) -> Path:
    """dest/submitted/<student>/lab-01-tools/lab-01-tools.ipynb for N students."""
    from agentos_kernel.labs.notebook.nbgrader_format import BEGIN_HIDDEN, END_HIDDEN, strip_region
    from agentos_kernel.labs.notebook.release import student_version

    source = nbformat.read(LAB, as_version=4)
    solved = nbformat.read(LAB, as_version=4)  # what a student who solved it hands in
    for cell in solved.cells:
        cell.source = strip_region(cell.source, BEGIN_HIDDEN, END_HIDDEN, None)[0]
    released = student_version(source)[0]
    submitted = dest / "submitted"
    for i in range(n):
        folder = submitted / f"2026{i:04d}" / LAB.stem
        folder.mkdir(parents=True)
        nbformat.write(solved if i % 2 == 0 else released, folder / LAB.name)
    return submitted


CPUACCT = Path("/sys/fs/cgroup/cpuacct")


@contextlib.contextmanager
def cpu_group() -> Iterator[Path | None]:
    """A cpuacct cgroup for the benchmarked command (None where one cannot be made)."""
    group = CPUACCT / f"bench-lab-grade-{os.getpid()}"
    try:
        group.mkdir()
    except OSError:
        yield None
        return
    try:
        yield group
    finally:
        with contextlib.suppress(OSError):
            group.rmdir()


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=100)
    parser.add_argument("--jobs", type=int)
    parser.add_argument("--no-fork-server", action="store_true", help="start each kernel from scratch")
    parser.add_argument("--write", action="store_true", help="append the figure to bench/RESULTS.md")
    args = parser.parse_args()
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="bench-lab-grade-") as tmp:
        submitted = generate(Path(tmp), args.n)
        argv = [sys.executable, "-m", "agentos_kernel.cli.main", "lab", "grade", str(submitted),
                "--source", str(LAB), "--out", str(Path(tmp) / "out"), "--no-progress"]
        argv += ["--jobs", str(args.jobs)] if args.jobs else []
        argv += ["--no-fork-server"] if args.no_fork_server else []
        with cpu_group() as group:
            def join() -> None:  # in the child, before exec: everything it starts is counted
                if group is not None:
                    (group / "cgroup.procs").write_text("0\n")

            start = time.perf_counter()
            graded = subprocess.run(argv, capture_output=True, text=True, cwd=tmp, check=False,
                                    preexec_fn=join)
            seconds = time.perf_counter() - start
            cpu = int((group / "cpuacct.usage").read_text()) / 1e9 if group is not None else None
        if graded.returncode:
            sys.exit(f"agentos lab grade exited {graded.returncode}:\n{graded.stdout}{graded.stderr}")
        with (Path(tmp) / "out" / "gradebook.csv").open(encoding="utf-8", newline="") as f:
            totals = [r["total"] for r in csv.DictReader(f)]
    load_after = os.getloadavg()[0]
    cores = len(os.sched_getaffinity(0))
    assert len(totals) == args.n, f"graded {len(totals)}, expected {args.n}"
    assert sorted(set(totals)) == ["0", "15"], f"unexpected totals {sorted(set(totals))}"
    verdict = "under" if seconds < 60 else "OVER"
    how = "kernels from scratch" if args.no_fork_server else "fork server + readiness client"
    cpu_text = f"{cpu:.1f} s ({cpu / args.n * 1000:.0f} ms each)" if cpu is not None else "n/a"
    # the row format of bench/RESULTS.md's "With the fork server" table (N = 100 there)
    line = (f"| {how} | {args.jobs or cores} | {seconds:.1f} s | {cpu_text} | {verdict} | "
            f"{load_before:.1f} -> {load_after:.1f} |")
    print(f"{args.n} lab-01 submissions (half solved, half as released) on {cores} cores:")
    print(line)
    if args.write:
        results = REPO / "bench" / "RESULTS.md"
        text = results.read_text(encoding="utf-8") if results.exists() else "# Benchmark results\n"
        with results.open("a", encoding="utf-8") as f:
            if "### bench_lab_grade.py --write" not in text:
                f.write("\n### bench_lab_grade.py --write\n\n"
                        "Lab-01 submissions (half solved, half as released), a fresh sandboxed kernel each.\n"
                        "\n"
                        "| how | jobs | wall | CPU (all processes) | goal | load |\n"
                        "|---|---|---|---|---|---|\n")
            f.write(f"{line}  <!-- n={args.n}, {platform.python_version()}, "
                    f"{time.strftime('%Y-%m-%d %H:%M')} UTC -->\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""What verify's fast loop (integrity_scan.Scan.run) costs a line above the orjson + sha256
fold, part by part (issue 24, bench/RESULTS.md "Session 5, scan3"): run by hand, never in the
test suite.

    python bench/bench_scan_parts.py [--events 100000] [--rounds 7]      # CPU time, interleaved
    python bench/bench_scan_parts.py --count PART [--events 20000]       # instructions (valgrind)

Each part is a pass over a `write_long_session` log that is known good (no general way, no
forgery: a stripped copy of Scan.run's loop, each level adding one group of its work):

- `cut`: `orjson.loads` and the chain hash with the chain member cut out, read 64 KiB at a time;
- `canonical`: + the canonical re-encode compared with the line (docs/log-format.md);
- `fields`: + zip with the expected seq and writer's id, the ten fields read at once;
- `types`: + the type's step looked up (and called: None here, as for a counted type);
- `checks`: + the envelope tests as Scan.run makes them (seq and its type, ten keys, the
  session id, ts a string, the writer's id);

beside the fold (bench_scale.chain_fold), `verify_log` and `replay --summary` (verify_log
folding summary._BoundedFold, then its summary: what Runtime.verified_summary does).
`--count PART` prints the instructions a line of that part: the slope between a child reading
the log once and three times under `valgrind --tool=callgrind` (start and imports cancel
out). valgrind does not expose SHA-NI, so there OpenSSL hashes in software: the counts rank
the Python and orjson parts, the clock weighs the hash.
"""

from __future__ import annotations

import argparse
import hashlib
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from itertools import count
from operator import itemgetter
from pathlib import Path

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_scale import chain_fold

from agentos_kernel.store.integrity import verify_log
from agentos_kernel.store.integrity_seen import writer_ids
from agentos_kernel.store.replay.summary import _BoundedFold
from agentos_kernel.testing import write_long_session

_LINE = orjson.OPT_SORT_KEYS | orjson.OPT_APPEND_NEWLINE
_TEN = itemgetter("seq", "id", "session_id", "actor", "ts", "type", "chain", "parent_id", "payload",
                  "schema_version")
LEVELS = ("cut", "canonical", "fields", "types", "checks")


def _heads(log: Path) -> tuple[dict[str, tuple[bytes, int]], dict[str, None]]:
    """Each actor's canonical line start and cut (as Scan._remember), each type's step (None)."""
    heads: dict[str, tuple[bytes, int]] = {}
    steps: dict[str, None] = {}
    with log.open("rb") as f:
        for raw in f:
            obj = orjson.loads(raw)
            head = b'{"actor":' + orjson.dumps(obj["actor"])
            heads[obj["actor"]], steps[obj["type"]] = (head, len(head) + 75), None
    return heads, steps


def part(level: str, log: Path) -> Callable[[], None]:
    """One pass over `log` doing the work of `level` and every level before it."""
    heads, steps = _heads(log)
    k = LEVELS.index(level)
    loads, dumps, sha = orjson.loads, orjson.dumps, hashlib.sha256

    def run() -> None:
        with log.open("rb", buffering=1 << 16) as f:
            first = loads(f.readline())
            link, sid, top = first["chain"].encode(), first["session_id"], ""
            for raw, want, e in zip(f, count(2), writer_ids(("e", "07d"), 2)):
                obj = loads(raw)
                if k >= 2:
                    q, i, s, a, ts, t, chain, _, _, _ = _TEN(obj)
                else:
                    a, chain = obj["actor"], obj["chain"]
                head, cut = heads[a]
                step = steps[t] if k >= 3 else None
                if k >= 4 and (q != want or type(q) is not int or len(obj) != 10 or s != sid
                               or type(ts) is not str or i != e or i <= top):
                    raise AssertionError(want)
                if k >= 1 and dumps(obj, option=_LINE) != raw:
                    raise AssertionError(want)
                if sha(link + head + raw[cut:-1]).hexdigest() != chain:
                    raise AssertionError(want)
                if step is not None:
                    step(obj)
                link = chain.encode()
    return run


def arms(log: Path) -> dict[str, Callable[[], None]]:
    def summary() -> None:
        fold = _BoundedFold(20)
        assert verify_log(log, fold=fold).ok
        fold.summary()
    return {"fold": lambda: chain_fold(log), **{lv: part(lv, log) for lv in LEVELS},
            "verify_log": lambda: verify_log(log) and None, "replay --summary": summary}


def timed(log: Path, rounds: int) -> None:
    runs = arms(log)
    times: dict[str, list[float]] = {k: [] for k in runs}
    for r in range(rounds):
        names = list(runs)
        for name in names[r % len(names):] + names[:r % len(names)]:
            t = time.process_time()
            runs[name]()
            times[name].append(time.process_time() - t)
    print("load average", " ".join(Path("/proc/loadavg").read_text().split()[:3]))
    print("| part | vs the fold, min / median |\n|---|---|")
    for name in list(runs)[1:]:
        ratios = [t / f for t, f in zip(times[name], times["fold"], strict=True)]
        print(f"| {name} | {min(ratios):.2f} / {statistics.median(ratios):.2f} |")


def counted(name: str, log: Path, events: int) -> None:
    """Instructions a line of arm `name`: the slope of 1 and 3 passes under callgrind."""
    child = ("import sys; sys.path.insert(0, sys.argv[1]); from pathlib import Path; import bench_scan_parts"
             " as b; run = b.arms(Path(sys.argv[2]))[sys.argv[3]]; [run() for _ in range(int(sys.argv[4]))]")
    got = []
    for passes in (1, 3):
        argv = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable, "-c",
                child, str(Path(__file__).resolve().parent), str(log), name, str(passes)]
        out = subprocess.run(argv, capture_output=True, text=True, check=True).stderr
        got.append(int(out.split("Collected :")[1].split()[0]))
    print(f"{name}: {(got[1] - got[0]) / 2 / events / 1000:.1f}k instructions a line")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--events", type=int, default=None, help="events (default 100000; 20000 with --count)")
    ap.add_argument("--rounds", type=int, default=7, help="interleaved rounds (default 7)")
    ap.add_argument("--count", metavar="PART", help="count one arm's instructions (fold, cut, ...)")
    args = ap.parse_args()
    events = args.events or (20_000 if args.count else 100_000)
    with tempfile.TemporaryDirectory(prefix="agentos-parts-") as tmp:
        log = write_long_session(Path(tmp), "parts", events)
        counted(args.count, log, events) if args.count else timed(log, args.rounds)


if __name__ == "__main__":
    main()

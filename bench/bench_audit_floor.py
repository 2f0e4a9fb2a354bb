"""The floor of `agentos audit`'s own design against the orjson + sha256 fold, in CPU
instructions (valgrind's callgrind) and in CPU time (issue 24; run by hand, never in the tests).

    python bench/bench_audit_floor.py [--sizes 10000,100000,1000000] [--rounds 20,5,3]
                                      [--ir-events 10000] [--no-ir | --no-time]

Each arm does all that the one above it does, and one thing more, on the same
`write_long_session` log (the reference request repeated, counter ids, chained), the way
`audit_log` does it (labs/audit/chunks.py), so the step from one row to the next is what
that thing costs:

- fold: `bench_scale.chain_fold`, the baseline of the goal (each line read, `orjson.loads`,
  `sha256(previous digest + line)`);
- read: the audit's reader (`chunks.chunks`: 64 KiB at a time, split into lines);
- parse: `orjson.loads` of each line (each line one JSON value: the trap of SESSION4.md);
- canonical: one `orjson.dumps(..., OPT_SORT_KEYS)` of the chunk's events compared with its
  joined lines (each line its event's canonical bytes: what the chain is defined over,
  docs/log-format.md);
- chain: each line's `sha256(previous chain + the line without its chain)` compared with its
  `chain`;
- envelope: what `chunks.take` checks per chunk in C: the keys (one set), the ten columns,
  the seqs a range, the counter ids, one session, `v1`, the strings, the payload objects;
- parents: each `parent_id` an event read before (the per-event loop's check);
- flow reads: only reading what the flow checks read (each hook's name and decision, each
  transition's from and to, each request's and answer's call id: C-level maps per chunk),
  none of the checks themselves;
- flow calls: a call that does nothing, with a flow handler's arguments, for each event of a
  type that has a handler (what dispatching to `FlowFold.handlers` costs before any body);
- audit: `audit_log` itself (every check, the report).

Instructions: the slope between two children under `valgrind --tool=callgrind`
(`PYTHONHASHSEED=0`) running the arm once and three times after a first run, divided by
the lines (interpreter start, imports and warm-up cancel out). Time: CPU time of each arm in
interleaved rounds (the order reversed every other round), the ratio to the fold taken in
each round, min / median. The counts weigh every instruction alike (a cache miss counts
nothing), so the timed ratio is what the goal is stated in and the counted one what does not
move with the load. bench/RESULTS.md "Session 5, audit4" is its output.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from itertools import chain, compress, repeat
from operator import eq
from pathlib import Path

import orjson

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_scale import chain_fold  # noqa: E402

from agentos_kernel.labs.audit.chunks import KEYS, chunks  # noqa: E402
from agentos_kernel.labs.audit.ids import id_form  # noqa: E402
from agentos_kernel.labs.audit.log import audit_log  # noqa: E402

_loads, _dumps, _SORT, _sha = orjson.loads, orjson.dumps, orjson.OPT_SORT_KEYS, hashlib.sha256
_KEYSET = frozenset(KEYS)
_CHAIN_KEY = b',"chain":"'
STEPS = ("read", "parse", "canonical", "chain", "envelope", "parents", "flow reads", "flow calls")
_HANDLED = dict.fromkeys(("llm.request", "llm.response", "llm.error", "tool.invoke", "tool.result",
                          "agent.transition", "hook.fired"))
_NONE: dict[str, None] = {}


class Broken(Exception):
    """A check of an arm failed: the log is not the bench's (each arm checks, so none is
    cheaper than it says)."""


def floor(path: Path, upto: str) -> None:
    """The audit's design up to and including step `upto` (STEPS) over the log at `path`."""
    level = STEPS.index(upto)
    prev, e, sid, form = b"", 1, None, ("", "")
    with path.open("rb") as f:
        for lines, _ in chunks(f.read):
            if level < 1:
                continue
            objs = list(map(_loads, lines))
            if level < 2:
                continue
            enc, joined = _dumps(objs, option=_SORT), b",".join(lines)
            if len(enc) != len(joined) + 2 or not enc.startswith(joined, 1):
                raise Broken("a line is not its event's canonical bytes")
            if level < 3:
                continue
            if level < 4:  # the chain alone: its place found in each line
                for line, obj in zip(lines, objs, strict=True):
                    c, k = obj["chain"], line.find(_CHAIN_KEY)
                    if _sha(prev + line[:k] + line[k + 75:]).hexdigest() != c:
                        raise Broken("chain")
                    prev = c.encode()
                continue
            prev, e, sid, form = _envelope(lines, objs, level, prev, e, sid, form)


def _envelope(lines: list[bytes], objs: list[dict], level: int, prev: bytes, e: int, sid: object,
              form: tuple[str, str]) -> tuple:
    """The envelope's checks per chunk (as chunks.take makes them), then the chain (and the
    parents, and the flow reads) per event."""
    m = len(lines)
    if not set(chain.from_iterable(objs)) <= _KEYSET:
        raise Broken("keys")
    actor, digest, eid, pid, payload, version, seq, sids, ts, typ = zip(*map(dict.values, objs), strict=True)
    if sid is None:
        sid, form = sids[0], id_form(eid[0], seq[0]) or ("", "")
    seqs = range(e, e + m)
    tmpl = form[0].replace("%", "%%") + "%" + form[1] + "\n"
    if "\n".join(eid) + "\n" != (tmpl * m) % tuple(seqs):
        raise Broken("ids")
    if seq != tuple(seqs) or type(sum(seq)) is not int or sids.count(sid) != m or version.count("v1") != m:
        raise Broken("seq, session or version")
    "".join(ts)
    actors, types = "".join(actor), set(typ)
    if not all(type(t) is str and t for t in types):
        raise Broken("type")
    if not (actors.isascii() and actors.isprintable() and '"' not in actors and "\\" not in actors):
        raise Broken("actor")
    if list(map(type, payload)).count(dict) != m:
        raise Broken("payload")
    at = [11 + len(a) for a in actor]
    if level < 5:
        for line, k, c in zip(lines, at, digest, strict=True):
            if _sha(prev + line[:k] + line[k + 75:]).hexdigest() != c:
                raise Broken("chain")
            prev = c.encode()
    else:
        prev = _parents(lines, at, digest, pid, eid, typ, payload, prev, e, form, level >= 7)
    if level >= 6:
        of = {t: list(compress(payload, map(eq, typ, repeat(t))))
              for t in ("hook.fired", "agent.transition", "llm.request", "llm.response")}
        for t, keys in (("hook.fired", ("hook", "decision")), ("agent.transition", ("from", "to")),
                        ("llm.request", ("call_id",)), ("llm.response", ("call_id",))):
            for key in keys:
                list(map(dict.get, of[t], repeat(key)))
    return prev, e + m, sid, form


def _parents(lines: list[bytes], at: list[int], digest: tuple, pid: tuple, eid: tuple, typ: tuple,
             payload: tuple, prev: bytes, e: int, form: tuple[str, str], calls: bool) -> bytes:
    """The chain and the parents event by event; with `calls`, also a call doing nothing per
    event of a type with a flow handler, in the same loop (the dispatch alone)."""
    (prefix, fmt), s = form, e - 1
    width, handled = len(prefix), _HANDLED if calls else _NONE
    for line, k, c, par, t, i, p in zip(lines, at, digest, pid, typ, eid, payload, strict=True):
        if _sha(prev + line[:k] + line[k + 75:]).hexdigest() != c:
            raise Broken("chain")
        if par is not None:
            j = int(par[width:])
            # every seq below e was read, each with its counter id (the chunks before)
            if not (0 < j <= s and par == (eid[j - e] if j >= e else prefix + format(j, fmt))):
                raise Broken("parent")
        s += 1
        prev = c.encode()
        if t in handled:  # (an empty dict but for the flow calls)
            _noop(t, i, par, p, s, s, s)
    return prev


def _noop(t: str, i: str, par: object, p: dict, x: int, n: int, pos: int) -> None:
    """What a flow handler costs before its body (FlowFold.handlers' signature)."""


def arms(path: Path) -> dict[str, Callable[[], object]]:
    got: dict[str, Callable[[], object]] = {"fold": lambda: chain_fold(path)}
    for step in STEPS:
        got[step] = lambda step=step: floor(path, step)
    got["audit"] = lambda: audit_log(path)
    return got


def child(arm: str, times: int, log: str) -> None:
    """What one counted interpreter runs: the arm once, then `times` more."""
    run = arms(Path(log))[arm]
    for _ in range(times + 1):
        run()


def instructions(arm: str, times: int, log: Path) -> int:
    argv = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable,
            str(Path(__file__).resolve()), "--child", arm, str(times), str(log)]
    err = subprocess.run(argv, capture_output=True, text=True, check=True,
                         env={**os.environ, "PYTHONHASHSEED": "0"}).stderr
    counted = re.findall(r"Collected : (\d+)", err)
    if not counted:
        raise SystemExit(f"valgrind counted nothing:\n{err[-2000:]}")
    return int(counted[-1])


def load() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def lines_of(log: Path) -> int:
    with log.open("rb") as f:
        return sum(1 for _ in f)


def count_rows(log: Path) -> list[str]:
    n = lines_of(log)
    per = {}
    for arm in arms(log):
        per[arm] = (instructions(arm, 3, log) - instructions(arm, 1, log)) / 2 / n
        print(f"counted {arm}: {per[arm]:.0f} instructions a line; load average {load()}", file=sys.stderr)
    rows = [f"| {arm} | {v:,.0f} | {v - per.get(prev, 0) if prev else v:,.0f} | {v / per['fold']:.3f}x |"
            for prev, (arm, v) in zip([None, None, *per][1:], per.items(), strict=False)]
    return [f"Instructions (callgrind), {n:,} events, per line:", "",
            "| arm (each does all above it) | instructions a line | this step | / fold |",
            "|---|---|---|---|", *rows, ""]


def time_rows(log: Path, rounds: int) -> list[str]:
    n, todo = lines_of(log), arms(log)
    for run in todo.values():
        run()
    got: dict[str, list[float]] = {arm: [] for arm in todo}
    for r in range(rounds):
        for arm, run in list(todo.items())[:: 1 if r % 2 else -1]:
            t0 = time.process_time()
            run()
            got[arm].append(time.process_time() - t0)
    fold = got["fold"]
    rows = []
    for arm, ts in got.items():
        ratios = [t / f for t, f in zip(ts, fold, strict=True)]
        rows.append(f"| {arm} | {n:,} | {statistics.median(ts):.3f} | {min(ratios):.3f}x / "
                    f"{statistics.median(ratios):.3f}x |")
    return rows


def main() -> None:
    if len(sys.argv) == 5 and sys.argv[1] == "--child":
        child(sys.argv[2], int(sys.argv[3]), sys.argv[4])
        return
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="10000,100000,1000000", help="events per timed log")
    ap.add_argument("--rounds", default="20,5,3", help="interleaved rounds at each size")
    ap.add_argument("--ir-events", type=int, default=10000, help="events of the counted log")
    ap.add_argument("--no-ir", action="store_true", help="time only (no valgrind)")
    ap.add_argument("--no-time", action="store_true", help="count only")
    args = ap.parse_args()
    from agentos_kernel.testing import write_long_session

    if not args.no_ir and shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not on PATH (apt-get install valgrind), or pass --no-ir")
    out = [f"load average before: {load()}", ""]
    with tempfile.TemporaryDirectory(prefix="agentos-audit-floor-") as tmp:
        if not args.no_ir:
            out += count_rows(write_long_session(Path(tmp), "counted", args.ir_events))
        if args.no_time:
            args.sizes = ""
        out += ["CPU time, interleaved rounds; ratio to the fold per round:", "",
                "| arm (each does all above it) | events | median (CPU s) | / fold (min / median) |",
                "|---|---|---|---|"]
        sizes = [int(x) for x in args.sizes.split(",") if x]
        for n, k in zip(sizes, (int(x) for x in args.rounds.split(",")), strict=False):
            log = write_long_session(Path(tmp), f"long{n}", n)
            out += time_rows(log, k)
            log.unlink()
            print(f"timed {n:,} events; load average {load()}", file=sys.stderr)
    out += ["", f"load average after: {load()}"]
    print("\n".join(out))


if __name__ == "__main__":
    main()

"""The request's instructions by removal, and each form of redaction's, counted (callgrind).

Where the canonical request's instructions go above its hand-written floor, and what each form
of a redaction decision costs: the measurements behind RESULTS.md's "Session 5, hotpath4" (run
by hand, never in the test suite; needs `valgrind` on PATH).

    python bench/bench_request_parts.py [--calls 10] [--only request,parts,redaction]

Counted like bench_request_ir.py: callgrind (`PYTHONHASHSEED=0`), the slope between a child
making `--calls` calls and one making four times as many after five warm ones, the child run
once outside valgrind first; instructions per call, load-independent.

- `request` arms: the request (`Runtime.handle_user_request` at `fsync: never`, bench_floor's)
  with one part made free by a monkeypatch, the difference from the whole request being that
  part's cost: `redact` (the session log's redaction walk returns its input), `schema` (every
  schema check says valid), `clock` (the clock's `now` and the counted ids return a constant),
  `json` (role messages' stdlib `json` text made by orjson), `model` (the scripted provider's
  five answers replayed from a warm call), `all` (the five at once); plus `floor`
  (bench_floor's `floor_writer`) and `appends` (the 32 `SessionLog.append` calls of the
  request, their payloads captured from a warm call, with a store claim and close: the log's
  writer alone, no flow, no model, no hooks); an arm may join parts with `+`
  (`appends+redact+schema+clock`: the writer alone without the three).
- `redaction` arms (one pass over the 32 payloads of sessions/example, the clean strings
  warm): `walk` (what the session log runs, `redaction._plain`), `readonly` (a walk that only
  decides, plus `orjson.dumps` of the payload as the snapshot an Event would parse on first
  read), `finds` (the payload's bytes encoded, lowered, digits folded, then one `in` per
  literal the secret shapes' hints reduce to: the over-approximation an exact fast path would
  need), `encode` (`orjson.dumps` alone), `none` (the loop).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent

REQUEST = r"""
import sys, itertools, copy
sys.path.insert(0, sys.argv[1])
from pathlib import Path
import orjson
from bench_peers import CANONICAL, workspaces
from bench_floor import floor_writer
from agentos_kernel import Runtime
mode, calls, tmp = sys.argv[2], int(sys.argv[3]), Path(sys.argv[4])
_, ws = workspaces(tmp)
parts = set(mode.split("+"))
free = {"redact", "schema", "clock", "json", "model"} if "all" in parts else parts
if "redact" in free:
    from agentos_kernel.store import redaction
    redaction.Redactor.bound = lambda self: (lambda v: v)
if "schema" in free:
    from agentos_kernel.errors import Ok
    from agentos_kernel.schemas import registry
    registry.SchemaRegistry.validity = lambda self, sid: (lambda p: True)
    registry.SchemaRegistry.validate = lambda self, p, sid, loggable=True: Ok(p)
if "clock" in free:
    from agentos_kernel import clock
    for c in (clock.SystemClock, clock.LogicalClock):
        c.now = lambda self: "2026-01-01T00:00:00.000Z"
    clock.CounterIds.event_id = lambda self, s, n: "x"
if "json" in free:
    from agentos_kernel.schemas import jsontext
    jsontext.dumps = lambda obj, **kw: orjson.dumps(obj).decode()
if mode == "floor":
    run = floor_writer(tmp / "floor")
else:
    rt = Runtime.from_workspace(ws)
    from agentos_kernel.providers import scripted
    from agentos_kernel.store.recorder import SessionLog
    if "model" in free:
        real, seen = scripted.ScriptedProvider.complete, []
        scripted.ScriptedProvider.complete = lambda self, req: seen.append(real(self, req)) or seen[-1]
        rt.handle_user_request(CANONICAL)
        answers = itertools.cycle(list(seen))
        scripted.ScriptedProvider.complete = lambda self, req: next(answers)
    if "appends" in parts:
        from agentos_kernel.clock import CounterIds, LogicalClock
        real_append, calls_seen = SessionLog.append, []
        def capture(self, type, actor, payload, parent_id=None):
            calls_seen.append((type, actor, copy.deepcopy(payload), parent_id))
            return real_append(self, type, actor, payload, parent_id)
        SessionLog.append = capture
        rt.handle_user_request(CANONICAL)
        SessionLog.append = real_append
        ids = itertools.count(1)
        def run():
            sid = f"a{next(ids):05d}"
            rt.store.create(sid)
            log = SessionLog(rt.store, rt.schemas, LogicalClock(), CounterIds(), sid,
                             **rt.redaction())
            for type, actor, payload, parent in calls_seen:
                log.append(type, actor, payload, parent)
            log.close()
    else:
        def run():
            assert rt.handle_user_request(CANONICAL).value.output == "Hello, Ada!"
for _ in range(5):
    run()
for _ in range(calls):
    run()
"""

REDACTION = r"""
import sys
from pathlib import Path
import orjson
from agentos_kernel.store.redaction import CLEAN, _LEAVES, _plain
from agentos_kernel.workspace import reference_dir
mode, calls = sys.argv[1], int(sys.argv[2])
log = reference_dir() / "sessions" / "example" / ".events.jsonl"
payloads = [orjson.loads(line)["payload"] for line in log.read_bytes().splitlines()]
ENDS = ("sword", "asswd", "hrase", "ecret", "token", "ation", "ntial", "tials", "pwd", "key")
NEEDLES = [b"-----begin", b"yj", b"bearer", b"basic", b"://", b"3t", b"kia", b"sia", b"bia",
           b"cca", b"cret", b"ghp_", b"gho_", b"ghu_", b"ghs_", b"ghr_", b"github_pat_", b"xox",
           b"xapp-", b".slack.com", b"k_live_", b"k_test_", b"whsec_", b"za", b"k-",
           b"0000000", b"000 0000", b"000-0000", b":null", b"[null", b",null",
           *(e.encode() + q for e in ENDS for q in (b'":', b"\\"))]
DIGITS = bytes.maketrans(b"0123456789", b"0" * 10)
STRICT = (orjson.OPT_PASSTHROUGH_SUBCLASS | orjson.OPT_PASSTHROUGH_DATACLASS
          | orjson.OPT_PASSTHROUGH_DATETIME)
KNOWN, KEYS = CLEAN.known, CLEAN.keys
def clean(value):
    t = type(value)
    if t is dict:
        if not KEYS.issuperset(value):
            return False
        values = value.values()
    elif t is list or t is tuple:
        values = value
    else:
        return (t is str and value in KNOWN) or (t in _LEAVES and value == value)
    for v in values:
        t = type(v)
        if t is str:
            if v not in KNOWN:
                return False
        elif t is float:
            if v != v:
                return False
        elif t not in _LEAVES and not clean(v):
            return False
    return True
def finds(p):
    b = orjson.dumps(p, option=STRICT)
    if not b.isascii() or b == b"null":
        return None
    t = b.lower().translate(DIGITS)
    for n in NEEDLES:
        if n in t:
            return None
    return b
arm = {"walk": lambda p: _plain(p, CLEAN), "readonly": lambda p: clean(p) and orjson.dumps(p),
       "finds": finds, "encode": orjson.dumps, "none": lambda p: None}[mode]
for p in payloads:
    _plain(p, CLEAN)  # the clean strings warm, as in a session's later requests
for _ in range(5 + calls):
    for p in payloads:
        arm(p)
"""


def count(argv: list[str], cwd: str) -> int:
    """Instructions (callgrind's Ir) of one child interpreter."""
    stderr = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null",
                             *argv], capture_output=True, text=True, check=True, cwd=cwd,
                            env={**os.environ, "PYTHONHASHSEED": "0"}).stderr
    counted = re.findall(r"Collected : (\d+)", stderr)
    if not counted:
        raise SystemExit(f"valgrind counted nothing:\n{stderr[-2000:]}")
    return int(counted[-1])


def per_call(script: str, before: list[str], calls: int, *, folder: bool) -> float:
    """Instructions per call: the slope between `calls` and `4 * calls` calls. The child's
    argv: `before`, the number of calls, then (with `folder`) its working folder, a new one
    for each child as in bench_request_ir.py."""
    def counted(n: int, *, valgrind: bool = True) -> int:
        with tempfile.TemporaryDirectory(prefix="agentos-ir-") as tmp:
            argv = [sys.executable, "-c", script, *before, str(n), *([tmp] if folder else [])]
            if not valgrind:
                subprocess.run(argv, check=True, cwd=tmp, capture_output=True)
                return 0
            return count(argv, tmp)
    # once outside valgrind: both counted runs then read the same bytecode caches
    counted(0, valgrind=False)
    return (counted(4 * calls) - counted(calls)) / (3 * calls)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=10, help="calls in the shorter run (default 10)")
    ap.add_argument("--only", default="request,parts,redaction",
                    help="comma-separated: request (whole, floor, appends), parts, redaction")
    ap.add_argument("--arms", default="",
                    help="request arms to count instead of --only's (comma-separated, e.g. "
                         "base,appends+redact+schema+clock)")
    args = ap.parse_args()
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not on PATH (apt-get install valgrind)")
    only = set(args.only.split(","))
    rows: list[tuple[str, float]] = []
    arms = [*(["base", "floor", "appends"] if "request" in only else []),
            *(["redact", "schema", "clock", "json", "model", "all"] if "parts" in only else [])]
    if args.arms:
        arms, only = args.arms.split(","), set()
    for arm in arms:
        rows.append((arm, per_call(REQUEST, [str(HERE), arm], args.calls, folder=True)))
        print(f"{arm}: {rows[-1][1] / 1e6:.3f} M", file=sys.stderr, flush=True)
    whole = dict(rows).get("base")
    print("| arm | M instructions per call | the request less this arm |\n|---|---|---|")
    for arm, n in rows:
        part = whole and arm not in ("base", "floor") and "appends" not in arm
        less = f"{(whole - n) / 1e6:.3f}" if part else ""
        print(f"| {arm} | {n / 1e6:.3f} | {less} |")
    if "redaction" in only:
        print("\n| redaction form (32 payloads) | M instructions per pass |\n|---|---|")
        for arm in ("none", "walk", "readonly", "finds", "encode"):
            n = per_call(REDACTION, [arm], args.calls, folder=False)
            print(f"| {arm} | {n / 1e6:.3f} |", flush=True)


if __name__ == "__main__":
    main()

"""The redactor on the hot path (issue 20): run by hand, never in the test suite.

    python bench/bench_redaction.py [--quick]

Measures, interleaved in one process: the canonical request ("hello, greet Ada" on the
scripted profile, fsync never) on a warm Runtime, the same with a new prompt each time (so
the strings that carry it are new to the redactor's cache); `redact()` on the llm.request payloads
of that request, warm (every string already known clean, the common case) and cold (the
clean-string cache emptied before each call: every string scanned); and the prefilter
scan alone over those payloads' strings. To compare with an older tree, run it with that
tree first on PYTHONPATH.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from agentos_kernel import Runtime
from agentos_kernel.cli.main import main as cli_main
from agentos_kernel.store import redaction


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield k
            yield from _strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)


def _median_us(fn: Callable[[], Any], n: int, before: Callable[[], Any] = lambda: None) -> float:
    times = []
    for _ in range(n):
        before()
        t = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t) * 1e6)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer iterations")
    n = 50 if ap.parse_args().quick else 400
    with tempfile.TemporaryDirectory() as tmp:
        ws = Path(tmp) / "ws"
        cli_main(["init", str(ws)])
        cfg = ws / "agentos.yaml"
        cfg.write_text(cfg.read_text().replace("deterministic: true",
                                               "deterministic: true\n    fsync: never", 1))
        rt = Runtime.from_workspace(ws)
        rt.handle_user_request("hello, greet Ada")
        log = sorted((ws / "sessions").glob("*/.events.jsonl"))[-1]
        events = [json.loads(line) for line in log.read_text().splitlines()]
        payloads = [e["payload"] for e in events if e["type"] == "llm.request"]
        everything = [e["payload"] for e in events]
        texts = list({s for p in everything for s in _strings(p)})
        clear = redaction.CLEAN.known.clear  # dict keys stay known: a new request, same shape
        counter = iter(range(10**9))
        rows = {"canonical request (ms)": [],
                "the request with a new prompt each time (ms)": [],
                "redact(llm.request payloads), warm (µs)": [],
                "redact(llm.request payloads), cold (µs)": [],
                "redact(all 32 payloads), warm (µs)": [],
                "prefilter over the request's distinct strings (µs)": []}
        for _ in range(5):  # rounds, so a burst of load hits every row alike
            rows["canonical request (ms)"].append(
                _median_us(lambda: rt.handle_user_request("hello, greet Ada"), n // 5) / 1000)
            rows["the request with a new prompt each time (ms)"].append(_median_us(
                lambda: rt.handle_user_request(f"hello, greet Ada, order {next(counter)}"),
                n // 5) / 1000)
            rows["redact(llm.request payloads), warm (µs)"].append(
                _median_us(lambda: [redaction.redact(p) for p in payloads], n))
            rows["redact(llm.request payloads), cold (µs)"].append(
                _median_us(lambda: [redaction.redact(p) for p in payloads], n, clear))
            rows["redact(all 32 payloads), warm (µs)"].append(
                _median_us(lambda: [redaction.redact(p) for p in everything], n))
            scan = getattr(redaction, "maybe_secret", None) or redaction._MAYBE_SECRET.search
            rows["prefilter over the request's distinct strings (µs)"].append(
                _median_us(lambda scan=scan: [scan(s) for s in texts], n))
        print(f"{len(payloads)} llm.request payloads, {len(everything)} events, "
              f"{len(texts)} distinct strings ({sum(map(len, texts))} characters)")
        for name, values in rows.items():
            print(f"{name:52} {statistics.median(values):9.2f}   (rounds: "
                  + ", ".join(f"{v:.2f}" for v in values) + ")")


if __name__ == "__main__":
    main()

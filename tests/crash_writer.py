"""The child process of tests/test_crash_safety.py (not a test module).

`python crash_writer.py WORKSPACE SEED MODE` opens a new session in WORKSPACE and appends
tool.invoke / tool.result pairs, small and large, until it is killed. MODE `log` appends
through the whole writer (Runtime.open_session -> SessionLog: redaction, schema check,
chain -> JsonlEventStore.append); MODE `store` hands JsonlEventStore.append events chained
ahead of time, so most of the time is spent writing and a kill tears lines far more often.

It prints the session id, then `> N` before it appends event N and `= N` once the append
has returned, each flushed: the parent knows what was appended before the kill (an event
may be on disk and not yet reported `=`, never the reverse) and can aim a kill inside an
append.
"""

from __future__ import annotations

import hashlib
import random
import sys
import time
from collections.abc import Iterator
from typing import Any

from agentos_kernel import Runtime
from agentos_kernel.store.events import Event, chain_of

MAX_PAIRS = 2500
"""A bound, in case no kill comes; the parent kills long before."""
# Lines from tens of bytes to hundreds of kilobytes: a large one spans many pages, so a kill
# can land inside write() and tear it (the kernel checks for a fatal signal between pages).
SIZES = (40, 300, 2_000, 64_000, 200_000, 400_000)
TEXT = "".join(random.Random(0).choices("abcdefghij é—😀\"\\\n", k=4096)) * 256


def payloads(seed: int) -> Iterator[tuple[str, str, dict[str, Any], bool]]:
    """(type, actor, payload, answers the previous event) of every event after session.start."""
    rng = random.Random(seed)
    for i in range(1, MAX_PAIRS):
        size, at = rng.choice(SIZES), rng.randrange(len(TEXT) // 2)
        text = TEXT[at:at + size]
        yield "tool.invoke", "worker", {"id": f"t{i}", "name": "echo", "args": {"text": text}}, False
        yield ("tool.result", "tool:echo",
               {"id": f"t{i}", "name": "echo", "ok": True, "result": {"echoed": text}}, True)


def main(workspace: str, seed: int, mode: str) -> None:
    rt = Runtime.from_workspace(workspace)
    session = rt.open_session()
    log = session.log
    print(log.session_id, flush=True)
    prompt = f"crash run {seed}"
    print("> 1", flush=True)
    start = log.append("session.start", "user", {
        "prompt": prompt, "prompt_sha256": hashlib.sha256(prompt.encode()).hexdigest(),
        "profile": rt.profile.name, "provider": rt.profile.provider, "model": rt.profile.model,
        "deterministic": rt.profile.deterministic})
    print("= 1", flush=True)
    prev = start
    for type_, actor, payload, answers in payloads(seed):
        seq = prev.seq + 1
        parent = prev.id if answers else None
        if mode == "log":
            print(f"> {seq}", flush=True)
            prev = log.append(type_, actor, payload, parent)
        else:
            body = Event(f"{log.session_id}-e{seq:04d}", log.session_id, start.ts, type_, actor,
                         payload, "v1", parent, seq)
            event = Event(**{**body.to_dict(), "chain": chain_of(prev.chain, body)})
            print(f"> {seq}", flush=True)
            rt.store.append(event)
            prev = event
        print(f"= {seq}", flush=True)
    time.sleep(60)  # never reached in the test: the parent kills first


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), sys.argv[3])

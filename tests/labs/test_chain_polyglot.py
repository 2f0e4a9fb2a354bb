"""The hash chain is defined byte for byte (docs/log-format.md), so another language can
verify it: conformance/verify_chain.mjs recomputes it in plain Node, and its canonical form
equals orjson's on floats, big integers and non-ASCII text."""

from __future__ import annotations

import hashlib
import json
import random
import shutil
import struct
import subprocess
from pathlib import Path

import orjson
import pytest

from agentos_kernel.store.events import Event, canonical, chain_of, read_log, verify_chain

from ..helpers import REPO

NODE = shutil.which("node")
VERIFY = REPO / "conformance" / "verify_chain.mjs"
VECTOR = REPO / "conformance" / "chain_vector.jsonl"
DEMO = REPO / "sessions" / "example" / ".events.jsonl"
DOC = REPO / "docs" / "log-format.md"
needs_node = pytest.mark.skipif(NODE is None, reason="node is not installed: the JS verifier "
                                                     "cannot be run (the Python checks still run)")


def _node(*args: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run([NODE, VERIFY, *map(str, args)], capture_output=True, text=True,
                          encoding="utf-8", timeout=60, check=False)


def test_the_test_vector_chains_as_documented() -> None:
    events = list(read_log(VECTOR))
    assert verify_chain(events) is None
    first = {**events[0].to_dict()}
    first.pop("chain")
    assert chain_of(None, events[0]) == events[0].chain
    assert events[0].chain == hashlib.sha256(canonical(first)).hexdigest()
    doc = DOC.read_text(encoding="utf-8")
    for e in events:  # the doc shows the vector's canonical bytes and both chain values
        body = {k: v for k, v in e.to_dict().items() if k != "chain"}
        assert canonical(body).decode() in doc and e.chain in doc


def test_numbers_keep_their_int_or_float_form_in_the_canonical_bytes() -> None:
    e = Event("x", "s", "t", "hook.fired", "a", {"ms": 0.0, "n": 0, "c": 0.001227, "t": 1e-7,
                                                 "h": 1e21, "f": 1e-5, "k": "é😀"})
    body = canonical(e.to_dict()).decode()
    assert '"payload":{"c":0.001227,"f":0.00001,"h":1e+21,"k":"é😀","ms":0.0,"n":0,"t":1e-7}' in body


@needs_node
def test_node_verifies_our_demo_log_and_the_vector() -> None:
    for log in (DEMO, VECTOR):
        got = _node(log)
        assert got.returncode == 0, got.stdout + got.stderr
        assert "chain verified" in got.stdout


@needs_node
def test_node_names_the_edited_line_of_a_tampered_log(tmp_path: Path) -> None:
    lines = DEMO.read_bytes().splitlines(keepends=True)
    obj = orjson.loads(lines[23])
    obj["payload"]["output"] = "Hello, Eve!"
    lines[23] = orjson.dumps(obj, option=orjson.OPT_SORT_KEYS) + b"\n"
    tampered = tmp_path / "tampered.jsonl"
    tampered.write_bytes(b"".join(lines))
    got = _node(tampered)
    assert got.returncode == 1
    assert got.stdout.splitlines() == [f"{tampered}:24: seq 24: chain mismatch: this line, or the "
                                       "one before it, was edited, dropped or reordered"]


@needs_node
def test_node_canonical_form_equals_orjson_on_floats_ints_and_unicode(tmp_path: Path) -> None:
    rng = random.Random(20260101)

    def a_double() -> float:
        while True:
            x = struct.unpack("<d", rng.getrandbits(64).to_bytes(8, "little"))[0]
            if x == x and abs(x) != float("inf"):
                return x

    def a_text() -> str:
        ranges = ((0, 0x7F), (0x80, 0x7FF), (0x800, 0xD7FF), (0xE000, 0xFFFF), (0x10000, 0x10FFFF))
        return "".join(chr(rng.randint(*rng.choice(ranges))) for _ in range(rng.randint(0, 6)))

    values = [0.0, -0.0, 1.0, 0.001227, 1e-7, 1e21, 1e-5, 1e-6, 1e15, 1e16, 5e-324,
              1.7976931348623157e308, *(a_double() for _ in range(600)),
              *(rng.uniform(-1e6, 1e6) for _ in range(200))]
    # Sources spelled in other ways than orjson writes them: spaces, \u escapes, 1E-7, 1.0e2,
    # a big integer orjson reads as a float, -0.
    sources = [json.dumps({a_text(): v, "i": rng.randint(-2**63, 2**64 - 1), a_text(): [v, a_text()]},
                          ensure_ascii=rng.random() < 0.5) for v in values]
    sources += [f'{{"n":{n}}}' for n in ("1E-7", "1.0e2", "0.1e1", "-0", "-0.0", "1e+16",
                                          "123456789012345678901234567890")]
    src = tmp_path / "values.jsonl"
    src.write_text("\n".join(sources) + "\n", encoding="utf-8")
    got = _node("--canonical", src)
    assert got.returncode == 0, got.stderr
    want = [orjson.dumps(orjson.loads(s), option=orjson.OPT_SORT_KEYS).decode() for s in sources]
    assert got.stdout.split("\n")[:-1] == want

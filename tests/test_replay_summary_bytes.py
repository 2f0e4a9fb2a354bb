"""A summary tallies a canonical hook.fired line from its bytes and parses only the hook
lines it keeps (issue 12: replay throughput); a line the byte match does not fit exactly
is parsed, so the summary is the same either way. Guards count parses, never time."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import orjson
import pytest

from agentos_kernel.store.events import canonical, read_log
from agentos_kernel.store.replay.fold import replay_path
from agentos_kernel.store.replay.summary import summarize, summarize_path
from agentos_kernel.testing import write_long_session


def test_a_long_log_parses_only_the_hook_lines_it_keeps(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    path = write_long_session(tmp_path, "long", 3000)
    hooks = sum(b'"type":"hook.fired"' in line for line in path.read_bytes().splitlines())
    parsed: Counter[str] = Counter()
    real = orjson.loads

    def counting(data: bytes | str) -> object:
        value = real(data)
        if isinstance(value, dict):
            parsed[value.get("type")] += 1
        return value

    monkeypatch.setattr(orjson, "loads", counting)
    summary = summarize_path(path, recent=5)
    assert hooks > 500 and parsed["hook.fired"] <= 5
    assert summary.counts["hook_decisions"] == hooks


def test_hook_lines_the_byte_match_does_not_fit_are_parsed_and_agree(tmp_path: Path) -> None:
    path = write_long_session(tmp_path, "odd", 64)
    lines = path.read_bytes().splitlines(keepends=True)
    odd_payloads = [
        {"cause": "Timeout", "decision": "deny", "handler": "h", "hook": "Stop", "ms": 0.0, "reason": "r"},
        {"decision": "de\"ny", "handler": "h", "hook": "Stop", "ms": 0.0, "reason": "r"},
        {"decision": 7, "handler": "h", "hook": "Stop", "ms": 0.0},
        {"cause": "x\",\"decision\":\"allow", "decision": "deny", "handler": "h", "hook": "Stop",
         "ms": 0.0, "reason": "quoted"},
    ]
    at = [i for i, line in enumerate(lines) if b'"type":"hook.fired"' in line and i > 0]
    for i, payload in zip(at, odd_payloads, strict=False):
        doc = orjson.loads(lines[i])
        doc["payload"] = payload
        lines[i] = canonical(doc) + b"\n"
    path.write_bytes(b"".join(lines))  # the chain no longer verifies: the summary does not check it
    full = replay_path(path).to_dict()
    decisions = Counter(h["decision"] if isinstance(h["decision"], str) else "(not a string)"
                        for h in full["hook_decisions"])
    for recent in (0, 3, 40):
        fast = summarize_path(path, recent=recent).to_dict()
        assert fast == summarize(read_log(path), recent=recent).to_dict()
        assert fast["hook_decision_counts"] == dict(decisions)

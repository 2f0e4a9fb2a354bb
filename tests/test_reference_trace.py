"""The committed reference trace (sessions/example/) is what the canonical request writes
today, byte for byte; a change to the log's shape must regenerate it on purpose:

    agentos run "hello, greet Ada" --session example
    agentos replay example --json > sessions/example/replay_snapshot.json
"""

from __future__ import annotations

import json
from pathlib import Path

from agentos_kernel import Runtime
from agentos_kernel.cli.main import main

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "sessions" / "example"


def test_canonical_request_reproduces_the_committed_log(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    assert main(["init", str(ws)]) == 0
    rt = Runtime.from_workspace(ws)
    result = rt.handle_user_request("hello, greet Ada", session_id="example")
    assert result.value.output == "Hello, Ada!"
    written = (ws / "sessions" / "example" / ".events.jsonl").read_bytes()
    assert written == (EXAMPLE / ".events.jsonl").read_bytes()


def test_committed_snapshot_is_the_replay_of_the_committed_log() -> None:
    rt = Runtime.from_workspace(REPO)
    snap = json.loads((EXAMPLE / "replay_snapshot.json").read_text())
    assert rt.replay("example").to_dict() == snap
    assert snap["closed"] is True and snap["ok"] is True and snap["output"] == "Hello, Ada!"

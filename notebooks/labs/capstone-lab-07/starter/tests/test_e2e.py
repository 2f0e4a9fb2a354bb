"""End-to-end on the mock provider: the canonical request, Lead -> Planner -> Worker -> Reviewer.

Keep this test and make it pass; then add the fail-closed tests the handout asks for (at
least two cases of the spec's table, each asserting its error code).
"""

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_e2e_the_canonical_request_runs_every_role(tmp_path):
    done = subprocess.run([sys.executable, "-m", "runtime", "hello, greet Ada",
                           "--sessions", str(tmp_path), "--session-id", "e2e"],
                          cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    events = [json.loads(line) for line in (tmp_path / "e2e" / ".events.jsonl").read_text().splitlines()]
    roles = [e["payload"]["to"] for e in events if e["type"] == "agent.transition"]
    assert roles[:4] == ["LEAD", "PLAN", "WORK", "REVIEW"]
    assert events[-1]["type"] == "session.close" and events[-1]["payload"]["ok"] is True

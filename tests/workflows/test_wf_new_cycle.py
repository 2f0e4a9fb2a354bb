"""L8 design invariant: a new cycle is Markdown only. This test adds a cycle, a phase, a
policy and a persona to a scratch workspace — four .md files, no Python — and runs it."""

from __future__ import annotations

import hashlib
from pathlib import Path

import agentos_kernel
from agentos_kernel.cli.main import main

from .conftest import RunCycle, write

CYCLE = """
---
id: docs-review
description: An editor proofreads the docs change, then the review is reported.
phases: [proofread, report]
entry_phase: proofread
policies: [docs-gate, severity-route, write-modes]
exit_conditions:
  done: "'report' in completed && review_aggregate.verdict == 'pass'"
loop_bounds:
  max_generations: 4
default_mode: interactive
schema_version: v1
---

# Docs review

A cycle added as Markdown only.
"""

PHASE = """
---
id: proofread
description: The editor and the test reviewer read the change.
agents_invoked: [docs-editor, test-reviewer]
output_schema: review_aggregate_v1
advance_signal: "review_aggregate.p0_unresolved == 0 && size(review_aggregate.findings) >= 1"
halt_signal: "generation > 3"
next: report
schema_version: v1
---

# Proofread
"""

POLICY = """
---
id: docs-gate
kind: confidence-gating
description: Docs findings are acted on from 50% confidence.
rules:
  - when: "finding.confidence >= 50 && finding.file.endsWith('.md')"
    then: allow
    reason: "a docs finding we are fairly sure of"
  - when: "finding.severity in ['P0', 'P1']"
    then: allow
    reason: "serious enough to act on"
default: advisory
default_reason: "not sure enough: reported only"
schema_version: v1
---

# Docs gate
"""

PERSONA = """
---
name: docs-editor
description: Proofreads documentation for wrong commands, broken links and unclear steps.
output_schema: persona_findings_v1
version: 1
schema_version: v1
---

# Docs editor

Read the documentation change and report wrong commands, broken links and unclear steps
as persona_findings_v1. Output JSON only.
"""


def _tree(root: Path) -> dict[str, str]:
    return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file() and "__pycache__" not in p.parts}


def test_a_new_cycle_is_markdown_only(ws: Path, run_cycle: RunCycle, capsys) -> None:  # type: ignore[no-untyped-def]
    package = Path(agentos_kernel.__file__).parent
    code_before, ws_before = _tree(package), _tree(ws)
    added = [write(ws / "workflows/cycles/docs-review.md", CYCLE),
             write(ws / "workflows/phases/proofread.md", PHASE),
             write(ws / "workflows/policies/docs-gate.md", POLICY),
             write(ws / "workflows/personas/editor/docs-editor.md", PERSONA)]
    assert {p.suffix for p in added} == {".md"}
    assert set(_tree(ws)) - set(ws_before) == {p.relative_to(ws).as_posix() for p in added}

    assert main(["validate", str(ws)]) == 0, capsys.readouterr().out

    run = run_cycle("docs-review", "proofread the install steps in README.md")
    c = run.result
    assert (c.verdict, c.visited) == ("done", ("proofread", "report")), c.reason
    assert [e.actor for e in run.events if e.type == "role.output"][:2] == ["docs-editor", "test-reviewer"]
    assert "editor" in {e.payload["role"] for e in run.events if e.type == "llm.request"}
    gates = [g for g in run.of("workflow.policy_gated") if g["policy_id"] == "docs-gate"]
    assert gates and {g["decision"] for g in gates} == {"allow", "advisory"}
    assert run.rt.replay(c.session_id).workflow["cycle_id"] == "docs-review"
    assert _tree(package) == code_before  # no Python was touched to get here


def test_the_new_cycle_runs_from_the_command_line(ws: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    write(ws / "workflows/cycles/docs-review.md", CYCLE)
    write(ws / "workflows/phases/proofread.md", PHASE)
    write(ws / "workflows/policies/docs-gate.md", POLICY)
    write(ws / "workflows/personas/editor/docs-editor.md", PERSONA)
    code = main(["--workspace", str(ws), "run", "proofread README.md", "--cycle", "docs-review",
                 "--mode", "report-only"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "cycle docs-review: proofread -> report" in out and "verdict done" in out
    assert not (ws / "docs").exists()  # report-only writes nothing

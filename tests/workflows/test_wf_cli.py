"""`agentos run PROMPT --cycle ID [--mode M]`, as a user runs it from a scratch directory."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentos_kernel.cli.main import main


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_review_cycle_from_an_empty_directory(capsys: pytest.CaptureFixture[str]) -> None:
    """No agentos.yaml anywhere: the bundled reference workspace, sessions in ./sessions."""
    code, out, _ = cli(capsys, "run", "review the change in auth.py", "--cycle", "code-review")
    assert code == 0, out
    assert "workflow.started" in out and "code-review mode=interactive entry=review" in out
    assert "review -> report (advance, generation 1)" in out
    assert "cycle code-review: review -> report" in out and "verdict done:" in out
    assert (Path.cwd() / "sessions" / "s0001" / ".events.jsonl").is_file()
    assert sorted(p.name for p in (Path.cwd() / "docs" / "pulse").iterdir()) == ["s0001-code-review-g2.md"]
    code, out, _ = cli(capsys, "replay", "s0001", "--json")
    w = json.loads(out)["workflow"]
    assert (w["cycle_id"], w["phase"], w["verdict"], w["visited"]) == ("code-review", "report", "done",
                                                                      ["review", "report"])


def test_halted_and_aborted_cycles_exit_1(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = cli(capsys, "run", "review auth.py", "--cycle", "code-review", "--faults", "p0_finding",
                       "--mode", "report-only")
    assert code == 1 and "verdict halted: oscillation" in out
    code, out, _ = cli(capsys, "run", "make it work", "--cycle", "ralph-loop", "--faults", "grade_zero")
    assert code == 1 and "verdict abort: halt_signal of phase 'iterate' holds" in out


def test_json_output_is_the_snapshot(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = cli(capsys, "run", "make it work", "--cycle", "ralph-loop", "--json")
    assert code == 0
    assert json.loads(out)["workflow"]["visited"] == ["iterate", "iterate", "iterate"]


@pytest.mark.parametrize(("argv", "message"), [
    (["run", "x", "--cycle", "nope"], "unknown cycle 'nope'; registered: bugfix, code-review, ralph-loop"),
    (["run", "x", "--cycle", "code-review", "--mode", "yolo"], "does not run in mode 'yolo'"),
    (["run", "x", "--mode", "autofix"], "--mode applies to a cycle"),
])
def test_bad_cycle_arguments_are_usage_errors(capsys: pytest.CaptureFixture[str], argv: list[str],
                                              message: str) -> None:
    code, _, err = cli(capsys, *argv)
    assert code == 2 and message in err
    assert not (Path.cwd() / "sessions").exists()

"""The README's event trace is what `agentos run "hello, greet Ada"` prints, line for line
(class-day defect, issue 22: it showed `model=script` and `(default-all`, cut by hand), and
the trace's summary column marks every cut with "…"."""

from __future__ import annotations

from pathlib import Path

from agentos_kernel.store.events import Event
from agentos_kernel.telemetry.trace import summary

from .helpers import CANONICAL, REPO, Cli


def _readme_trace() -> list[str]:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    block = text.split("## An event trace", 1)[1].split("```", 2)[1]
    return block.strip("\n").splitlines()


def test_the_readme_trace_is_the_real_output(workspace: Path, cli: Cli) -> None:
    code, out, _ = cli("--workspace", workspace, "run", CANONICAL)
    assert code == 0
    printed = out.split("\n\n", 1)[0].splitlines()  # the trace, before the session's log line
    assert _readme_trace() == printed
    assert "model=scripted-1" in printed[1] and printed[18].endswith("(default-allow)")


def test_a_cut_summary_value_ends_with_an_ellipsis() -> None:
    long = "every plan step is completed and the output addresses the directive"
    ev = Event(id="s1-e1", session_id="s1", ts="2026-01-01T00:00:00Z", type="review.result",
               actor="reviewer", payload={"verdict": "pass", "feedback": long})
    shown = summary(ev)
    assert shown.startswith("pass: every plan step") and shown.endswith("…")
    assert long.startswith(shown.removeprefix("pass: ").removesuffix("…"))
    whole = Event(id="s1-e2", session_id="s1", ts="2026-01-01T00:00:00Z", type="review.result",
                  actor="reviewer", payload={"verdict": "pass", "feedback": "short"})
    assert summary(whole) == "pass: short"

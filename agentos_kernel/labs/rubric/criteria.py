"""The spec's Lab Rubric, one function per criterion, each returning a CriterionResult.

The four static criteria read the submission folder (never run it); safety and determinism
read what the sandboxed test runs left (testrun.SuiteRun). docs/grading.md states every
condition; the modules named below hold the details.
"""

from __future__ import annotations

from pathlib import Path

from . import boundary, contracts, readme
from . import observability as observe
from .determinism import first_difference, normalised_logs
from .model import CriterionResult, fail
from .suite import FAIL_CLOSED_CASES, TestCase
from .testrun import SuiteRun

MIN_FAIL_CLOSED_CASES = 2


def runtime_boundary(root: Path, lang: str) -> CriterionResult:
    """Responsibilities in their own modules; side effects only in tool/provider/event modules."""
    return boundary.check(root, lang)


def contract_discipline(root: Path) -> CriterionResult:
    """Schemas valid and complete, role prompts, SKILL.md frontmatter, logged outputs valid."""
    return contracts.check(root)


def observability(root: Path, log: observe.LogSource | None = None) -> CriterionResult:
    """The example log (from the folder, or from `log`) audits clean and replay_snapshot.json
    equals its replay."""
    return observe.check(root, log)


def documentation(root: Path) -> CriterionResult:
    """README sections the spec lists."""
    return readme.check(root)


def safety(tests: list[TestCase], run: SuiteRun) -> CriterionResult:
    """At least MIN_FAIL_CLOSED_CASES distinct fail-closed cases, each exercised by a test that
    passed in the sandboxed run."""
    key = "safety"
    closed = [t for t in tests if t.cases]
    notes = [f"{t.where}: {', '.join(t.cases)}: {run.outcomes.get(t.key, 'not run')}" for t in closed]
    if run.problem:
        return fail(key, [f"test run: {run.problem}"], notes)
    if not closed:
        return fail(key, ["tests/: no test exercises a fail-closed case (one that asserts a code such as "
                          "TOOL_NOT_FOUND, MALFORMED_AGENT_MESSAGE, WRITE_CONFLICT or a hook 'deny'); add "
                          f"at least {MIN_FAIL_CLOSED_CASES} (spec: Fail-closed Cases)"])
    covered = sorted({c for t in closed if run.outcomes.get(t.key) == "passed" for c in t.cases})
    if len(covered) >= MIN_FAIL_CLOSED_CASES:
        return CriterionResult(key, True, f"{len(covered)} fail-closed cases tested and passing: "
                               f"{', '.join(covered)}", tuple(notes))
    broken = [f"{t.where} {run.outcomes.get(t.key, 'was not run')}" for t in closed
              if run.outcomes.get(t.key) != "passed"]
    shown = ", ".join(covered) or "none"
    return fail(key, [f"{len(covered)} fail-closed case(s) tested and passing ({shown}); "
                      f"need {MIN_FAIL_CLOSED_CASES} of the spec's {len(FAIL_CLOSED_CASES)}"
                      + (f"; not passing: {'; '.join(broken)}" if broken else "; add tests for other cases")],
                notes)


def determinism(tests: list[TestCase], run1: SuiteRun, run2: SuiteRun | None) -> CriterionResult:
    """The e2e test passes in two fresh runs and their event logs are identical once
    normalised (determinism.py says what that removes and why)."""
    key = "determinism"
    notes = [f"run 1 log: {p}" for p in run1.logs] + list(run1.log_problems)
    if run1.problem:
        return fail(key, [f"run 1: {run1.problem}"], notes)
    e2e = [t for t in tests if t.e2e]
    if not e2e:
        return fail(key, ["tests/: no end-to-end test; name it test_e2e_* (or put it in tests/test_e2e.py) "
                          "and run the runtime on the mock provider"], notes)
    for n, run in ((1, run1), (2, run2)):
        if run is None:
            break
        if n == 2 and run.problem:
            return fail(key, [f"run 2: {run.problem}"], notes)
        bad = [t for t in e2e if run.outcomes.get(t.key) != "passed"]
        if bad:
            outcome = run.outcomes.get(bad[0].key, "was not run")
            return fail(key, [f"{bad[0].where}: {outcome} in run {n}; the "
                              "mock-provider e2e test must pass on every run"], notes)
        if not run.logs:
            return fail(key, [f"run {n} wrote no .events.jsonl: the e2e test must run the runtime so its "
                              "event store writes a session log (under tmp_path or the working dir)"],
                        notes)
    if run2 is None:
        return fail(key, ["run 2 did not start"], notes)
    a, b = normalised_logs(run1.logs), normalised_logs(run2.logs)
    diff = first_difference(a, b)
    if diff:
        return fail(key, [f"the two runs' event logs differ: {diff}; the mock provider and runtime must "
                          "make the same decisions every run"], notes)
    events = sum(len(log) for logs in a.values() for log in logs)
    return CriterionResult(key, True, f"e2e passed twice; {len(run1.logs)} logs ({events} events) identical "
                           "after normalising ids and timestamps", tuple(notes))

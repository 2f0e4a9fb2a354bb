"""The conformance kit: language-neutral scenarios, our runtime's logs for each, and
`agentos conform LOG_DIR` (Polyglot Parity made checkable)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from agentos_kernel.errors import ContractError
from agentos_kernel.labs.audit.conform import conform
from agentos_kernel.labs.audit.log import audit_log
from agentos_kernel.labs.audit.scenarios import Scenario, load_scenarios, run_scenarios, scenarios_dir
from agentos_kernel.providers.faults import PRESETS

from ..helpers import REPO, Cli

FIXTURES = Path(__file__).parent / "fixtures"
SCENARIOS = load_scenarios()
IDS = [s.id for s in SCENARIOS]
# The spec's Fail-closed Cases the scripted provider can inject, by the code that shows them
# ("missing schema id" cannot be: it fails the workspace load, before any session or log).
FAIL_CLOSED_CODES = {"TOOL_NOT_FOUND", "TOOL_NOT_ALLOWED", "MALFORMED_AGENT_MESSAGE", "GATE_DENIED",
                     "WRITE_CONFLICT", "PROVIDER_ERROR", "HUMAN_ESCALATION", "SCHEMA_INVALID"}


@pytest.fixture(scope="module")
def our_logs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Our runtime's log for every scenario: LOG_DIR/<id>/.events.jsonl."""
    log_dir = tmp_path_factory.mktemp("conform") / "logs"
    runs = run_scenarios(log_dir, SCENARIOS)
    assert [r.id for r in runs] == IDS
    return log_dir


def _log_dir(tmp_path: Path, **logs: Path) -> Path:
    for sid, src in logs.items():
        (tmp_path / sid).mkdir(parents=True)
        shutil.copy(src, tmp_path / sid / ".events.jsonl")
    return tmp_path


# -- the scenario files --------------------------------------------------------------------
def test_scenarios_are_bundled_and_cover_the_fail_closed_table() -> None:
    assert scenarios_dir() == REPO / "conformance" / "scenarios"
    codes = {c for s in SCENARIOS for c in s.expect.get("codes", [])}
    assert codes >= FAIL_CLOSED_CODES
    assert {"canonical", "redact_card", "reviewer_fail_once", "hook_timeout", "hook_error"} <= set(IDS)
    redact = next(s for s in SCENARIOS if s.id == "redact_card")
    assert "4111111111111111" in redact.prompt and redact.expect["absent_text"] == ["4111111111111111"]


@pytest.mark.parametrize("scenario", SCENARIOS, ids=IDS)
def test_each_fault_is_described_and_is_exactly_its_preset(scenario: Scenario) -> None:
    doc = json.loads(Path(scenario.file).read_text(encoding="utf-8"))
    assert doc["fault"]["description"]
    if "preset" in doc["fault"]:
        assert doc["fault"]["plan"] == PRESETS[doc["fault"]["preset"]]


def test_a_bad_scenario_file_names_the_file_and_field(tmp_path: Path) -> None:
    shutil.copy(REPO / "conformance" / "scenario_v1.json", tmp_path / "scenario_v1.json")
    (tmp_path / "s").mkdir()
    doc = json.loads((scenarios_dir() / "canonical.json").read_text(encoding="utf-8"))
    doc["expect"]["events"][0]["mn"] = 1
    (tmp_path / "s" / "canonical.json").write_text(json.dumps(doc), encoding="utf-8")
    with pytest.raises(ContractError) as exc:
        load_scenarios(tmp_path / "s")
    problem = exc.value.problems[0]
    assert problem.file.endswith("canonical.json") and problem.field == "expect/events/0"


# -- our runtime ---------------------------------------------------------------------------
def test_our_runtime_passes_every_scenario(our_logs: Path) -> None:
    report = conform(our_logs, SCENARIOS)
    assert [(r.id, r.status, r.failures) for r in report.results] == [(i, "pass", ()) for i in IDS]


@pytest.mark.parametrize("sid", IDS)
def test_every_scenario_log_of_ours_audits_clean(our_logs: Path, sid: str) -> None:
    assert audit_log(our_logs / sid).gaps == ()


# -- foreign logs --------------------------------------------------------------------------
def test_the_foreign_typescript_log_passes_the_canonical_scenario(tmp_path: Path) -> None:
    d = _log_dir(tmp_path, canonical=FIXTURES / "foreign_ts_canonical.events.jsonl",
                 unknown_tool=FIXTURES / "foreign_go_unknown_tool.events.jsonl")
    report = conform(d, SCENARIOS, only=["canonical", "unknown_tool"])
    assert [(r.id, r.status) for r in report.results] == [("canonical", "pass"),
                                                          ("unknown_tool", "pass")]


def test_a_log_that_does_not_show_the_scenario_fails_with_what_is_missing(tmp_path: Path) -> None:
    d = _log_dir(tmp_path, unknown_tool=FIXTURES / "foreign_ts_canonical.events.jsonl")
    (row,) = conform(d, SCENARIOS, only=["unknown_tool"]).results
    assert row.status == "fail"
    assert row.failures == (
        "ok: session.close ok is True, expected False",
        "events: tool.invoke appears 1 time(s), expected 0",
        "events: tool.result appears 1 time(s), expected 0",
        "codes: TOOL_NOT_FOUND never appears (as a payload code, error.code or in the close reason)",
    )


def test_a_log_with_an_audit_gap_fails_its_scenario(tmp_path: Path) -> None:
    d = _log_dir(tmp_path, canonical=FIXTURES / "broken" / "garbage_line.events.jsonl")
    (row,) = conform(d, SCENARIOS, only=["canonical"]).results
    assert row.status == "fail" and len(row.failures) == 1
    assert row.failures[0].startswith("audit: 1 gap(s), first: envelope at seq None, line 19: "
                                      "line 19 is not JSON")


def test_order_and_absent_text_are_checked(tmp_path: Path) -> None:
    lines = (FIXTURES / "foreign_ts_canonical.events.jsonl").read_text(encoding="utf-8").splitlines(True)
    assert '"skill.invoke"' in lines[2] and '"llm.request"' in lines[4]
    moved = tmp_path / "moved.jsonl"  # skill.invoke after the first llm.request; a card number leaked
    text = "".join([*lines[:2], *lines[3:5], lines[2], *lines[5:]])
    moved.write_text(text.replace("greet Ada", "greet Ada 4111111111111111", 1), encoding="utf-8")
    d = _log_dir(tmp_path / "d", canonical=moved, redact_card=moved)
    rows = {r.id: r for r in conform(d, SCENARIOS, only=["canonical", "redact_card"]).results}
    assert rows["canonical"].failures == (
        "order: the first skill.invoke (line 5) must come before the first llm.request (line 4)",)
    assert "absent_text: '4111111111111111' appears in the log at line 1" in rows["redact_card"].failures


def test_a_missing_log_fails_and_a_missing_l8_log_is_skipped(tmp_path: Path) -> None:
    rows = {r.id: r for r in conform(tmp_path, SCENARIOS).results}
    assert rows["canonical"].status == "fail"
    assert rows["canonical"].failures[0].startswith("no log at ")
    assert rows["cycle_code_review"].status == "skip"


# -- the commands --------------------------------------------------------------------------
def test_cli_conform_prints_the_parity_table(cli: Cli, our_logs: Path) -> None:
    code, out, _ = cli("conform", our_logs)
    lines = out.splitlines()
    assert code == 0 and lines[0].split() == ["scenario", "result", "what", "failed"]
    assert [ln.split()[:2] for ln in lines[1:len(IDS) + 1]] == [[i, "pass"] for i in IDS]
    assert lines[-1].endswith(f"{len(IDS)} pass, 0 fail, 0 skipped (optional L8)")


def test_cli_conform_fails_on_a_missing_log_and_json_says_why(cli: Cli, tmp_path: Path) -> None:
    d = _log_dir(tmp_path, canonical=FIXTURES / "foreign_ts_canonical.events.jsonl")
    code, out, _ = cli("conform", d, "--json")
    doc = json.loads(out)
    assert code == 1 and doc["ok"] is False
    rows = {r["id"]: r for r in doc["results"]}
    assert rows["canonical"]["status"] == "pass" and rows["unknown_tool"]["status"] == "fail"
    assert cli("conform", d, "--only", "canonical")[0] == 0


@pytest.mark.parametrize("argv", [["conform", "missing-dir"], ["conform", ".", "--only", "nope"]])
def test_cli_conform_bad_input_exits_2(cli: Cli, argv: list[str]) -> None:
    code, out, err = cli(*argv)
    assert code == 2 and out == "" and "agentos: error:" in err


def test_cli_run_scenarios_writes_one_log_each_and_never_overwrites(cli: Cli, tmp_path: Path) -> None:
    code, out, _ = cli("run-scenarios", tmp_path / "logs", "--only", "canonical,prompt_denied")
    assert code == 0 and "canonical: closed ok" in out and "prompt_denied: closed not ok" in out
    assert sorted(p.name for p in (tmp_path / "logs").iterdir()) == ["canonical", "prompt_denied"]
    code, _, err = cli("run-scenarios", tmp_path / "logs", "--only", "canonical")
    assert code == 2 and "already holds logs for canonical" in err

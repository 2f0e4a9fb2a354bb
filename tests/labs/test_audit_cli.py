"""`agentos audit` and labs.audit: Audit Completeness on any event log.

Every broken fixture changes one thing in a good log and the audit must name exactly that
gap (check, seq, line); our demo log, every fault preset's log and the hand-written foreign
logs (TypeScript/Go style: uuid ids, numeric or RFC 3339 ts, no seq or chain) audit clean.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import shutil
from collections.abc import Callable
from pathlib import Path

import orjson
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from agentos_kernel import Runtime
from agentos_kernel.labs.audit.log import AuditReport, Gap, audit_log, find_logs
from agentos_kernel.providers.faults import PRESETS, load_fault_plan

from ..helpers import CANONICAL, NOTE_PROMPT, REPO, Cli, RunRequest

FIXTURES = Path(__file__).parent / "fixtures"
BROKEN = FIXTURES / "broken"
DEMO = REPO / "sessions" / "example" / ".events.jsonl"
FOREIGN_TS = FIXTURES / "foreign_ts_canonical.events.jsonl"
FOREIGN_GO = FIXTURES / "foreign_go_unknown_tool.events.jsonl"

# Each broken log and exactly the gaps it must get: (check, seq, line).
EXPECTED_GAPS = {
    "missing_tool_result": [("tool-pair", 14, 14), ("required-type", None, None)],
    "llm_unanswered": [("llm-pair", 21, 21)],
    "no_close": [("closed", None, None)],
    "close_not_last": [("closed", 25, 25)],
    "chain_edited": [("chain", 24, 24)],
    "bogus_hook_decision": [("hook", 13, 13)],
    "deny_not_honoured": [("hook", 14, 14)],
    "transition_never_entered": [("transition", 19, 19)],
    "unaccounted_schema_violation": [("schema-violation", 10, 10)],
    "garbage_line": [("envelope", None, 19)],
}
# The L8 presets need a cycle; every other preset is one request (NOTE_PROMPT for a write).
CYCLE_OF = {
    "p0_finding": "code-review", "p0_finding_once": "code-review", "p0_manual": "code-review",
    "malformed_persona": "code-review", "workflow_denied": "code-review",
    "phase_advance_denied": "code-review", "phase_advance_timeout": "code-review",
    "phase_advance_error": "code-review", "workflow_complete_denied": "code-review",
    "grade_regression": "ralph-loop", "grade_stuck": "ralph-loop", "grade_zero": "ralph-loop",
}


def _where(report: AuditReport) -> list[tuple[str, int | None, int | None]]:
    return [(g.check, g.seq, g.line) for g in report.gaps]


def _foreign(lines: list[bytes]) -> list[bytes]:
    """Our log as an implementation without the seq/chain extension would have written it."""
    out = []
    for line in lines:
        obj = orjson.loads(line)
        obj.pop("seq", None)
        obj.pop("chain", None)
        out.append(orjson.dumps(obj) + b"\n")
    return out


def _write(tmp_path: Path, lines: list[bytes], name: str = "log.jsonl") -> Path:
    p = tmp_path / name
    p.write_bytes(b"".join(lines))
    return p


# -- the API other helpers code against ---------------------------------------------------
def test_gap_and_report_keep_their_public_fields() -> None:
    assert [f.name for f in dataclasses.fields(Gap)][:4] == ["check", "seq", "line", "what"]
    assert [f.name for f in dataclasses.fields(AuditReport)][:3] == ["path", "events", "gaps"]
    g = Gap("closed", None, None, "x")
    with pytest.raises(dataclasses.FrozenInstanceError):
        g.check = "y"  # type: ignore[misc]
    assert AuditReport("p", 0, ()).ok and not AuditReport("p", 1, (g,)).ok


def test_a_missing_path_is_a_clear_error_not_a_report(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="no such file"):
        audit_log(tmp_path / "nope.jsonl")
    with pytest.raises(FileNotFoundError, match=r"no \.events\.jsonl in this directory"):
        audit_log(tmp_path)


# -- clean logs ---------------------------------------------------------------------------
def test_our_demo_log_audits_clean() -> None:
    report = audit_log(DEMO.parent)
    assert report.ok, report.gaps
    assert (report.events, report.notes) == (32, ())


@pytest.mark.parametrize("log", [FOREIGN_TS, FOREIGN_GO], ids=["typescript", "go"])
def test_foreign_logs_without_seq_or_chain_audit_clean(log: Path) -> None:
    assert audit_log(log).gaps == ()


@pytest.fixture(scope="module")
def preset_logs(_initialised: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """One log per fault preset (and the canonical request), in one workspace."""
    ws = tmp_path_factory.mktemp("presets") / "ws"
    shutil.copytree(_initialised, ws)
    logs = {}
    for name in [None, *PRESETS]:
        sid = name or "canonical"
        rt = Runtime.from_workspace(ws, faults=load_fault_plan(name) if name else None)
        if name in CYCLE_OF:
            rt.run_cycle(CYCLE_OF[name], "review the change in auth.py", session_id=sid)
        else:
            prompt = NOTE_PROMPT if name == "write_conflict" else CANONICAL
            rt.handle_user_request(prompt, session_id=sid)
        logs[sid] = rt.store.path(sid)
    return logs


@pytest.mark.parametrize("preset", ["canonical", *PRESETS])
def test_every_fault_preset_log_audits_clean(preset_logs: dict[str, Path], preset: str) -> None:
    report = audit_log(preset_logs[preset])
    assert report.gaps == (), [str(g) for g in report.gaps]


def test_a_correction_after_the_close_is_allowed(runtime: Runtime) -> None:
    sid = runtime.handle_user_request(CANONICAL).value.session_id
    runtime.amend(sid, f"{sid}-e0024", "output", "Hello, Ada.", "typo")
    assert audit_log(runtime.store.path(sid)).ok


def test_a_new_pass_after_done_starts_again_at_intake(workspace: Path) -> None:
    config = workspace / "agentos.yaml"  # without stop_after_one the Stop hook allows more passes
    config.write_text("".join(ln for ln in config.read_text(encoding="utf-8").splitlines(True)
                              if "stop_after_one" not in ln), encoding="utf-8")
    rt = Runtime.from_workspace(workspace)
    sid = rt.handle_user_request(CANONICAL).value.session_id
    starts = [e for e in rt.events(sid) if e.type == "agent.transition" and e.payload["from"] == "INTAKE"]
    assert len(starts) == rt.profile.max_iterations > 1
    assert audit_log(rt.store.path(sid)).gaps == ()


def test_no_skill_success_needs_no_skill_or_tool_events(run_request: RunRequest) -> None:
    run = run_request("what is the weather")
    assert run.ok and "skill.invoke" not in run.types()
    report = audit_log(run.log_path)
    assert report.ok and "no skill was selected" in report.notes[0]


def test_tools_without_a_skill_still_need_the_skill(tmp_path: Path) -> None:
    lines = [ln for ln in FOREIGN_TS.read_bytes().splitlines(keepends=True)
             if b'"type":"skill.' not in ln]
    report = audit_log(_write(tmp_path, lines))
    assert _where(report) == [("required-type", None, None)] * 2
    assert [g.what.split(" event")[0][-14:] for g in report.gaps] == ["a skill.invoke", "skill.complete"]


def test_an_l8_success_needs_its_workflow_completed(tmp_path: Path, preset_logs: dict[str, Path]) -> None:
    lines = _foreign(preset_logs["p0_finding_once"].read_bytes().splitlines())
    assert audit_log(_write(tmp_path, lines, "ok.jsonl")).ok
    cut = [ln for ln in lines if b'"type":"workflow.completed"' not in ln]
    report = audit_log(_write(tmp_path, cut))
    assert [g.check for g in report.gaps] == ["workflow", "required-type"]
    assert "workflow.completed" in report.gaps[1].what


# -- broken logs: the exact gap -----------------------------------------------------------
@pytest.mark.parametrize("name", sorted(EXPECTED_GAPS))
def test_each_broken_log_gets_exactly_its_gap(name: str) -> None:
    report = audit_log(BROKEN / f"{name}.events.jsonl")
    assert _where(report) == EXPECTED_GAPS[name], [g.what for g in report.gaps]


def _edit(n: int, **fields: object) -> Callable[[list[dict]], list[dict]]:
    """Set envelope or payload fields of line n (1-based) of the TypeScript fixture."""
    def apply(events: list[dict]) -> list[dict]:
        for k, v in fields.items():
            if k == "payload":
                events[n - 1]["payload"] = v
            else:
                events[n - 1][k] = v(events) if callable(v) else v
        return events
    return apply


# One change to the clean TypeScript log, and the one gap it must give.
MUTATIONS = {
    "duplicate id": (_edit(5, id=lambda ev: ev[3]["id"]), [("envelope", 5, 5)]),
    "another session": (_edit(7, session_id="other"), [("envelope", 7, 7)]),
    "parent is later": (_edit(13, parent_id=lambda ev: ev[13]["id"]), [("parent", 13, 13)]),
    "parent is nowhere": (_edit(16, parent_id="nope"), [("parent", 16, 16)]),
    "start not first": (lambda ev: [ev[1], ev[0], *ev[2:]], [("start", 2, 2)]),
    "close without ok": (_edit(26, payload={}), [("closed", 26, 26)]),
    "failed close without reason": (_edit(26, payload={"ok": False}), [("closed", 26, 26)]),
    "ok but never DONE": (lambda ev: ev[:22] + ev[23:], [("transition", 25, 25)]),
}


@pytest.mark.parametrize("change", sorted(MUTATIONS))
def test_one_change_to_a_clean_foreign_log_gives_one_gap(tmp_path: Path, change: str) -> None:
    events = [json.loads(ln) for ln in FOREIGN_TS.read_text(encoding="utf-8").splitlines()]
    mutate, expected = MUTATIONS[change]
    lines = [json.dumps(e).encode() + b"\n" for e in mutate(events)]
    report = audit_log(_write(tmp_path, lines))
    assert _where(report) == expected, [g.what for g in report.gaps]


def test_gap_messages_name_the_event_and_the_fix() -> None:
    what = {n: audit_log(BROKEN / f"{n}.events.jsonl").gaps[0].what for n in EXPECTED_GAPS}
    assert "tool.invoke echo has no tool.result" in what["missing_tool_result"]
    assert "parent_id = the invoke's id" in what["missing_tool_result"]
    assert "llm.request reviewer has no llm.response or llm.error" in what["llm_unanswered"]
    assert "decision 'maybe'" in what["bogus_hook_decision"]
    assert "from WORK to REVIEW, but the agent is in PLAN" in what["transition_never_entered"]
    assert "schema.violation of plan_v1 at planner output is not refused" in \
        what["unaccounted_schema_violation"]
    assert "line 19 is not JSON" in what["garbage_line"]


def test_a_dropped_line_in_a_chained_log_names_the_line_after_it(tmp_path: Path) -> None:
    lines = DEMO.read_bytes().splitlines(keepends=True)
    report = audit_log(_write(tmp_path, lines[:19] + lines[20:]))  # drop the tool.result
    assert _where(report)[:3] == [("seq", 21, 20), ("chain", 21, 20), ("tool-pair", 19, 19)]


def test_a_failed_schema_invalid_without_its_violation_is_a_gap(tmp_path: Path,
                                                                 preset_logs: dict[str, Path]) -> None:
    lines = _foreign(preset_logs["schema_violation"].read_bytes().splitlines())
    cut = [ln for ln in lines if b'"type":"schema.violation"' not in ln]
    report = audit_log(_write(tmp_path, cut))
    assert [g.check for g in report.gaps] == ["schema-violation"]
    assert report.gaps[0].what.startswith("session.close reports SCHEMA_INVALID")


ODD_VALUES = (None, True, -1, 1e20, 1e300, "", [], {}, {"a": [1]}, "x", 2**70, 0.5)
ENVELOPE = ("id", "session_id", "ts", "type", "actor", "payload", "schema_version", "parent_id")


@settings(max_examples=150, deadline=None)
@example(edits=[(0, "id", {"a": [1]}), (0, "ts", "")], cut=1)  # found: an id that is a dict
@example(edits=[(0, "payload", ODD_VALUES[8]), (0, "payload.*", ODD_VALUES[8])], cut=1)  # a cycle
@given(edits=st.lists(st.tuples(st.integers(0, 25), st.sampled_from((*ENVELOPE, "payload.*")),
                                st.sampled_from(ODD_VALUES)), min_size=1, max_size=4),
       cut=st.integers(0, 26))
def test_audit_never_raises_on_bad_content(tmp_path_factory: pytest.TempPathFactory,
                                           edits: list[tuple[int, str, object]], cut: int) -> None:
    events = [json.loads(ln) for ln in FOREIGN_TS.read_text(encoding="utf-8").splitlines()][:cut]
    for n, field, value in edits:
        if n < len(events):
            target = events[n]["payload"] if field == "payload.*" else events[n]
            if isinstance(target, dict):
                # a copy: ODD_VALUES' dicts are shared by every example (and one set into
                # itself would be a cycle no log line can hold)
                target[next(iter(target), "x") if field == "payload.*" else field] = copy.deepcopy(value)
    log = tmp_path_factory.mktemp("odd") / "log.jsonl"
    log.write_text("\n".join(json.dumps(e) for e in events), encoding="utf-8")
    report = audit_log(log)
    assert report.events + sum(1 for g in report.gaps if g.check == "envelope" and g.line) >= len(events)


def test_a_numeric_ts_out_of_range_is_an_envelope_gap(tmp_path: Path) -> None:
    events = [json.loads(ln) for ln in FOREIGN_TS.read_text(encoding="utf-8").splitlines()]
    events[2]["ts"] = 1e20
    report = audit_log(_write(tmp_path, [json.dumps(e).encode() + b"\n" for e in events]))
    assert report.gaps[0] == Gap("envelope", None, 3, report.gaps[0].what)
    assert "ts: 1e+20 is not a time in Unix seconds" in report.gaps[0].what


# -- the command ---------------------------------------------------------------------------
def test_cli_clean_log_exits_0(cli: Cli) -> None:
    code, out, _ = cli("audit", DEMO)
    assert code == 0 and out.strip().endswith("32 events, clean")


def test_cli_prints_a_gap_table_and_exits_1(cli: Cli) -> None:
    code, out, _ = cli("audit", BROKEN / "missing_tool_result.events.jsonl")
    header, row1, row2 = out.splitlines()[1:4]
    assert code == 1 and header.split() == ["check", "seq", "line", "what"]
    assert row1.split()[:4] == ["tool-pair", "14", "14", "tool.invoke"]
    assert row2.split()[:3] == ["required-type", "-", "-"]


def test_cli_audits_a_directory_of_sessions(cli: Cli, tmp_path: Path) -> None:
    for name, src in (("good", DEMO), ("bad", BROKEN / "no_close.events.jsonl")):
        (tmp_path / name).mkdir()
        shutil.copy(src, tmp_path / name / ".events.jsonl")
    assert [p.parent.name for p in find_logs(tmp_path)] == ["bad", "good"]
    code, out, _ = cli("audit", tmp_path)
    assert code == 1 and out.rstrip().endswith("2 logs audited: 1 clean, 1 with gaps")


def test_cli_json(cli: Cli) -> None:
    code, out, _ = cli("audit", "--json", BROKEN / "garbage_line.events.jsonl")
    doc = json.loads(out)
    assert code == 1 and doc["ok"] is False
    assert doc["logs"][0]["gaps"] == [
        {"check": "envelope", "seq": None, "line": 19, "what": doc["logs"][0]["gaps"][0]["what"]}]


@pytest.mark.parametrize("where", ["missing.jsonl", "empty-dir"])
def test_cli_bad_path_exits_2(cli: Cli, tmp_path: Path, where: str) -> None:
    (tmp_path / "empty-dir").mkdir()
    code, out, err = cli("audit", tmp_path / where)
    assert code == 2 and out == "" and str(tmp_path / where) in err

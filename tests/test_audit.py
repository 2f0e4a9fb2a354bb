"""Audit completeness (spec): a successful session holds every required event type, every
LLM request/response and tool invoke/result pair, every payload checks against the schema
of its event type, and the log is numbered and tamper-evident."""

from __future__ import annotations

import shutil
from collections import Counter
from pathlib import Path

import orjson
import pytest

from agentos_kernel import Ok, Runtime, verify_chain
from agentos_kernel.providers.faults import load_fault_plan
from agentos_kernel.store.events import read_log
from agentos_kernel.store.recorder import EVENT_SCHEMAS

from .helpers import CANONICAL, NOTE_PROMPT, Run, finish

REQUIRED = (
    "session.start", "hook.fired", "skill.invoke", "agent.transition", "llm.request",
    "llm.response", "tool.invoke", "tool.result", "worker.report", "skill.complete", "session.close",
)
# Successful and failing sessions alike must keep the pairs and the payload contract.
SCENARIOS = [
    ("canonical", None, None),
    ("append_note", NOTE_PROMPT, None),
    ("inspect_file", "read README.md", None),
    ("no_skill", "what is the weather", None),
    ("reviewer_fail_once", None, "reviewer_fail_once"),
    ("reviewer_fail", None, "reviewer_fail"),
    ("provider_down", None, "provider_down"),
    ("provider_flaky", None, "provider_flaky"),
    ("write_conflict", NOTE_PROMPT, "write_conflict"),
    ("hook_error", None, "hook_error"),
    ("schema_violation", None, "schema_violation"),
    ("bad_tool_args", None, "bad_tool_args"),
    ("prompt_denied", None, "prompt_denied"),
]


@pytest.fixture(scope="module", params=SCENARIOS, ids=[s[0] for s in SCENARIOS])
def any_run(request: pytest.FixtureRequest, _initialised: Path,
            tmp_path_factory: pytest.TempPathFactory) -> Run:
    """One run per scenario, shared by the (read-only) checks below."""
    name, prompt, faults = request.param
    ws = tmp_path_factory.mktemp(f"audit-{name}") / "ws"
    shutil.copytree(_initialised, ws)
    rt = Runtime.from_workspace(ws, faults=load_fault_plan(faults) if faults else None)
    return finish(rt, rt.handle_user_request(prompt or CANONICAL))


def test_successful_session_has_every_required_event_type(canonical_run: Run) -> None:
    present = set(canonical_run.types())
    assert [t for t in REQUIRED if t not in present] == []
    assert canonical_run.types()[0] == "session.start"
    assert canonical_run.types()[-1] == "session.close"
    assert canonical_run.events[-1].payload["ok"] is True


def test_every_llm_request_has_exactly_one_answer_pointing_to_it(any_run: Run) -> None:
    answers = Counter(e.parent_id for e in any_run.of("llm.response", "llm.error"))
    requests = [e.id for e in any_run.of("llm.request")]
    assert all(answers[rid] == 1 for rid in requests), answers
    assert set(answers) <= set(requests), "an answer without its request"
    by_id = {e.id: e for e in any_run.events}
    for answer in any_run.of("llm.response", "llm.error"):
        req = by_id[answer.parent_id]
        assert req.payload["call_id"] == answer.payload["call_id"]
        assert req.payload["role"] == answer.payload["role"] == answer.actor
        assert req.seq < answer.seq


def test_every_tool_invoke_has_exactly_one_result(any_run: Run) -> None:
    results = Counter(e.parent_id for e in any_run.of("tool.result"))
    invokes = [e.id for e in any_run.of("tool.invoke")]
    assert all(results[i] == 1 for i in invokes), results
    assert set(results) <= set(invokes), "a result without its invoke"
    by_id = {e.id: e for e in any_run.events}
    for result in any_run.of("tool.result"):
        invoke = by_id[result.parent_id]
        assert (invoke.payload["id"], invoke.payload["name"]) == (result.payload["id"],
                                                                  result.payload["name"])


def test_every_payload_validates_against_its_event_type_schema(any_run: Run) -> None:
    for e in any_run.events:
        assert e.type in EVENT_SCHEMAS, f"event type {e.type} has no payload schema"
        checked = any_run.rt.schemas.validate(e.payload, EVENT_SCHEMAS[e.type])
        assert isinstance(checked, Ok), (e.seq, e.type, checked)


def test_every_line_is_an_event_v1_envelope(any_run: Run) -> None:
    for line in any_run.log_path.read_bytes().splitlines():
        checked = any_run.rt.schemas.validate(orjson.loads(line), "event_v1")
        assert isinstance(checked, Ok), checked


def test_session_is_closed_exactly_once_and_last(any_run: Run) -> None:
    assert any_run.types().count("session.close") == 1
    assert any_run.types()[-1] == "session.close"
    assert any_run.types().count("session.start") == 1 and any_run.types()[0] == "session.start"


def test_every_hook_decision_and_transition_is_recorded(canonical_run: Run) -> None:
    hooks = [(h["hook"], h["decision"]) for h in
             (e.payload for e in canonical_run.of("hook.fired"))]
    for hook in ("SessionStart", "UserPromptSubmit", "SkillStart", "PreToolUse", "PostToolUse", "Stop"):
        assert hook in [h for h, _ in hooks], f"no hook.fired for {hook}"
    assert ("Stop", "deny") in hooks
    transitions = [(e.payload["from"], e.payload["to"]) for e in canonical_run.of("agent.transition")]
    assert transitions == [("INTAKE", "LEAD"), ("LEAD", "PLAN"), ("PLAN", "WORK"),
                           ("WORK", "REVIEW"), ("REVIEW", "DONE")]


def test_the_close_says_why_and_the_failure_is_logged_before_it(any_run: Run) -> None:
    close = any_run.events[-1].payload
    if any_run.ok:
        assert "reason" not in close and close["output"] == any_run.result.value.output
        return
    code = any_run.code
    assert close["reason"].startswith(f"{code}: ")
    failure = "schema.violation" if code == "SCHEMA_INVALID" else "domain.error"
    assert failure in any_run.types()[:-1]
    if failure == "domain.error":
        assert code in any_run.error_codes()


def test_seq_is_one_to_n_and_ids_are_unique(any_run: Run) -> None:
    assert [e.seq for e in any_run.events] == list(range(1, len(any_run.events) + 1))
    assert len({e.id for e in any_run.events}) == len(any_run.events)
    assert {e.session_id for e in any_run.events} == {any_run.session_id}
    ids = {e.id for e in any_run.events}
    assert all(e.parent_id is None or e.parent_id in ids for e in any_run.events)


def test_verify_chain_passes_on_an_untouched_log(any_run: Run) -> None:
    assert verify_chain(read_log(any_run.log_path)) is None


@pytest.mark.parametrize("edit", ["payload", "drop", "swap"])
def test_verify_chain_detects_a_tampered_log(canonical_run: Run, tmp_path: Path, edit: str) -> None:
    lines = canonical_run.log_path.read_bytes().splitlines(keepends=True)
    k = 18  # an event in the middle of the log
    if edit == "payload":
        obj = orjson.loads(lines[k])
        obj["payload"]["decision"] = "allow" if obj["payload"].get("decision") != "allow" else "deny"
        lines[k] = orjson.dumps(obj, option=orjson.OPT_SORT_KEYS) + b"\n"
        first_bad = k + 1
    elif edit == "drop":
        del lines[k]
        first_bad = k + 2  # the event after the gap no longer follows its predecessor's chain
    else:
        lines[k], lines[k + 1] = lines[k + 1], lines[k]
        first_bad = k + 2  # seq of the event now in position k
    tampered = tmp_path / "tampered.jsonl"
    tampered.write_bytes(b"".join(lines))
    assert verify_chain(read_log(tampered)) == first_bad

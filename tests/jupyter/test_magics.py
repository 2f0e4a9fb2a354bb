"""The magics: what %agent, %replay, %events and %%skill return, and that every bad input is
a one-line UsageError that says how to fix it."""

from __future__ import annotations

from pathlib import Path

import pytest
from IPython.core.error import UsageError

from agentos_kernel import replay
from agentos_kernel.jupyter.display import AgentRun, SnapshotView
from agentos_kernel.jupyter.verdicts import SkillCheck
from agentos_kernel.store.events import read_log

CANONICAL = '"hello, greet Ada"'


def test_agent_runs_the_request_and_returns_its_run(ip, ws: Path) -> None:
    run = ip.run_line_magic("agent", CANONICAL)
    assert isinstance(run, AgentRun)
    assert (run.session_id, run.ok, run.output, run.error) == ("s0001", True, "Hello, Ada!", None)
    on_disk = list(read_log(ws / "sessions" / "s0001" / ".events.jsonl"))
    assert list(run.events) == on_disk
    assert run.snapshot == replay(on_disk)
    assert run.path == ["INTAKE", "LEAD", "PLAN", "WORK", "REVIEW", "DONE"]
    text = repr(run)
    assert text.splitlines()[0] == ("AgentRun s0001 ok — 'hello, greet Ada' "
                                    "(profile scripted, model scripted-1)")
    assert "output: Hello, Ada!" in text
    assert "5 LLM calls · 1484 in / 152 out tokens · $0.006732" in text
    assert 'class="agentos-run"' in run._repr_html_() and "Hello, Ada!" in run._repr_html_()


def test_agent_faults_show_the_fail_closed_path(ip) -> None:
    run = ip.run_line_magic("agent", '--faults malformed_worker "hello"')
    assert not run.ok and run.output is None
    assert run.error.code == "MALFORMED_AGENT_MESSAGE" and run.error.session_id == "s0001"
    fail = run.failure
    assert (fail.type, fail.seq, fail.actor) == ("domain.error", 24, "worker")
    assert run.path[-1] == "FAILED"
    text = repr(run)
    assert "NOT ok (fail-closed)" in text.splitlines()[0]
    assert "error:  MALFORMED_AGENT_MESSAGE at L3, event 24 by worker: worker output is not JSON" in text
    assert "fail-closed" in run._repr_html_()
    assert run.snapshot.closed and run.snapshot.ok is False


def test_agent_options_reach_the_runtime(ip) -> None:
    run = ip.run_line_magic("agent", '--profile scripted-alt --session mine "hello, greet Ada"')
    assert (run.session_id, run.profile, run.model) == ("mine", "scripted-alt", "scripted-2")
    assert run.events[0].payload["model"] == "scripted-2"


def test_agent_live_prints_each_event_as_it_is_logged(ip, capsys: pytest.CaptureFixture[str]) -> None:
    from agentos_kernel.telemetry.livetrace import header, line

    run = ip.run_line_magic("agent", f"--live {CANONICAL}")
    assert capsys.readouterr().out.splitlines() == [header()] + [line(ev) for ev in run.events]
    ip.run_line_magic("agent", CANONICAL)  # without --live: the AgentRun alone, nothing printed
    assert capsys.readouterr().out == ""


def test_an_unquoted_prompt_is_the_rest_of_the_line(ip) -> None:
    run = ip.run_line_magic("agent", "hello, greet Ada --faults malformed_worker")
    assert run.prompt == "hello, greet Ada" and run.error.code == "MALFORMED_AGENT_MESSAGE"


def test_replay_recomputes_the_snapshot_from_the_log(ip) -> None:
    ip.run_line_magic("agent", CANONICAL)
    full = ip.run_line_magic("replay", "s0001")
    assert isinstance(full, SnapshotView)
    assert (full.closed, full.ok, full.output, full.at, full.total) == (True, True, "Hello, Ada!", None, 32)
    part = ip.run_line_magic("replay", "s0001 --at 10")
    assert (part.events, part.state, part.closed, part.llm_calls) == (10, "PLAN", False, 1)
    assert repr(part).splitlines()[0] == \
        "snapshot of s0001 after event 10 of 32 (recomputed from the log alone)"
    assert '  state: "PLAN"' in repr(part).splitlines()
    assert ip.run_line_magic("replay", "s0001 --at 0").events == 0


def test_replay_verify_reruns_with_recorded_answers(ip, ws: Path) -> None:
    ip.run_line_magic("agent", CANONICAL)
    view = ip.run_line_magic("replay", "s0001 --verify")
    rerun_line, chain_line = repr(view).splitlines()
    assert rerun_line == "rerun s0002 matches s0001 (32 events)" and view.report.verified
    assert chain_line == f"chain: intact (32 events, head {view.chain.head})" and view.verified
    assert "✓" in view._repr_html_()
    planner = ws / "agents" / "planner.md"
    planner.write_text(planner.read_text().replace("Steps must be", "Each step must be"))
    diverged = ip.run_line_magic("replay", "s0001 --verify")
    assert not diverged.report.identical and "diverged at event" in repr(diverged)
    with pytest.raises(UsageError, match="--verify re-runs the whole session; drop --at"):
        ip.run_line_magic("replay", "s0001 --verify --at 3")


def test_events_is_a_dataframe_that_filters(ip) -> None:
    ip.run_line_magic("agent", CANONICAL)
    frame = ip.run_line_magic("events", "s0001")
    assert list(frame.columns) == ["seq", "ts", "type", "layer", "actor", "role", "parent", "tokens_in",
                                   "tokens_out", "cost_usd", "duration_ms", "hook", "decision"]
    assert len(frame) == 32
    hooks = ip.run_line_magic("events", "s0001 --type hook.fired")  # on a categorical column
    assert set(hooks["type"]) == {"hook.fired"} and len(hooks) == 7 and hooks["hook"].notna().all()
    tools = ip.run_line_magic("events", "s0001 --layer L1")
    assert list(tools["type"]) == ["tool.invoke", "tool.result"]
    assert list(ip.run_line_magic("events", "s0001 --type tool")["seq"]) == [19, 20]


BAD_LINES = [
    ("agent", "", "%agent: missing the request; try: %agent \"hello, greet Ada\""),
    ("agent", '--fault malformed_worker "hi"', "%agent: unrecognized arguments: --fault"),
    ("agent", '--faults nope "hi"', "%agent: unknown fault preset 'nope'; presets: bad_tool_args,"),
    ("agent", '--profile nope "hi"', "%agent: agentos.yaml: profile: unknown profile 'nope'"),
    ("agent", '"unbalanced', "%agent: No closing quotation in '\"unbalanced'; put the text in double quotes"),
    ("agent", '--session ../x "hi"', "%agent: invalid session id '../x'"),
    ("agent", '--workspace nowhere "hi"', "%agent: nowhere/agentos.yaml: -: no agentos.yaml here"),
    ("replay", "s0099", "%replay: no session 's0099' in this workspace"),
    ("replay", "", "%replay: missing the session id; try: %replay s0001"),  # the last %agent run
    ("replay", "s0001 --at 99", "%replay: --at 99 is out of range: s0001 has 32 events; use 0..32"),
    ("replay", "s0001 --at -1", "%replay: --at -1 is negative"),
    ("replay", "s0001 --at ten", "%replay: argument --at: invalid int value: 'ten'; try:"),
    ("replay", "../etc", "%replay: invalid session id '../etc'"),
    ("events", "s0099", "%events: no session 's0099' in this workspace (sessions: s0001)"),
    ("events", "s0001 --layer L9", "%events: argument --layer: invalid choice: 'L9'"),
    ("events", "s0001 --type nosuch", "%events: unknown event type 'nosuch'; use one of "),
    ("agent", '""', "%agent: missing the request"),
    ("agent", "--cycle code-review ' '", "%agent: missing the request"),
]


@pytest.mark.parametrize(("magic", "line", "start"), BAD_LINES, ids=[f"{m} {x}" for m, x, _ in BAD_LINES])
def test_bad_input_is_a_one_line_usage_error(ip, magic: str, line: str, start: str) -> None:
    ip.run_line_magic("agent", CANONICAL)  # s0001 exists, so only the input is wrong
    with pytest.raises(UsageError) as caught:
        ip.run_line_magic(magic, line)
    message = str(caught.value)
    assert message.startswith(start), message
    assert "\n" not in message


def test_a_duplicate_session_id_is_refused_without_a_new_session(ip, ws: Path) -> None:
    ip.run_line_magic("agent", CANONICAL)
    with pytest.raises(UsageError, match="session 's0001' already exists; pick another --session id"):
        ip.run_line_magic("agent", f"--session s0001 {CANONICAL}")
    assert sorted(p.name for p in (ws / "sessions").iterdir()) == ["s0001"]


def test_the_shell_shows_one_line_and_no_traceback(ip, capsys: pytest.CaptureFixture[str]) -> None:
    result = ip.run_cell("%replay s0099")
    out, err = capsys.readouterr()
    assert not result.success
    assert err == "UsageError: %replay: no session 's0099' in this workspace (sessions: none yet; " \
                  "run %agent first)\n"
    assert "Traceback" not in out + err


def test_an_unknown_id_lists_the_latest_sessions_and_how_many_more(ip, ws: Path) -> None:
    """Class-day defect (issue 22): `%replay s9999` listed 8 ids as if they were all."""
    import shutil

    ip.run_line_magic("agent", CANONICAL)
    for n in range(2, 21):
        shutil.copytree(ws / "sessions" / "s0001", ws / "sessions" / f"s{n:04d}")
    with pytest.raises(UsageError) as caught:
        ip.run_line_magic("replay", "s9999")
    assert str(caught.value) == ("%replay: no session 's9999' in this workspace (sessions: s0013, s0014, "
                                 "s0015, s0016, s0017, s0018, s0019, s0020 and 12 more)")
    shutil.rmtree(ws / "sessions" / "s0020")
    for n in range(9, 20):
        shutil.rmtree(ws / "sessions" / f"s{n:04d}")
    with pytest.raises(UsageError, match=r"\(sessions: s0001, .*, s0008\)$"):  # 8: all, no "more"
        ip.run_line_magic("replay", "s9999")


def test_help_prints_usage_and_runs_nothing(ip, ws: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert ip.run_line_magic("agent", '--help "hello"') is None
    out = capsys.readouterr().out
    assert out.startswith("usage: %agent [-h] [--profile NAME] [--faults PLAN]")
    assert "malformed_worker" in out and 'example: %agent "hello, greet Ada"' in out
    assert not (ws / "sessions").exists()
    assert ip.run_line_magic("replay", "-h") is None
    assert "--at N" in capsys.readouterr().out


SKILL = """---
name: salute
description: Salutes someone with the echo tool.
triggers: [salute]
allowed-tools: [echo]
---
# Salute skill
1. Worker echoes a salute.
"""


def test_skill_cell_registers_a_valid_skill_that_the_next_run_uses(ip, ws: Path) -> None:
    check = ip.run_cell_magic("skill", "", SKILL)
    assert isinstance(check, SkillCheck) and check.ok
    assert (check.name, check.file, check.action) == ("salute", "skills/salute/SKILL.md", "created")
    assert (ws / "skills" / "salute" / "SKILL.md").read_text() == SKILL
    assert repr(check).splitlines()[0] == "skill 'salute' registered (created: skills/salute/SKILL.md)"
    run = ip.run_line_magic("agent", '"salute Grace"')
    invoked = [e.payload for e in run.events if e.type == "skill.invoke"]
    assert invoked == [{"skill": "salute", "trigger": "salute", "file": "skills/salute/SKILL.md",
                        "allowed_tools": ["echo"]}]
    assert ip.run_cell_magic("skill", "", SKILL).action == "replaced"


@pytest.mark.parametrize(("change", "field"), [
    (("triggers: [salute]", "triggers: salute"), "triggers"),
    (("description: Salutes someone with the echo tool.\n", ""), "description"),
    (("name: salute", "name: 7"), "name"),
    (("---\nname", "name"), "frontmatter"),
])
def test_skill_cell_names_the_field_and_writes_nothing(ip, ws: Path, change: tuple[str, str],
                                                      field: str) -> None:
    check = ip.run_cell_magic("skill", "", SKILL.replace(*change))
    assert not check.ok and check.action == "not written"
    assert check.problem.field == field
    assert f": {field}: " in repr(check) and repr(check).startswith("skill NOT registered")
    assert not (ws / "skills" / "salute").exists()


def test_an_invalid_skill_leaves_the_registered_one_alone(ip, ws: Path) -> None:
    ip.run_cell_magic("skill", "", SKILL)
    check = ip.run_cell_magic("skill", "", SKILL.replace("[echo]", "echo"))
    assert check.problem.field == "allowed-tools"
    assert "skills/salute/SKILL.md already holds a skill; it is unchanged" in repr(check)
    assert (ws / "skills" / "salute" / "SKILL.md").read_text() == SKILL


def test_skill_dry_run_and_notes(ip, ws: Path) -> None:
    text = SKILL.replace("[salute]", "[salute, hello]").replace("[echo]", "[echo, shout]")
    check = ip.run_cell_magic("skill", "--dry-run", text)
    assert check.ok and check.action.startswith("checked")
    assert not (ws / "skills" / "salute").exists()
    notes = "\n".join(check.notes)
    assert "tool 'shout' is not registered: a call to it fails closed (TOOL_NOT_FOUND)" in notes
    assert "trigger 'hello' is shared with greet" in notes


def test_skill_needs_a_workspace(ip, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # no agentos.yaml here or above: the bundled, read-only reference
    with pytest.raises(UsageError, match=r"^%%skill: no workspace to write the skill into: run "
                                         r"scratch_workspace\(\)"):
        ip.run_cell_magic("skill", "", SKILL)


def test_agent_cycle_runs_an_l8_cycle(ip) -> None:
    run = ip.run_line_magic("agent", '--cycle code-review "review the change in auth.py"')
    assert run.ok and run.cycle.cycle_id == "code-review" and run.cycle.verdict == "done"
    assert run.cycle.visited == ("review", "report")
    assert run.snapshot.workflow["verdict"] == "done"
    lines = repr(run).splitlines()
    assert lines[1].startswith("  cycle:  code-review: verdict done after 2 phase run(s): ")
    assert lines[2] == "  phases: review → report"
    halted = ip.run_line_magic("agent", '--cycle bugfix --faults p0_finding "fix the login bug"')
    assert not halted.ok and halted.cycle.verdict == "halted" and halted.error is None
    assert "NOT ok (fail-closed)" in repr(halted).splitlines()[0]
    aborted = ip.run_line_magic("agent", '--cycle code-review --faults phase_advance_denied "review it"')
    assert aborted.cycle.verdict == "abort" and aborted.error.code == "GATE_DENIED"


@pytest.mark.parametrize(("line", "start"), [
    ('--cycle nope "x"', "%agent: unknown cycle 'nope'; registered: bugfix, code-review, ralph-loop"),
    ('--mode headless "x"', "%agent: --mode applies to a cycle: add --cycle ID"),
    ('--cycle code-review --mode sideways "x"',
     "%agent: cycle 'code-review' does not run in mode 'sideways'"),
])
def test_bad_cycle_arguments(ip, ws: Path, line: str, start: str) -> None:
    with pytest.raises(UsageError) as caught:
        ip.run_line_magic("agent", line)
    assert str(caught.value).startswith(start) and "\n" not in str(caught.value)
    assert not (ws / "sessions").exists()


def test_replay_summary_is_bounded_and_agrees_with_the_snapshot(ip, ws: Path) -> None:
    from agentos_kernel.store.replay.summary import SnapshotSummary
    from agentos_kernel.testing import write_long_session

    run = ip.run_line_magic("agent", CANONICAL)
    full, summ = ip.run_line_magic("replay", "s0001"), ip.run_line_magic("replay", "s0001 --summary --at 20")
    assert isinstance(summ.snapshot, SnapshotSummary) and (summ.at, summ.total) == (20, 32)
    assert summ.snapshot == ip.run_line_magic("replay", "s0001 --at 20 --summary").snapshot
    assert repr(summ).splitlines()[0] == ("summary (snapshot_v2: counts and the last 20 items) of s0001 "
                                          "after event 20 of 32 (recomputed from the log alone)")
    whole = ip.run_line_magic("replay", "s0001 --summary").snapshot
    assert whole.counts["hook_decisions"] == len(full.hook_decisions) == 7 and whole.cost == full.cost
    from agentos_kernel.jupyter.api import replay_session
    assert replay_session(run, summary=True).snapshot == whole  # the AgentRun's events, same summary
    write_long_session(ws / "sessions", "long", 3000)
    long = ip.run_line_magic("replay", "long --summary")
    assert long.total == 3000 and len(long.recent["hook_decisions"]) == 20
    with pytest.raises(UsageError, match="drop --summary"):
        ip.run_line_magic("replay", "s0001 --verify --summary")
    with pytest.raises(UsageError, match="out of range"):
        ip.run_line_magic("replay", "s0001 --summary --at 33")

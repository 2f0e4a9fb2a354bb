"""WorkflowRegistry: workflows/ Markdown is loaded fail-closed, every problem names its
file and field, and an unknown id is denied."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentos_kernel import ContractError, Err, ErrorCode, Runtime, SchemaRegistry
from agentos_kernel.skills import frontmatter as fm
from agentos_kernel.workflows.registry import load_workflows
from agentos_kernel.workspace import reference_dir

from .conftest import write


def load(ws: Path):
    return load_workflows(ws / "workflows", SchemaRegistry.load(ws / "schemas"))


def problems(ws: Path) -> list[str]:
    with pytest.raises(ContractError) as exc:
        load(ws)
    return [str(p) for p in exc.value.problems]


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text, f"{old!r} not in {path}"
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


def test_reference_workflows_load(ws: Path) -> None:
    reg = load(ws)
    assert set(reg.cycles) == {"code-review", "bugfix", "ralph-loop"}
    assert reg.cycles["code-review"].phases == ("review", "fix", "report")
    assert reg.phases["review"].personas == ("security-reviewer", "correctness-reviewer", "test-reviewer")
    assert {p.kind for p in reg.policies.values()} == {
        "confidence-gating", "severity-routing", "role-permissions", "mode-dispatch", "loop-halt"}
    assert reg.personas["security-reviewer"].role == "reviewer"
    assert reg.artifacts["brainstorm"].naming == "docs/brainstorms/{session}-{slug}-brainstorm.md"


def test_every_persona_is_a_valid_skill_frontmatter(ws: Path) -> None:
    schemas = SchemaRegistry.load(ws / "schemas")
    files = sorted((ws / "workflows" / "personas").glob("*/*.md"))
    assert len(files) >= 9
    for path in files:
        meta, body = fm.split(path.read_text(encoding="utf-8"))
        assert schemas.violations(meta, "skill_frontmatter_v1") == [], path
        assert body.strip(), f"{path} has no prompt body"


def test_id_must_equal_file_name(ws: Path) -> None:
    edit(ws / "workflows/phases/report.md", "id: report", "id: summary")
    assert "workflows/phases/report.md: id: is 'summary'; it must equal the file name 'report'" \
        in problems(ws)


def test_persona_name_must_equal_file_name(ws: Path) -> None:
    edit(ws / "workflows/personas/writer/learner.md", "name: learner", "name: teacher")
    assert any(p.startswith("workflows/personas/writer/learner.md: name: is 'teacher'") for p in problems(ws))


def test_artifact_id_must_match_template_file_name(ws: Path) -> None:
    edit(ws / "workflows/artifacts/plan-template.md", "id: plan", "id: schedule")
    assert any(p.startswith("workflows/artifacts/plan-template.md: id: is 'schedule'; it must equal "
                            "the file name 'plan'") for p in problems(ws))


def test_invalid_frontmatter_names_file_and_field(ws: Path) -> None:
    edit(ws / "workflows/policies/confidence-gate.md", "kind: confidence-gating", "kind: vibes")
    found = problems(ws)
    assert any(p.startswith("workflows/policies/confidence-gate.md: kind: ") and "policy_v1" in p
               for p in found)


def test_unknown_phase_in_a_cycle_is_a_load_error(ws: Path) -> None:
    edit(ws / "workflows/cycles/code-review.md", "phases: [review, fix, report]",
         "phases: [review, fix, report, deploy]")
    assert any(p.startswith("workflows/cycles/code-review.md: phases[3]: unknown phase 'deploy'")
               for p in problems(ws))


def test_unknown_policy_persona_and_artifact_are_load_errors(ws: Path) -> None:
    edit(ws / "workflows/cycles/bugfix.md", "policies: [persona-permissions,", "policies: [no-such-policy,")
    edit(ws / "workflows/phases/review.md", "agents_invoked: [security-reviewer,",
         "agents_invoked: [ghost-reviewer,")
    edit(ws / "workflows/phases/learn.md", "artifact: learning", "artifact: diary")
    found = problems(ws)
    assert any(p.startswith("workflows/cycles/bugfix.md: policies[0]: unknown policy 'no-such-policy'")
               for p in found)
    assert any(p.startswith("workflows/phases/review.md: agents_invoked[0]: unknown persona 'ghost-reviewer'")
               for p in found)
    assert any(p.startswith("workflows/phases/learn.md: artifact: unknown artifact 'diary'") for p in found)


def test_dangling_next_and_rework(ws: Path) -> None:
    edit(ws / "workflows/phases/verify.md", "rework: work", "rework: redo")
    assert any(p.startswith("workflows/phases/verify.md: rework: unknown phase 'redo'") for p in problems(ws))


def test_next_must_stay_inside_the_cycle(ws: Path) -> None:
    edit(ws / "workflows/phases/report.md", "artifact: pulse", "artifact: pulse\nnext: learn")
    assert any("workflows/cycles/code-review.md: phases[2]: phase 'report' has next 'learn', which is not "
               "a phase of this cycle" in p for p in problems(ws))


def test_persona_written_inline_in_a_phase_is_refused(ws: Path) -> None:
    edit(ws / "workflows/phases/report.md", "agents_invoked: [reporter]",
         "agents_invoked:\n  - {name: reporter, description: inline, output_schema: pulse_report_v1}")
    assert any(p.startswith("workflows/phases/report.md: agents_invoked[0]: this persona is written inline")
               for p in problems(ws))


def test_persona_written_inline_in_a_cycle_is_refused(ws: Path) -> None:
    edit(ws / "workflows/cycles/ralph-loop.md", "entry_phase: iterate",
         "entry_phase: iterate\npersonas:\n  - name: ralph\n    description: inline")
    assert any(p.startswith("workflows/cycles/ralph-loop.md: personas: a persona is written inline")
               for p in problems(ws))


def test_signal_syntax_error_names_file_field_and_position(ws: Path) -> None:
    edit(ws / "workflows/phases/plan.md", 'advance_signal: "size(artifacts.plan.steps) > 0"',
         'advance_signal: "size(artifacts.plan.steps) >"')
    found = [p for p in problems(ws) if p.startswith("workflows/phases/plan.md: advance_signal: ")]
    assert found and "CEL syntax error at line 1, column" in found[0]


def test_unknown_name_in_a_signal_names_its_position(ws: Path) -> None:
    edit(ws / "workflows/phases/iterate.md", 'halt_signal: "generation > 0 && artifacts.pulse.grade == 0"',
         'halt_signal: "generation > 0 && os.system == 0"')
    assert any(p.startswith("workflows/phases/iterate.md: halt_signal: at line 1, column 19: "
                            "unknown name 'os'") for p in problems(ws))


def test_rule_outside_the_kind_vocabulary_is_refused(ws: Path) -> None:
    edit(ws / "workflows/policies/severity-route.md", "    then: safe_auto", "    then: allow")
    assert any(p.startswith("workflows/policies/severity-route.md: rules[1].then: 'allow' is not a "
                            "severity-routing decision") for p in problems(ws))


def test_rule_reading_another_kinds_subject_is_refused(ws: Path) -> None:
    # `finding` is the subject of finding policies; a loop-halt rule never has one.
    edit(ws / "workflows/policies/ralph-halt.md", "generation >= 5 &&", "finding.severity == 'P0' &&")
    assert any(p.startswith("workflows/policies/ralph-halt.md: rules[1].when: at line 1, column 1: "
                            "unknown name 'finding'") for p in problems(ws))


def test_artifact_naming_and_example_are_checked(ws: Path) -> None:
    edit(ws / "workflows/artifacts/learning-template.md", 'naming: "docs/learnings/{session}-{slug}.md"',
         'naming: "../outside/{user}.md"')
    edit(ws / "workflows/artifacts/pulse-template.md", "  grade: 85", "  grade: 185")
    found = problems(ws)
    assert any(p.startswith("workflows/artifacts/learning-template.md: naming: unknown placeholder(s) "
                            "['user']") for p in found)
    assert any(p.startswith("workflows/artifacts/pulse-template.md: example.grade: ") for p in found)


def test_artifact_template_file_naming_is_enforced(ws: Path) -> None:
    write(ws / "workflows/artifacts/notes.md", "---\nid: notes\n---\n")
    assert "workflows/artifacts/notes.md: -: artifact templates are named <id>-template.md" in problems(ws)


def test_persona_output_schema_must_be_loaded(ws: Path) -> None:
    edit(ws / "workflows/personas/worker/ralph.md", "output_schema: pulse_report_v1",
         "output_schema: vibes_v9")
    assert "workflows/personas/worker/ralph.md: output_schema: no schema 'vibes_v9' is loaded" in problems(ws)


def test_a_broken_plane_refuses_to_run_any_cycle(ws: Path) -> None:
    """Fail-closed: no cycle runs on a half-loaded registry (the error names the file)."""
    edit(ws / "workflows/phases/report.md", "id: report", "id: summary")
    rt = Runtime.from_workspace(ws)
    with pytest.raises(ContractError, match=r"workflows/phases/report\.md: id:"):
        rt.run_cycle("code-review", "review auth.py")
    assert rt.store.sessions() == []
    # the core request path does not depend on workflows/
    assert rt.handle_user_request("hello, greet Ada").value.output == "Hello, Ada!"


def test_unknown_cycle_id_is_denied_before_a_session(ws: Path) -> None:
    rt = Runtime.from_workspace(ws)
    got = rt.run_cycle("deploy-to-prod", "ship it")
    assert isinstance(got, Err)
    assert got.error.code == ErrorCode.UNKNOWN_ID
    assert "unknown cycle 'deploy-to-prod'; registered: bugfix, code-review, ralph-loop" in got.error.message
    assert rt.store.sessions() == []


def test_mode_the_cycle_does_not_allow_is_denied(ws: Path) -> None:
    edit(ws / "workflows/cycles/ralph-loop.md", "default_mode: headless",
         "modes: [headless, report-only]\ndefault_mode: headless")
    got = Runtime.from_workspace(ws).run_cycle("ralph-loop", "x", mode="interactive")
    assert isinstance(got, Err) and "does not run in mode 'interactive'" in got.error.message


def test_validate_reports_workflow_problems(ws: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from agentos_kernel.cli.main import main

    assert main(["validate", str(ws)]) == 0
    edit(ws / "workflows/phases/fix.md", "next: review", "next: nowhere")
    capsys.readouterr()
    assert main(["validate", str(ws)]) == 1
    out = capsys.readouterr().out
    assert "workflows/phases/fix.md: next: unknown phase 'nowhere'" in out


def test_the_wheel_ships_workflows() -> None:
    text = (reference_dir() / "pyproject.toml").read_text(encoding="utf-8") \
        if (reference_dir() / "pyproject.toml").exists() else ""
    if not text:
        pytest.skip("installed from a wheel: the reference workspace is already inside it")
    assert '"workflows" = "agentos_kernel/_reference/workflows"' in text


def test_a_workspace_without_the_l8_schemas_cannot_load_workflows(ws: Path) -> None:
    (ws / "schemas" / "cycle_v1.json").unlink()
    (ws / "schemas" / "phase_v1.json").unlink()
    found = problems(ws)
    assert found == ["workflows: cycle_v1: no schema 'cycle_v1' is loaded; the workflow plane needs it",
                     "workflows: phase_v1: no schema 'phase_v1' is loaded; the workflow plane needs it"]

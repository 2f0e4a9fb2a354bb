"""Contract files that are not UTF-8, byte for byte: agentos.yaml, agents/*.md, a schema and a
fault plan stop the load with one line naming the file and the byte; a SKILL.md is skipped
with that reason (one broken skill never stops the others). A `\\ud800` escape inside their
YAML, which decodes to a lone surrogate, is named with its field. Nothing is run."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentos_kernel import ContractError, Runtime
from agentos_kernel.providers.faults import FaultPlanError, load_fault_plan

from .helpers import CANONICAL, Cli

UTF8_FIX = "(invalid start byte); save the file as UTF-8"


def _spoil(path: Path, old: bytes, new: bytes) -> int:
    """Replace the first `old` in `path` with `new`; the offset where it was."""
    data = path.read_bytes()
    at = data.index(old)
    path.write_bytes(data[:at] + new + data[at + len(old):])
    return at


def _refused(workspace: Path, cli: Cli, expected: str) -> None:
    with pytest.raises(ContractError) as caught:
        Runtime.from_workspace(workspace)
    assert str(caught.value) == expected
    code, out, err = cli("--workspace", workspace, "run", CANONICAL)
    assert (code, out, err) == (2, "", f"agentos: error: {expected}\n")
    assert not (workspace / "sessions").exists()


@pytest.mark.parametrize("name, shown", [("agentos.yaml", "agentos.yaml"),
                                         ("agents/worker.md", "agents/worker.md")])
def test_a_yaml_or_agent_file_that_is_not_utf8_names_the_file_and_byte(workspace: Path, cli: Cli,
                                                                     name: str, shown: str) -> None:
    at = _spoil(workspace / name, b"scripted" if name == "agentos.yaml" else b"worker", b"scr\xffipted")
    _refused(workspace, cli, f"{shown}: -: not UTF-8 text: byte 0xff at offset {at + 3} {UTF8_FIX}")


def test_a_schema_that_is_not_utf8_names_the_file_and_byte(workspace: Path, cli: Cli) -> None:
    schema = workspace / "schemas" / "plan_v1.json"
    at = _spoil(schema, b'"type"', b'"ty\xffpe"')
    _refused(workspace, cli, f"{schema}: -: not UTF-8 text: byte 0xff at offset {at + 3} {UTF8_FIX}")


def test_a_skill_that_is_not_utf8_is_skipped_with_the_byte_named(workspace: Path) -> None:
    skill = workspace / "skills" / "greet" / "SKILL.md"
    at = _spoil(skill, b"name: greet", b"name: gr\xe9et")
    rt = Runtime.from_workspace(workspace)
    assert "greet" not in rt.skills.skills and "append-note" in rt.skills.skills
    (problem,) = rt.skills.skipped
    assert str(problem) == (f"skills/greet/SKILL.md: -: not UTF-8 text: byte 0xe9 at offset {at + 8} "
                            "(invalid continuation byte); save the file as UTF-8")
    got = rt.handle_user_request(CANONICAL)
    (skipped,) = [e.payload for e in rt.events(got.value.session_id) if e.type == "skill.skipped"]
    assert skipped["file"] == "skills/greet/SKILL.md" and "not UTF-8 text" in skipped["reason"]


def test_a_fault_plan_that_is_not_utf8_is_one_line(workspace: Path, tmp_path: Path, cli: Cli) -> None:
    plan = tmp_path / "plan.yaml"
    plan.write_bytes(b"faults:\n  - {kind: malformed_json, role: w\xffrker}\n")
    expected = f"{plan}: -: not UTF-8 text: byte 0xff at offset 42 {UTF8_FIX}"
    with pytest.raises(FaultPlanError) as caught:
        load_fault_plan(str(plan))
    assert str(caught.value) == expected
    code, out, err = cli("--workspace", workspace, "run", CANONICAL, "--faults", plan)
    assert (code, out, err) == (2, "", f"agentos: error: {expected}\n")
    assert not (workspace / "sessions").exists()


LONE_ESCAPE = b'"scripted-\\ud800"'  # valid UTF-8 bytes whose YAML decodes to a lone surrogate


def test_a_lone_surrogate_escape_in_agentos_yaml_names_the_field(workspace: Path, cli: Cli) -> None:
    _spoil(workspace / "agentos.yaml", b"scripted-1", LONE_ESCAPE)
    _refused(workspace, cli, "agentos.yaml: profiles.scripted.model: not valid UTF-8 text: index 9 is a "
                             "lone surrogate U+D800 (half of a UTF-16 pair, e.g. a JSON \\ud800)")


def test_a_lone_surrogate_escape_in_a_fault_plan_names_the_field(tmp_path: Path) -> None:
    plan = tmp_path / "plan.yaml"
    plan.write_bytes(b'faults:\n  - {kind: tool_call, role: worker, tool: echo, args: {text: "\\ud800"}}\n')
    with pytest.raises(FaultPlanError, match=r"faults\.0\.args\.text: not valid UTF-8 text: index 0 is a "
                                             "lone surrogate U.D800"):
        load_fault_plan(str(plan))


def test_a_lone_surrogate_escape_in_skill_frontmatter_skips_it(workspace: Path) -> None:
    _spoil(workspace / "skills" / "greet" / "SKILL.md", b"name: greet", b'name: "gr\\udcffeet"')
    rt = Runtime.from_workspace(workspace)
    (problem,) = rt.skills.skipped
    assert (problem.file, problem.field) == ("skills/greet/SKILL.md", "name")
    assert problem.message.startswith("not valid UTF-8 text: index 2 is the byte 0xff")

"""Bad input from people and files: each is refused with a message naming what and where,
and nothing outside the workspace's sessions/ (or inside an existing log) is touched."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentos_kernel import ContractError, Err, ErrorCode, Ok, Runtime
from agentos_kernel.tools.builtin import read_file, write_file
from agentos_kernel.tools.dispatch import ToolContext

from .helpers import CANONICAL, Cli, Run, RunRequest


def _tree(root: Path) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*"))


def _one_line(err: str) -> str:
    assert err.endswith("\n") and err.count("\n") == 1, f"stderr is not one line: {err!r}"
    assert err.startswith("agentos: error: ")
    return err


# -- agentos.yaml ------------------------------------------------------------------------------

BAD_CONFIGS = {
    "bad_yaml": ("default_profile: [scripted\nprofiles: {}\n", "agentos.yaml: line"),
    "wrong_type": ("schema_version: v1\ndefault_profile: scripted\nprofiles:\n"
                   "  scripted: {provider: scripted, model: scripted-1, max_rework: lots}\n",
                   "agentos.yaml: profiles.scripted.max_rework: "),
    "missing_field": ("schema_version: v1\nprofiles:\n  scripted: {provider: scripted, model: m}\n",
                      "agentos.yaml: default_profile: "),
    "not_a_mapping": ("- just\n- a list\n", "agentos.yaml: -: "),
    "unknown_default": ("schema_version: v1\ndefault_profile: nope\nprofiles:\n"
                        "  scripted: {provider: scripted, model: m}\n", "agentos.yaml: default_profile: "),
    "unknown_provider": ("schema_version: v1\ndefault_profile: x\nprofiles:\n"
                         "  x: {provider: telepathy, model: m}\n", "agentos.yaml: profiles.x.provider: "),
    "self_review": ("schema_version: v1\ndefault_profile: x\nprofiles:\n"
                    "  x: {provider: scripted, model: m, agents: {reviewer: worker}}\n",
                    "agentos.yaml: profiles.x.agents: "),
    "bad_hook_handler": ("schema_version: v1\ndefault_profile: x\nprofiles:\n"
                         "  x: {provider: scripted, model: m}\n"
                         "hooks:\n  - {event: Stop, handler: 'no_such_module:fn'}\n",
                         "agentos.yaml: hooks[0]: "),
}


@pytest.mark.parametrize("name", sorted(BAD_CONFIGS))
def test_malformed_agentos_yaml_is_a_contract_error_naming_file_and_field(workspace: Path, cli: Cli,
                                                                         name: str) -> None:
    text, expected = BAD_CONFIGS[name]
    (workspace / "agentos.yaml").write_text(text, encoding="utf-8")
    with pytest.raises(ContractError) as caught:
        Runtime.from_workspace(workspace)
    assert str(caught.value).startswith(expected), str(caught.value)
    code, out, err = cli("--workspace", workspace, "run", CANONICAL)
    assert code == 2 and out == ""
    assert expected in _one_line(err)
    assert not (workspace / "sessions").exists()


def test_every_config_problem_is_listed_not_just_the_first(workspace: Path) -> None:
    (workspace / "agentos.yaml").write_text(
        "default_profile: x\nprofiles:\n  x: {provider: scripted, model: 5, deterministic: 'yes'}\n")
    with pytest.raises(ContractError) as caught:
        Runtime.from_workspace(workspace)
    fields = sorted(p.field for p in caught.value.problems)
    assert fields == ["profiles.x.deterministic", "profiles.x.model"]
    assert "(and 1 more; run `agentos validate`)" in str(caught.value)


def test_unknown_profile_is_one_line_naming_it(workspace: Path, cli: Cli) -> None:
    with pytest.raises(ContractError, match="unknown profile 'nope'"):
        Runtime.from_workspace(workspace, profile="nope")
    code, out, err = cli("--workspace", workspace, "run", CANONICAL, "--profile", "nope")
    assert code == 2 and out == ""
    assert "'nope'" in _one_line(err) and "scripted-alt" in err  # and the known ones


def test_workspace_without_agentos_yaml_is_refused(tmp_path: Path, cli: Cli) -> None:
    with pytest.raises(ContractError, match="agentos init"):
        Runtime.from_workspace(tmp_path)
    code, _, err = cli("--workspace", tmp_path, "demo")
    assert code == 2 and "no agentos.yaml" in _one_line(err)


def test_unknown_fault_preset_is_one_line_naming_it(workspace: Path, cli: Cli) -> None:
    code, out, err = cli("--workspace", workspace, "run", CANONICAL, "--faults", "gremlins")
    assert code == 2 and out == ""
    assert "'gremlins'" in _one_line(err) and "malformed_worker" in err


# -- SKILL.md ----------------------------------------------------------------------------------

BROKEN_SKILLS = {
    "bad_yaml": ("---\nname: [broken\n---\nbody\n", "frontmatter line"),
    "wrong_type": ("---\nname: broken\ndescription: 5\n---\nbody\n", "description"),
    "missing_field": ("---\nname: broken\n---\nbody\n", "description"),
    "no_frontmatter": ("# just markdown\n", "frontmatter"),
    "unclosed": ("---\nname: broken\ndescription: d\n", "frontmatter"),
}


@pytest.mark.parametrize("name", sorted(BROKEN_SKILLS))
def test_broken_skill_is_skipped_with_a_logged_reason_and_others_still_load(
        workspace: Path, run_request: RunRequest, name: str) -> None:
    text, field = BROKEN_SKILLS[name]
    (workspace / "skills" / "broken").mkdir()
    (workspace / "skills" / "broken" / "SKILL.md").write_text(text, encoding="utf-8")
    rt = Runtime.from_workspace(workspace)
    assert "broken" not in rt.skills.skills
    assert {"greet", "append-note", "inspect-file"} <= set(rt.skills.skills)
    (problem,) = rt.skills.skipped
    assert problem.file == "skills/broken/SKILL.md" and problem.field.startswith(field)

    run = run_request()
    assert run.ok and run.of("skill.invoke")[0].payload["skill"] == "greet"
    (skipped,) = run.of("skill.skipped")
    assert skipped.payload["file"] == "skills/broken/SKILL.md"
    assert skipped.payload["field"].startswith(field) and skipped.payload["reason"]


def test_duplicate_skill_name_is_skipped_not_overwritten(workspace: Path) -> None:
    copy = workspace / "skills" / "greet-copy"
    copy.mkdir()
    text = (workspace / "skills" / "greet" / "SKILL.md").read_text().replace("- echo", "- write_file")
    (copy / "SKILL.md").write_text(text)
    rt = Runtime.from_workspace(workspace)
    assert rt.skills["greet"].allowed_tools == ("echo",)
    assert [(p.file, p.field) for p in rt.skills.skipped] == [("skills/greet-copy/SKILL.md", "name")]


@pytest.mark.parametrize("prompt, skill", [
    ("this is about nothing", None),
    ("think of something", None),
    ("Hi there", "greet"),
    ("well, HELLO!", "greet"),
    ("say hi.", "greet"),
    ("please remember this", "append-note"),
    ("notes are nice", None),
    ("hello, please read README.md", "greet"),  # the earliest trigger wins
])
def test_triggers_match_whole_words_only(runtime: Runtime, prompt: str, skill: str | None) -> None:
    picked = runtime.skills.select(prompt)
    assert (picked[0].name if picked else None) == skill


def test_a_trigger_inside_a_word_does_not_select_the_skill(run_request: RunRequest) -> None:
    run = run_request("this")
    assert run.ok and not run.of("skill.invoke")
    assert not run.of("tool.invoke"), "no skill, so no tool is in scope"


# -- empty prompts, positions past the end, unknown filters ----------------------------------

@pytest.mark.parametrize("prompt", ["", "   ", "\n\t"])
def test_an_empty_prompt_is_refused_before_any_session(workspace: Path, runtime: Runtime, cli: Cli,
                                                      prompt: str) -> None:
    got = runtime.handle_user_request(prompt)
    assert isinstance(got, Err) and got.error.code == ErrorCode.PROMPT_EMPTY
    assert got.error.session_id is None
    cycle = runtime.run_cycle("code-review", prompt)
    assert isinstance(cycle, Err) and cycle.error.code == ErrorCode.PROMPT_EMPTY
    code, out, err = cli("--workspace", workspace, "run", prompt)
    assert code == 2 and out == "" and "the prompt is empty" in _one_line(err)
    assert runtime.store.sessions() == []


def test_replay_past_the_end_of_the_log_names_the_valid_range(workspace: Path, cli: Cli,
                                                              canonical_run: Run) -> None:
    sid, n = canonical_run.session_id, len(canonical_run.events)
    code, out, err = cli("--workspace", workspace, "replay", sid, "--at", n + 1)
    assert code == 2 and out == ""
    assert f"--at {n + 1} is out of range: {sid} has {n} events; use 0..{n}" in _one_line(err)
    code, out, _ = cli("--workspace", workspace, "replay", sid, "--at", n)
    assert code == 0 and f"events: {n}" in out


def test_events_filters_name_what_is_valid(workspace: Path, cli: Cli, canonical_run: Run) -> None:
    sid = canonical_run.session_id
    code, out, err = cli("--workspace", workspace, "events", sid, "--type", "nosuch.type")
    assert code == 2 and out == ""
    assert "unknown event type 'nosuch.type'; use one of " in _one_line(err) and "tool.invoke" in err
    code, out, _ = cli("--workspace", workspace, "events", sid, "--layer", "L1")
    assert code == 0 and [ln.split()[1] for ln in out.splitlines()[1:]] == ["tool.invoke", "tool.result"]
    code, out, _ = cli("--workspace", workspace, "events", sid, "--type", "human.escalation")
    assert code == 0 and len(out.splitlines()) == 1  # a known type this log lacks: the header only


# -- session ids -------------------------------------------------------------------------------

@pytest.mark.parametrize("bad", ["../x", "../../etc", "a/b", "/abs", ".", "..", "-rf", "x" * 65])
def test_bad_session_id_is_rejected_and_nothing_is_written(workspace: Path, runtime: Runtime,
                                                           cli: Cli, bad: str) -> None:
    outside = _tree(workspace.parent)
    got = runtime.handle_user_request(CANONICAL, session_id=bad)
    assert isinstance(got, Err) and "invalid session id" in got.error.message
    assert got.error.session_id is None
    code, out, err = cli("--workspace", workspace, "run", CANONICAL, f"--session={bad}")
    assert code == 2 and out == "" and "invalid session id" in _one_line(err)
    assert _tree(workspace.parent) == outside
    for verb in ("replay", "events"):
        code, _, err = cli("--workspace", workspace, verb, "--", bad)
        assert code == 2 and "invalid session id" in _one_line(err)


def test_existing_session_id_is_refused_and_its_log_untouched(workspace: Path, runtime: Runtime,
                                                              cli: Cli) -> None:
    first = runtime.handle_user_request(CANONICAL, session_id="mine")
    assert isinstance(first, Ok)
    log = first.value.log_path
    before = (log.read_bytes(), log.stat().st_mtime_ns)
    again = runtime.handle_user_request("hello, greet Bob", session_id="mine")
    assert isinstance(again, Err) and "'mine' already exists" in again.error.message
    code, out, err = cli("--workspace", workspace, "run", "hello", "--session", "mine")
    assert code == 2 and out == "" and "already exists" in _one_line(err)
    assert (log.read_bytes(), log.stat().st_mtime_ns) == before
    assert Runtime.from_workspace(workspace).store.sessions() == ["mine"]


def test_unknown_session_is_one_line_naming_it(workspace: Path, cli: Cli) -> None:
    for verb in ("replay", "events"):
        code, out, err = cli("--workspace", workspace, verb, "ghost")
        assert code == 2 and out == "" and "'ghost'" in _one_line(err)


# -- file tools stay inside the workspace ------------------------------------------------------

@pytest.fixture
def ctx(workspace: Path) -> ToolContext:
    return ToolContext(workspace, "s1")


@pytest.mark.parametrize("path", ["../secret", "../../secret", "/etc/passwd", "skills/../../secret"])
def test_read_file_outside_the_workspace_is_path_denied(ctx: ToolContext, path: str) -> None:
    (ctx.workspace.parent / "secret").write_text("top secret")
    got = read_file({"path": path}, ctx)
    assert isinstance(got, Err) and got.error.code == ErrorCode.PATH_DENIED


def test_symlink_pointing_out_is_path_denied(ctx: ToolContext) -> None:
    (ctx.workspace.parent / "secret").write_text("top secret")
    (ctx.workspace / "link").symlink_to(ctx.workspace.parent / "secret")
    got = read_file({"path": "link"}, ctx)
    assert isinstance(got, Err) and got.error.code == ErrorCode.PATH_DENIED


def _claim(expected: str = "") -> dict:
    return {"who": "worker", "why": "test", "expected_hash": expected, "schema_version": "v1"}


@pytest.mark.parametrize("path", ["sessions/s1/.events.jsonl", "sessions/new.txt", "./sessions/x",
                                  "skills/../sessions/x"])
def test_writes_under_sessions_are_denied(ctx: ToolContext, path: str) -> None:
    got = write_file({"path": path, "content": "forged", "claim": _claim()}, ctx)
    assert isinstance(got, Err) and got.error.code == ErrorCode.PATH_DENIED
    assert not (ctx.workspace / "sessions").exists()


def test_write_outside_the_workspace_is_denied(ctx: ToolContext) -> None:
    got = write_file({"path": "../escaped.txt", "content": "x", "claim": _claim()}, ctx)
    assert isinstance(got, Err) and got.error.code == ErrorCode.PATH_DENIED
    assert not (ctx.workspace.parent / "escaped.txt").exists()


def test_path_escape_through_a_run_is_denied_and_logged(workspace: Path, run_request: RunRequest,
                                                        tmp_path: Path) -> None:
    (workspace.parent / "secret.txt").write_text("top secret")
    plan = tmp_path / "escape.yaml"  # the worker asks read_file for ../secret.txt
    plan.write_text("faults:\n  - {kind: tool_call, role: worker, times: -1, tool: read_file,\n"
                    "     args: {path: ../secret.txt}}\n")
    run = run_request("read the secret", faults=str(plan))
    assert run.of("skill.invoke")[0].payload["skill"] == "inspect-file"
    assert ErrorCode.PATH_DENIED in run.error_codes()
    (result,) = {e.payload["error"]["code"] for e in run.of("tool.result")}
    assert result == ErrorCode.PATH_DENIED
    assert "top secret" not in run.log_path.read_text()

"""`agentos`: thin commands over the library, with the documented exit codes
(0 ok; 1 session not ok or validate found problems; 2 bad arguments, config or workspace)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from agentos_kernel import Ok, Runtime
from agentos_kernel.cli.main import build_parser
from agentos_kernel.cli.main import main as cli_main

from .helpers import CANONICAL, REPO, Cli

SUBCOMMANDS = ("demo", "run", "replay", "events", "verify", "rerun", "validate", "init")


@pytest.mark.parametrize("argv", [["--help"], *([c, "--help"] for c in SUBCOMMANDS)],
                         ids=["agentos", *SUBCOMMANDS])
def test_help_exits_zero(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as caught:
        cli_main(argv)
    assert caught.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: agentos")


def test_every_subcommand_is_listed_in_the_help() -> None:
    text = build_parser().format_help()
    for name in SUBCOMMANDS:
        assert name in text


@pytest.mark.parametrize("argv", [[], ["nope"], ["replay"], ["replay", "s1", "--at", "-1"],
                                  ["run"], ["events", "s1", "--bogus"]])
def test_bad_arguments_exit_two(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as caught:
        cli_main(argv)
    assert caught.value.code == 2
    assert "usage:" in capsys.readouterr().err


def test_demo_outside_a_workspace_uses_the_bundled_reference_and_writes_to_cwd(cli: Cli) -> None:
    code, out, err = cli("demo")
    assert code == 0 and err == ""
    assert "'hello, greet Ada'" in out and "ok: Hello, Ada!" in out
    assert '"closed": true' in out
    log = Path.cwd() / "sessions" / "s0001" / ".events.jsonl"
    assert log.is_file() and f"log {log}" in out


def test_run_prints_the_trace_and_the_outcome(workspace: Path, cli: Cli) -> None:
    code, out, err = cli("--workspace", workspace, "run", CANONICAL, "--session", "mine")
    assert code == 0 and err == ""
    lines = out.splitlines()
    assert lines[0].split() == ["seq", "type", "actor", "layer", "summary"]
    assert lines[1].split()[:2] == ["1", "session.start"]
    assert any("tool.invoke" in line and "echo" in line for line in lines)
    assert lines[-1] == "ok: Hello, Ada!"
    assert (workspace / "sessions" / "mine" / ".events.jsonl").is_file()


def test_run_json_prints_a_valid_snapshot(workspace: Path, cli: Cli) -> None:
    code, out, _ = cli("--workspace", workspace, "run", CANONICAL, "--json")
    assert code == 0
    snap = json.loads(out)
    rt = Runtime.from_workspace(workspace)
    assert isinstance(rt.schemas.validate(snap, "snapshot_v1"), Ok)
    assert snap["output"] == "Hello, Ada!" and snap["closed"] is True


def test_profile_flag_swaps_the_model(workspace: Path, cli: Cli) -> None:
    assert cli("--workspace", workspace, "run", CANONICAL, "--profile", "scripted-alt", "--json")[0] == 0
    rt = Runtime.from_workspace(workspace)
    (sid,) = rt.store.sessions()
    assert {e.payload["model"] for e in rt.events(sid) if e.type == "llm.response"} == {"scripted-2"}


def test_events_filters_by_type_and_prints_raw_json(workspace: Path, cli: Cli) -> None:
    assert cli("--workspace", workspace, "run", CANONICAL, "--session", "s1")[0] == 0
    code, out, _ = cli("--workspace", workspace, "events", "s1", "--type", "hook.fired")
    assert code == 0
    rows = out.splitlines()[1:]
    assert rows and all(r.split()[1] == "hook.fired" for r in rows)
    code, out, _ = cli("--workspace", workspace, "events", "s1", "--type", "tool", "--json")
    events = [json.loads(line) for line in out.splitlines()]
    assert [e["type"] for e in events] == ["tool.invoke", "tool.result"]
    log = (workspace / "sessions" / "s1" / ".events.jsonl").read_text().splitlines()
    assert [json.loads(line) for line in log if '"type":"tool.' in line] == events


def test_replay_prints_the_snapshot_fields(workspace: Path, cli: Cli) -> None:
    assert cli("--workspace", workspace, "run", CANONICAL, "--session", "s1")[0] == 0
    code, out, _ = cli("--workspace", workspace, "replay", "s1")
    assert code == 0
    assert "closed: true" in out and 'output: "Hello, Ada!"' in out and "state: \"DONE\"" in out
    code, out, _ = cli("--workspace", workspace, "replay", "s1", "--at", "0")
    assert code == 0 and "events: 0" in out and "closed: false" in out


def test_init_creates_a_valid_workspace_and_refuses_to_overwrite(tmp_path: Path, cli: Cli) -> None:
    dest = tmp_path / "new"
    code, out, _ = cli("init", dest)
    assert code == 0 and f"created workspace {dest}" in out
    for name in ("agentos.yaml", "schemas", "agents", "skills/greet/SKILL.md"):
        assert (dest / name).exists()
    assert cli("validate", dest)[0] == 0
    (dest / "agentos.yaml").write_text("# mine\n")
    code, out, err = cli("init", dest)
    assert code == 2 and out == "" and "already exists" in err
    assert (dest / "agentos.yaml").read_text() == "# mine\n"


# -- agentos validate ----------------------------------------------------------------------------


def test_validate_the_bundled_reference_workspace(cli: Cli) -> None:
    code, out, err = cli("validate")
    assert (code, err) == (0, ""), out
    assert out == "ok: every contract in bundled reference workspace is valid\n"


def test_validate_the_repository_workspace(cli: Cli) -> None:
    code, out, err = cli("validate", REPO)
    assert (code, err) == (0, ""), out


def test_validate_a_fresh_workspace_through_the_workspace_flag(workspace: Path, cli: Cli) -> None:
    code, out, _ = cli("--workspace", workspace, "validate")
    assert code == 0 and out == f"ok: every contract in {workspace.resolve()} is valid\n"


def test_validate_lists_every_problem_as_file_field_message(workspace: Path, cli: Cli) -> None:
    cfg = workspace / "agentos.yaml"
    cfg.write_text(cfg.read_text().replace("builtin:stop_after_one", "builtin:no_such_handler")
                   .replace("profiles:\n", "profiles:\n  cloud: {provider: watson, model: g}\n", 1))
    (workspace / "skills" / "greet" / "SKILL.md").write_text("---\nname: greet\n---\nno description\n")
    (workspace / "skills" / "shell").mkdir()
    (workspace / "skills" / "shell" / "SKILL.md").write_text(
        "---\nname: shell\ndescription: runs things\nallowed-tools: [bash]\n---\nbody\n")
    agent = workspace / "agents" / "advisor.md"
    agent.write_text(agent.read_text().replace("name: advisor", "name: adviser", 1))

    code, out, err = cli("validate", workspace)
    assert code == 1
    lines = out.splitlines()
    expected = [
        "agentos.yaml: profiles.cloud.provider: unknown provider 'watson'; available in this build: ",
        "agentos.yaml: hooks[3].handler: ",
        "agents/advisor.md: name: ",
        "skills/greet/SKILL.md: description: ",
        "skills/shell/SKILL.md: allowed-tools: ",
    ]
    for prefix in expected:
        assert [line for line in lines if line.startswith(prefix)], (prefix, lines)
    assert all(len(line.split(": ", 2)) == 3 for line in lines), lines
    assert err == f"{len(lines)} problem(s) in {workspace.resolve()}\n"
    assert len(lines) == len(expected)


def test_validate_reports_a_config_type_error_with_its_field(workspace: Path, cli: Cli) -> None:
    cfg = workspace / "agentos.yaml"
    cfg.write_text(cfg.read_text().replace("model: scripted-2", "model: 2"))
    code, out, _ = cli("validate", workspace)
    assert code == 1
    assert out.startswith("agentos.yaml: profiles.scripted-alt.model: 2 is not of type")


# -- import cost: the runtime never pulls in the notebook stack -------------------------------------


@pytest.mark.parametrize("module", ["agentos_kernel", "agentos_kernel.cli.main", "agentos_kernel.kernel"])
def test_import_does_not_load_the_notebook_stack(module: str) -> None:
    code = (f"import sys, json, {module}\n"
            "heavy = ('pandas', 'matplotlib', 'ipywidgets', 'IPython')\n"
            "print(json.dumps(sorted(m for m in heavy if m in sys.modules)))\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                          cwd=REPO.parent)
    assert json.loads(proc.stdout) == []



def test_version_names_the_package(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        cli_main(["--version"])
    assert exit_.value.code == 0
    from agentos_kernel import __version__

    assert capsys.readouterr().out.strip() == f"agentos-kernel {__version__}"

"""Issue 20: contracts are read-only to tools.

A prompt-injected worker (played by a fault plan) calls `write_file` on a contract with the
right expected_hash: agentos.yaml, a SKILL.md (to widen allowed-tools), an agent, a schema, a
workflow, a hook script, .git/config, a session log, a new file in a contract folder, and the
same targets through a symlink in notes/, `notes/../`, an absolute path and a case trick.
Each is refused with PATH_DENIED and its event, and the workspace is byte-identical after.
The allow-list (`writable:`, default notes/) is what lets a note through."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
import yaml

from agentos_kernel import Err, ErrorCode, Runtime
from agentos_kernel.errors import ContractError
from agentos_kernel.labs.audit.log import audit_log
from agentos_kernel.providers.faults import plan_from_doc
from agentos_kernel.store.events import read_log, verify_chain
from agentos_kernel.tools.builtin import sha256_of, write_file
from agentos_kernel.tools.dispatch import ToolContext
from agentos_kernel.tools.write_scope import CONTRACTS, DEFAULT_WRITABLE, build_scope

from .helpers import REPO, Cli

HOOK = {"event": "PreToolUse", "command": ["python", "hooks/gate.py"], "priority": 5, "timeout_s": 10}
GATE = 'import json, sys\njson.load(sys.stdin)\nprint(json.dumps({"decision": "allow"}))\n'


@pytest.fixture
def ws(workspace: Path) -> Path:
    """The `agentos init` workspace with a command hook, a git folder and one session."""
    config = workspace / "agentos.yaml"
    doc = yaml.safe_load(config.read_text(encoding="utf-8"))
    doc["hooks"].append(HOOK)
    config.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    (workspace / "hooks").mkdir()
    (workspace / "hooks" / "gate.py").write_text(GATE, encoding="utf-8")
    (workspace / ".git").mkdir()
    (workspace / ".git" / "config").write_text("[core]\n\tbare = false\n", encoding="utf-8")
    assert Runtime.from_workspace(workspace).handle_user_request("hello, greet Ada").value.ok
    (workspace / "notes").mkdir()
    (workspace / "notes" / "link").symlink_to("../agentos.yaml")
    (workspace / "notes" / "skills").symlink_to("../skills")
    return workspace


def snapshot(root: Path) -> dict[str, bytes | str | None]:
    """Every path under root: a file's bytes, a link's target, None for a folder."""
    out: dict[str, bytes | str | None] = {}
    for p in sorted(root.rglob("*")):
        rel = p.relative_to(root).as_posix()
        if p.is_symlink():
            out[rel] = os.readlink(p)
        elif p.is_file():
            out[rel] = p.read_bytes()
        else:
            out[rel] = None
    return out


def _target_text(root: Path, path: str) -> str:
    real = Path(os.path.realpath(root / path)) if not os.path.isabs(path) else Path(path)
    return real.read_text(encoding="utf-8") if real.is_file() else ""


# (path as the tool is given it, what the refusal says)
ATTACKS = [
    ("agentos.yaml", "is agentos.yaml, a contract"),
    ("skills/greet/SKILL.md", "is under skills/, a contract"),
    ("agents/worker.md", "is under agents/"),
    ("schemas/plan_v1.json", "is under schemas/"),
    ("workflows/cycles/bugfix.md", "is under workflows/"),
    ("hooks/gate.py", "is under hooks/"),
    (".git/config", "is under .git/"),
    ("sessions/s0001/.events.jsonl", "is under sessions/, the event logs"),
    ("skills/evil/SKILL.md", "is under skills/"),
    ("notes/link", "is agentos.yaml"),
    ("notes/skills/greet/SKILL.md", "is under skills/"),
    ("notes/../agentos.yaml", "is agentos.yaml"),
    ("./notes/./../skills/greet/SKILL.md", "is under skills/"),
    ("notes/agentos.yaml", "is named agentos.yaml"),
    ("AGENTOS.YAML", "is agentos.yaml"),
    ("Skills/greet/SKILL.md", "is under skills/"),
    ("README.md", "is outside the folders tools may write (notes/)"),
]


def _evil(path: str) -> str:
    if "SKILL" in path:  # widen the greet skill's allowed-tools
        return ("---\nname: greet\ndescription: Greets.\ntriggers: [hello, greet]\n"
                "allowed-tools: [echo, write_file, read_file, list_dir]\n---\nbody\n")
    return ('hooks:\n  - {event: SessionStart, command: ["sh", "-c", "touch PWNED"]}\n'
            "default_profile: scripted\nprofiles: {scripted: {provider: scripted, model: m}}\n")


def _claim(expected: str) -> dict[str, str]:
    return {"who": "worker", "why": "an injected instruction", "expected_hash": expected,
            "schema_version": "v1"}


@pytest.mark.parametrize("path, why", ATTACKS, ids=[a[0] for a in ATTACKS])
def test_write_file_refuses_every_contract_with_the_right_hash(ws: Path, path: str, why: str) -> None:
    ctx = ToolContext(ws, "s9", Runtime.from_workspace(ws).scope)
    before = snapshot(ws)
    args = {"path": path, "content": _evil(path), "claim": _claim(sha256_of(_target_text(ws, path)))}
    got = write_file(args, ctx)
    assert isinstance(got, Err) and got.error.code == ErrorCode.PATH_DENIED, got
    assert why in got.error.message and "\n" not in got.error.message
    assert str(ws) not in got.error.message  # the message names the argument, not the disk
    assert snapshot(ws) == before


@pytest.mark.parametrize("path, why", ATTACKS[:12], ids=[a[0] for a in ATTACKS[:12]])
def test_a_fault_plan_playing_an_injected_worker_is_refused_with_an_event(ws: Path, path: str,
                                                                         why: str) -> None:
    """The issue's red-team run: a fault plan makes the worker call write_file on a contract
    with its current sha256; it ends not ok, the log shows PATH_DENIED, nothing changed."""
    args = {"path": path, "content": _evil(path), "claim": _claim(sha256_of(_target_text(ws, path)))}
    plan = plan_from_doc("inject", {"faults": [{"kind": "tool_call", "role": "worker", "times": -1,
                                                "tool": "write_file", "args": args}]})
    before = snapshot(ws)
    rt = Runtime.from_workspace(ws, faults=plan)
    got = rt.handle_user_request('note "buy milk"')
    assert isinstance(got, Err) and got.error.code == ErrorCode.HUMAN_ESCALATION
    events = list(read_log(rt.store.path(got.error.session_id)))
    refused = [e for e in events if e.type == "domain.error" and e.payload["code"] == ErrorCode.PATH_DENIED]
    assert refused and all(why in e.payload["message"] for e in refused)
    results = [e.payload for e in events if e.type == "tool.result"]
    assert results and all(r["ok"] is False and r["error"]["code"] == ErrorCode.PATH_DENIED
                           for r in results)
    assert verify_chain(events) is None and not audit_log(rt.store.path(got.error.session_id)).gaps
    after = snapshot(ws)
    new = sorted(set(after) - set(before))
    assert all(p.startswith(f"sessions/{got.error.session_id}") for p in new), new
    assert {k: v for k, v in after.items() if k not in new} == before


def test_the_fault_plan_attack_over_the_cli_changes_nothing(ws: Path, tmp_path: Path, cli: Cli) -> None:
    config = ws / "agentos.yaml"
    plan = tmp_path / "inject.yaml"
    plan.write_text(yaml.safe_dump({"faults": [{"kind": "tool_call", "role": "worker", "times": -1,
                                                "tool": "write_file", "args": {
                                                    "path": "agentos.yaml", "content": _evil("x"),
                                                    "claim": _claim(sha256_of(config.read_text()))}}]}))
    before = config.read_bytes()
    code, out, err = cli("--workspace", ws, "run", "--faults", plan, 'note "buy milk"')
    assert code == 1 and "HUMAN_ESCALATION" in out + err
    assert config.read_bytes() == before
    code, out, err = cli("--workspace", ws, "run", "hello, greet Ada")
    assert code == 0 and not (ws / "PWNED").exists()


def test_a_note_still_goes_into_notes(ws: Path) -> None:
    rt = Runtime.from_workspace(ws)
    assert rt.handle_user_request('note "buy milk"').value.ok
    assert (ws / "notes" / "notes.md").read_text() == "- buy milk\n"


def test_a_hard_link_in_notes_cannot_carry_a_write_into_a_contract(ws: Path) -> None:
    """write_file replaces the directory entry (a temp file renamed over it), so a hard link
    to agentos.yaml planted in notes/ is cut, never written through."""
    config = ws / "agentos.yaml"
    os.link(config, ws / "notes" / "hard")
    before = config.read_bytes()
    ctx = ToolContext(ws, "s9", Runtime.from_workspace(ws).scope)
    got = write_file({"path": "notes/hard", "content": "x", "claim": _claim(sha256_of(before.decode()))},
                     ctx)
    assert not isinstance(got, Err)
    assert config.read_bytes() == before and (ws / "notes" / "hard").read_text() == "x"


# -- writable: the allow-list, checked at load ----------------------------------------------

def _with(ws: Path, **changes: Any) -> None:
    config = ws / "agentos.yaml"
    doc = yaml.safe_load(config.read_text(encoding="utf-8"))
    doc.update(changes)
    config.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")


@pytest.mark.parametrize("entry, why", [
    (".", "is the whole workspace"), ("", "shorter than 1 character"), ("notes/..", "leads out"),
    ("../elsewhere", "leads out of the workspace"), ("/tmp", "not a folder name inside"),
    ("skills", "is skills/, a contract"), ("skills/mine", "is under skills/"),
    ("sessions", "the event logs"), ("hooks", "is hooks/"), (".git/x", "is under .git/"),
    ("linked", "is schemas/"), ("out", "a symlink leading out"), ("scripts", "holds scripts/run.py"),
    ("more-skills", "(a skill root)"),
])
def test_a_writable_entry_that_is_not_a_data_folder_is_refused_at_load(ws: Path, cli: Cli, entry: str,
                                                                      why: str) -> None:
    (ws / "linked").symlink_to("schemas")
    (ws / "out").symlink_to(ws.parent)
    hooks = yaml.safe_load((ws / "agentos.yaml").read_text())["hooks"]
    _with(ws, writable=["notes", entry], skill_roots=["skills", "more-skills"],
          hooks=[*hooks, {"event": "Stop", "command": ["python", "scripts/run.py"]}])
    with pytest.raises(ContractError) as caught:
        Runtime.from_workspace(ws)
    field = "writable.1" if entry == "" else "writable[1]"  # the schema's own errors name it so
    (problem,) = caught.value.problems
    assert (problem.file, problem.field) == ("agentos.yaml", field) and why in problem.message
    code, out, err = cli("--workspace", ws, "validate")
    assert code == 1 and f"agentos.yaml: {field}: " in out + err and why in out + err
    code, out, err = cli("--workspace", ws, "run", "hello, greet Ada")
    assert code == 2 and out == "" and err.count("\n") == 1 and field in err


def test_writable_moves_the_allow_list_and_an_empty_one_lets_no_tool_write(ws: Path) -> None:
    _with(ws, writable=["data/out"])
    ctx = ToolContext(ws, "s9", Runtime.from_workspace(ws).scope)
    ok = write_file({"path": "data/out/a.md", "content": "x", "claim": _claim("")}, ctx)
    assert not isinstance(ok, Err) and (ws / "data" / "out" / "a.md").read_text() == "x"
    no = write_file({"path": "notes/a.md", "content": "x", "claim": _claim("")}, ctx)
    assert isinstance(no, Err) and "(data/out/)" in no.error.message
    _with(ws, writable=[])
    ctx = ToolContext(ws, "s9", Runtime.from_workspace(ws).scope)
    none = write_file({"path": "data/out/b.md", "content": "x", "claim": _claim("")}, ctx)
    assert isinstance(none, Err) and none.error.code == ErrorCode.PATH_DENIED
    assert "none (agentos.yaml has writable: [])" in none.error.message


def test_a_writable_root_itself_is_not_a_file_a_tool_may_create(ws: Path) -> None:
    (ws / "notes" / "link").unlink()
    (ws / "notes" / "skills").unlink()
    (ws / "notes").rmdir()
    ctx = ToolContext(ws, "s9", Runtime.from_workspace(ws).scope)
    got = write_file({"path": "notes", "content": "x", "claim": _claim("")}, ctx)
    assert isinstance(got, Err) and got.error.code == ErrorCode.PATH_DENIED
    assert not (ws / "notes").exists()


def test_a_hook_handler_module_inside_the_workspace_is_denied(ws: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    (ws / "wshooks").mkdir()
    (ws / "wshooks" / "__init__.py").write_text("")
    (ws / "wshooks" / "gate.py").write_text("def allow(_):\n    return {'decision': 'allow'}\n")
    monkeypatch.syspath_prepend(str(ws))
    hooks = yaml.safe_load((ws / "agentos.yaml").read_text())["hooks"]
    _with(ws, hooks=[*hooks, {"event": "Stop", "handler": "wshooks.gate:allow"}])
    scope = Runtime.from_workspace(ws).scope
    why = scope.denial(ws.resolve() / "wshooks" / "gate.py")
    assert why is not None and "the module of hooks[5]'s handler" in why
    _with(ws, writable=["wshooks"])
    with pytest.raises(ContractError, match=r"writable\[0\]"):
        Runtime.from_workspace(ws)


def test_the_deny_list_is_case_folded(ws: Path) -> None:
    """On a case-insensitive file system AGENTOS.YAML is agentos.yaml: it must be denied."""
    scope = Runtime.from_workspace(ws).scope
    root = ws.resolve()
    for name in ("AGENTOS.YAML", "Skills/greet/SKILL.md", "SESSIONS/x", ".GIT/config", "HOOKS/gate.py"):
        assert scope.denial(root / name), name


def test_the_reference_workspace_and_build_scope_default_to_notes(tmp_path: Path) -> None:
    doc = yaml.safe_load((REPO / "agentos.yaml").read_text(encoding="utf-8"))
    assert tuple(doc["writable"]) == DEFAULT_WRITABLE == ("notes",)
    scope = build_scope(tmp_path, None)
    assert scope.writable == (tmp_path.resolve() / "notes",)
    denied = {d.shown for d in scope.denied}
    assert {"agentos.yaml", *(f"{c}/" for c in CONTRACTS if c != "agentos.yaml")} <= denied


def test_docs_state_the_default_and_every_protected_path() -> None:
    text = (REPO / "docs" / "reliability.md").read_text(encoding="utf-8")
    start = text.index("## What a tool, a model, an MCP client can and cannot touch")
    section = text[start:text.index("\n## ", start + 1)]
    assert "writable: [notes]" in section and "`notes/`" in section
    for name in CONTRACTS:
        shown = name if name == "agentos.yaml" else f"{name}/"
        assert f"`{shown}`" in section, f"docs/reliability.md does not name {shown}"
    for also in ("skill root", "command hook", "MCP server", "symlink", "PATH_DENIED", "readOnlyHint"):
        assert also in section, also


# -- a Runtime reused across requests (%agent) ------------------------------------------------

@pytest.fixture
def fresh_cache() -> Any:
    from agentos_kernel.jupyter.runtime_cache import clear

    clear()
    yield
    clear()


def test_a_cached_runtime_takes_contract_changes_only_through_the_validated_load(
        ws: Path, fresh_cache: None) -> None:
    from agentos_kernel.jupyter.runtime_cache import cached_runtime

    rt = cached_runtime(ws)
    skill = ws / "skills" / "greet" / "SKILL.md"
    text = skill.read_text(encoding="utf-8")
    # a tool's attempt changes nothing, so the same Runtime (and the same skills) serve on
    got = rt.handle_user_request("hello, greet Ada")
    assert got.value.ok
    ctx = ToolContext(ws, "s9", rt.scope)
    assert isinstance(write_file({"path": "skills/greet/SKILL.md", "content": _evil(str(skill)),
                                  "claim": _claim(sha256_of(text))}, ctx), Err)
    assert cached_runtime(ws) is rt and rt.skills["greet"].allowed_tools == ("echo",)
    # the user's own valid edit is picked up, loaded and checked like any workspace
    skill.write_text(text.replace("allowed-tools:\n  - echo\n", "allowed-tools:\n  - echo\n  - read_file\n"),
                     encoding="utf-8")
    edited = cached_runtime(ws)
    assert edited is not rt and edited.skills["greet"].allowed_tools == ("echo", "read_file")
    # an invalid one is a ContractError, never half applied; the fix is picked up again
    config = ws / "agentos.yaml"
    good = config.read_text(encoding="utf-8")
    config.write_text(good + "writable: [skills]\n", encoding="utf-8")
    with pytest.raises(ContractError, match=r"agentos.yaml: writable\[0\]: 'skills' is skills/"):
        cached_runtime(ws)
    with pytest.raises(ContractError):
        cached_runtime(ws)  # no stale Runtime is handed back in between
    config.write_text(good, encoding="utf-8")
    fixed = cached_runtime(ws)
    assert fixed is not edited and fixed.scope.writable == (ws.resolve() / "notes",)


def test_an_artifact_folder_that_leads_into_a_contract_is_denied_with_an_event(workspace: Path) -> None:
    """An L8 artifact's folder is granted for its persona's write, but never a contract's."""
    (workspace / "docs").symlink_to("skills")
    before = snapshot(workspace / "skills")
    rt = Runtime.from_workspace(workspace)
    got = rt.run_cycle("bugfix", "fix the login bug in auth")
    events = rt.events(got.value.session_id)
    denied = [e.payload["message"] for e in events if e.type == "domain.error"
              and e.payload["code"] == ErrorCode.PATH_DENIED]
    assert denied and all("leads into a folder that is under skills/" in m for m in denied)
    assert not [e for e in events if e.type == "tool.invoke"]
    assert snapshot(workspace / "skills") == before


def test_a_run_writes_where_the_workspace_says(ws: Path) -> None:
    """The sessions a Runtime opens carry its own scope, not the default one."""
    _with(ws, writable=["journal"])
    rt = Runtime.from_workspace(ws)
    assert rt.handle_user_request('note "buy milk" in journal/today.md').value.ok
    assert (ws / "journal" / "today.md").read_text() == "- buy milk\n"
    got = rt.handle_user_request('note "eggs"')  # notes/notes.md: not writable here
    assert isinstance(got, Err)
    codes = [e.payload["code"] for e in rt.events(got.error.session_id) if e.type == "domain.error"]
    assert ErrorCode.PATH_DENIED in codes and not (ws / "notes" / "notes.md").exists()

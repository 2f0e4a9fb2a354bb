"""Confinement: every place a user-supplied name becomes a path stays inside its root.

Session ids, skill names, file-tool paths and write targets, `agentos init` targets, artifact
paths, and the lab / grade / audit / conform inputs are tried with `..`, absolute paths,
symlinks planted inside the root that point out, NUL, names over 255 bytes and paths over
4096. Each is denied with an event (in a run) or a one-line error (CLI, magic), and a canary
directory outside the root is neither written (its listing and bytes are compared) nor read
(its secret never shows up in a log or an output)."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentos_kernel import Err, ErrorCode, Runtime
from agentos_kernel.providers.faults import plan_from_doc
from agentos_kernel.store.events import read_log, verify_chain
from agentos_kernel.store.jsonl import JsonlEventStore
from agentos_kernel.tools.builtin import list_dir, read_file, write_file
from agentos_kernel.tools.dispatch import ToolContext

from .helpers import CANONICAL, REPO, Cli

SECRET = "CANARY-7f3a-do-not-leak"
LONG_NAME, LONG_PATH = "n" * 256, "/".join(["p" * 200] * 21)  # > NAME_MAX; > PATH_MAX bytes


class Outside:
    """A directory beside the workspace holding a canary; `untouched()` checks it."""

    def __init__(self, root: Path) -> None:
        self.root = root
        root.mkdir()
        (root / "canary.txt").write_text(SECRET)
        (root / "sub").mkdir()
        self.before = self.listing()

    def listing(self) -> dict[str, bytes | None]:
        return {p.relative_to(self.root).as_posix(): (p.read_bytes() if p.is_file() else None)
                for p in sorted(self.root.rglob("*"))}

    def untouched(self) -> bool:
        return self.listing() == self.before


@pytest.fixture
def outside(workspace: Path) -> Outside:
    return Outside(workspace.parent / "outside")


def _tree(root: Path) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*"))


def _one_line(err: str) -> str:
    assert err.endswith("\n") and err.count("\n") == 1, f"not one line: {err!r}"
    assert err.startswith("agentos: error: ")
    return err


def _leaked(root: Path) -> list[str]:
    """Files under `root` whose bytes contain the canary's secret."""
    return [p.as_posix() for p in root.rglob("*") if p.is_file() and not p.is_symlink()
            and SECRET.encode() in p.read_bytes()]


# -- session ids --------------------------------------------------------------------------------

BAD_IDS = ["../x", "../../outside/x", "/tmp/x", "a\0b", "x" * 300, "..", ".", "a/b", "-rf"]


@pytest.mark.parametrize("sid", BAD_IDS)
def test_a_bad_session_id_is_refused_by_every_verb(workspace: Path, outside: Outside, cli: Cli,
                                                   sid: str) -> None:
    before = _tree(workspace)
    got = Runtime.from_workspace(workspace).handle_user_request(CANONICAL, session_id=sid)
    assert isinstance(got, Err) and got.error.code == ErrorCode.SESSION_ID_INVALID
    assert got.error.session_id is None
    code, out, err = cli("--workspace", workspace, "run", CANONICAL, f"--session={sid}")
    assert code == 2 and out == "" and "invalid session id" in _one_line(err)
    for verb in ("replay", "events", "rerun"):
        code, out, err = cli("--workspace", workspace, verb, "--", sid)
        assert code == 2 and out == "" and "invalid session id" in _one_line(err)
    assert _tree(workspace) == before and outside.untouched()


@pytest.mark.parametrize("sid", ["../x", "a\0b", "x" * 300])
def test_a_bad_session_id_in_a_magic_is_a_one_line_usage_error(workspace: Path, outside: Outside,
                                                               sid: str) -> None:
    from IPython.core.error import UsageError
    from IPython.testing.globalipapp import start_ipython

    from agentos_kernel.jupyter.magics import AgentMagics

    magics = AgentMagics(shell=start_ipython())
    for name, line in (("agent", f'--workspace {workspace} --session "{sid}" "hello, greet Ada"'),
                       ("replay", f'--workspace {workspace} "{sid}"'),
                       ("events", f'--workspace {workspace} "{sid}"')):
        with pytest.raises(UsageError) as caught:
            getattr(magics, name)(line)
        assert "\n" not in str(caught.value) and str(caught.value).startswith(f"%{name}: ")
    assert not (workspace / "sessions").exists() and outside.untouched()


def test_a_session_id_with_a_trailing_newline_is_refused(workspace: Path) -> None:
    got = Runtime.from_workspace(workspace).handle_user_request(CANONICAL, session_id="nl\n")
    assert isinstance(got, Err) and got.error.code == ErrorCode.SESSION_ID_INVALID


@pytest.mark.parametrize("bad", ["..", "../s0001", "/etc", "a/b", "nl\n", "", "x" * 65])
def test_the_store_checks_an_id_after_it_remembered_a_good_one(tmp_path: Path, bad: str) -> None:
    """JsonlEventStore.path remembers the last id it resolved and exists() builds strings:
    neither may let a bad id through once a good one was seen."""
    store = JsonlEventStore(tmp_path / "sessions")
    assert store.path("s0001") == tmp_path / "sessions" / "s0001" / ".events.jsonl"
    assert store.path("s0002").parent.name == "s0002" and store.path("s0001").parent.name == "s0001"
    assert not store.exists("s0001")
    for probe in (store.path, store.exists):
        with pytest.raises(ValueError, match="invalid session id"):
            probe(bad)


def test_a_session_dir_symlinked_out_is_not_written_through(workspace: Path, outside: Outside) -> None:
    (workspace / "sessions").mkdir()
    (workspace / "sessions" / "mine").symlink_to(outside.root / "sub")
    got = Runtime.from_workspace(workspace).handle_user_request(CANONICAL, session_id="mine")
    assert outside.untouched(), "the session log was written outside the workspace"
    assert isinstance(got, Err) and got.error.code == ErrorCode.SESSION_EXISTS
    assert "symbolic link" in got.error.message


def test_a_session_log_symlinked_out_is_not_written_through(workspace: Path, outside: Outside) -> None:
    (workspace / "sessions" / "mine").mkdir(parents=True)
    (workspace / "sessions" / "mine" / ".events.jsonl").symlink_to(outside.root / "log")
    got = Runtime.from_workspace(workspace).handle_user_request(CANONICAL, session_id="mine")
    assert outside.untouched(), "the session log was written outside the workspace"
    assert isinstance(got, Err) and got.error.code == ErrorCode.SESSION_EXISTS


def test_new_ids_skip_a_planted_link(workspace: Path, outside: Outside) -> None:
    (workspace / "sessions").mkdir()
    (workspace / "sessions" / "s0001").symlink_to(outside.root / "sub")
    got = Runtime.from_workspace(workspace).handle_user_request(CANONICAL)
    assert got.value.session_id == "s0002" and outside.untouched()


# -- skill names ------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["../../x", "a/b", "..", "x\\\\y", "tab\\there"])
def test_a_skill_name_that_is_not_one_folder_is_skipped_with_an_event(workspace: Path, outside: Outside,
                                                                      name: str) -> None:
    (workspace / "skills" / "odd").mkdir()
    (workspace / "skills" / "odd" / "SKILL.md").write_text(
        f'---\nname: "{name}"\ndescription: d\ntriggers: [zzz]\n---\nbody\n')
    rt = Runtime.from_workspace(workspace)
    result = rt.handle_user_request("zzz hello")
    events = rt.events(result.value.session_id)
    (skipped,) = [e.payload for e in events if e.type == "skill.skipped"]
    assert (skipped["file"], skipped["field"]) == ("skills/odd/SKILL.md", "name")
    assert "cannot be a skill name" in skipped["reason"]
    assert outside.untouched()


def test_a_skill_folder_symlinked_out_is_skipped_and_never_read(workspace: Path, outside: Outside) -> None:
    planted = outside.root / "skill"
    planted.mkdir()
    (planted / "SKILL.md").write_text(f"---\nname: planted\ndescription: {SECRET}\ntriggers: [zzz]\n"
                                      "allowed-tools: [read_file]\n---\nbody\n")
    outside.before = outside.listing()
    (workspace / "skills" / "planted").symlink_to(planted)
    rt = Runtime.from_workspace(workspace)
    assert "planted" not in rt.skills.skills
    result = rt.handle_user_request("zzz please")
    events = rt.events(result.value.session_id)
    (skipped,) = [e.payload for e in events if e.type == "skill.skipped"]
    assert skipped["file"] == "skills/planted/SKILL.md" and "symlink" in skipped["reason"]
    assert not [e for e in events if e.type == "skill.invoke"]
    assert not _leaked(workspace) and outside.untouched()


def test_percent_skill_never_writes_through_a_planted_link_or_a_path_name(workspace: Path,
                                                                         outside: Outside) -> None:
    from agentos_kernel.jupyter.api import register_skill

    (workspace / "skills" / "planted").symlink_to(outside.root / "sub")
    for name in ("planted", "../../x", "a/b", "nl\\n"):
        got = register_skill(f'---\nname: "{name}"\ndescription: d\n---\nbody\n', workspace=workspace)
        assert not got.ok and got.problem.field == "name", (name, got.problem)
    assert outside.untouched()
    assert sorted(p.name for p in (workspace / "skills").iterdir()) == [
        "append-note", "greet", "inspect-file", "planted"]


# -- file tools and write targets -------------------------------------------------------------

@pytest.fixture
def ctx(workspace: Path, outside: Outside) -> ToolContext:
    (workspace / "link_file").symlink_to(outside.root / "canary.txt")
    (workspace / "link_dir").symlink_to(outside.root / "sub")
    (workspace / "dangling").symlink_to(outside.root / "nothing")
    (workspace / "logs").symlink_to(workspace / "sessions")
    (workspace / "sessions").mkdir()
    return ToolContext(workspace, "s1")


HOSTILE = ["..", "../outside/canary.txt", "skills/../../outside/canary.txt", "/etc/passwd",
           "link_file", "link_dir/new.txt", "dangling", "a\0b", LONG_NAME, LONG_PATH]


def _claim() -> dict[str, Any]:
    return {"who": "worker", "why": "test", "expected_hash": "", "schema_version": "v1"}


@pytest.mark.parametrize("path", HOSTILE)
def test_a_tool_path_out_of_the_workspace_is_path_denied(ctx: ToolContext, outside: Outside,
                                                        path: str) -> None:
    why = {"a\0b": "contains a NUL", LONG_NAME: "too long", LONG_PATH: "too long"}.get(path, "")
    for got in (read_file({"path": path}, ctx), list_dir({"path": path}, ctx),
                write_file({"path": path, "content": "pwned", "claim": _claim()}, ctx)):
        assert isinstance(got, Err) and got.error.code == ErrorCode.PATH_DENIED, got
        assert why in got.error.message
        # one line, naming the argument, never where the workspace or the target really is
        assert "\n" not in got.error.message and str(ctx.workspace.parent) not in got.error.message
    got = read_file({"path": str(outside.root / "canary.txt")}, ctx)
    assert isinstance(got, Err) and got.error.code == ErrorCode.PATH_DENIED
    assert outside.untouched()


@pytest.mark.parametrize("path", ["sessions/s1/.events.jsonl", "logs/s1/.events.jsonl", "./sessions/x",
                                  "skills/../sessions/x", "sessions"])
def test_writes_into_sessions_are_denied_even_through_a_link(ctx: ToolContext, path: str) -> None:
    got = write_file({"path": path, "content": "forged", "claim": _claim()}, ctx)
    assert isinstance(got, Err) and got.error.code == ErrorCode.PATH_DENIED
    assert list((ctx.workspace / "sessions").iterdir()) == []


def test_a_planted_temp_file_link_does_not_redirect_a_write(ctx: ToolContext, outside: Outside) -> None:
    (ctx.workspace / "notes").mkdir()
    (ctx.workspace / "notes" / "notes.md.agentos-tmp").symlink_to(outside.root / "sub" / "planted")
    got = write_file({"path": "notes/notes.md", "content": "mine", "claim": _claim()}, ctx)
    assert not isinstance(got, Err)
    assert (ctx.workspace / "notes" / "notes.md").read_text() == "mine" and outside.untouched()


def _finishes(fn: Any, seconds: float = 20) -> Any:
    """fn() run in a thread; fails (instead of hanging the suite) if it blocks."""
    import threading

    box: list[Any] = []
    t = threading.Thread(target=lambda: box.append(fn()), daemon=True)
    t.start()
    t.join(seconds)
    assert not t.is_alive(), "blocked (a FIFO opened for reading?)"
    return box[0]


def test_a_fifo_is_refused_by_the_file_tools_not_waited_on(ctx: ToolContext) -> None:
    (ctx.workspace / "notes").mkdir()
    os.mkfifo(ctx.workspace / "notes" / "pipe")
    for got in (_finishes(lambda: read_file({"path": "notes/pipe"}, ctx)),
                _finishes(lambda: write_file({"path": "notes/pipe", "content": "x", "claim": _claim()},
                                             ctx))):
        assert isinstance(got, Err) and got.error.code == ErrorCode.TOOL_ERROR
        assert "'notes/pipe'" in got.error.message or "'pipe'" in got.error.message


def test_a_fifo_skill_md_is_skipped_not_waited_on(workspace: Path) -> None:
    (workspace / "skills" / "pipe").mkdir()
    os.mkfifo(workspace / "skills" / "pipe" / "SKILL.md")
    rt = _finishes(lambda: Runtime.from_workspace(workspace))
    (problem,) = rt.skills.skipped
    assert problem.file == "skills/pipe/SKILL.md" and "not a regular file" in problem.message


def test_list_dir_leaves_out_links_that_lead_out(ctx: ToolContext) -> None:
    names = [e["name"] for e in list_dir({"path": "."}, ctx).value["entries"]]
    assert "link_file" not in names and "link_dir" not in names and "dangling" not in names
    assert "logs" in names  # a link that stays inside is listed


@pytest.mark.parametrize("tool, prompt, args", [
    ("read_file", "read the file", {"path": "../outside/canary.txt"}),
    ("read_file", "read the file", {"path": "link_file"}),
    ("read_file", "read the file", {"path": LONG_PATH}),
    ("write_file", 'note "x"', {"path": "link_dir/escaped.md", "content": "pwned", "claim": _claim()}),
    ("write_file", 'note "x"', {"path": "logs/s0001/.events.jsonl", "content": "{}", "claim": _claim()}),
])
def test_a_hostile_tool_call_in_a_run_is_denied_with_an_event(ctx: ToolContext, outside: Outside,
                                                              tool: str, prompt: str,
                                                              args: dict[str, Any]) -> None:
    plan = plan_from_doc("escape", {"faults": [{"kind": "tool_call", "role": "worker", "times": -1,
                                                "tool": tool, "args": args}]})
    rt = Runtime.from_workspace(ctx.workspace, faults=plan)
    got = rt.handle_user_request(prompt)
    sid = got.error.session_id if isinstance(got, Err) else got.value.session_id
    events = list(read_log(rt.store.path(sid)))
    codes = {e.payload["code"] for e in events if e.type == "domain.error"}
    assert ErrorCode.PATH_DENIED in codes
    assert all(not e.payload["ok"] for e in events if e.type == "tool.result")
    assert verify_chain(events) is None and events[-1].type == "session.close"
    assert not _leaked(ctx.workspace) and outside.untouched()


def test_an_artifact_folder_symlinked_out_is_denied_with_an_event(workspace: Path, outside: Outside) -> None:
    (workspace / "docs").symlink_to(outside.root / "sub")
    rt = Runtime.from_workspace(workspace)
    got = rt.run_cycle("bugfix", "fix the login bug in auth")
    events = rt.events(got.value.session_id)
    denied = [e.payload["message"] for e in events if e.type == "domain.error"
              and e.payload["code"] == ErrorCode.PATH_DENIED]
    assert len(denied) == 4 and all("leads outside the workspace" in m for m in denied)
    assert not [e for e in events if e.type == "tool.invoke"]
    assert outside.untouched()


@pytest.mark.parametrize("naming", ["./sessions/{session}.md", "{cycle}/x.md", "docs/../../x.md",
                                    "/tmp/x.md", "docs\\\\x.md"])
def test_an_artifact_naming_that_could_escape_is_refused_at_load(workspace: Path, naming: str) -> None:
    from agentos_kernel.errors import ContractError

    template = workspace / "workflows" / "artifacts" / "plan-template.md"
    text = template.read_text()
    template.write_text(text.replace('naming: "docs/plans/{session}-{slug}-plan.md"', f'naming: "{naming}"'))
    with pytest.raises(ContractError) as caught:
        Runtime.from_workspace(workspace).workflows  # noqa: B018 - loading is the point
    assert any(p.field == "naming" and p.file.endswith("plan-template.md") for p in caught.value.problems)


# -- agentos init -----------------------------------------------------------------------------

@pytest.fixture
def init_targets(tmp_path: Path, outside_dir: Path) -> Path:
    base = tmp_path / "init"
    base.mkdir()
    (base / "a_file").write_text("mine")
    (base / "link").symlink_to(outside_dir)
    (base / "dangling").symlink_to(outside_dir / "nothing")
    (base / "partial" / "schemas").mkdir(parents=True)
    shutil.copytree(REPO / "skills", base / "ws" / "skills")
    (base / "ws" / "agentos.yaml").write_text("default_profile: x\n")
    (base / "ws" / "sessions").mkdir()
    return base


@pytest.fixture
def outside_dir(tmp_path: Path) -> Iterator[Path]:
    d = tmp_path / "outside_init"
    d.mkdir()
    (d / "canary.txt").write_text(SECRET)
    yield d


@pytest.mark.parametrize("target, why", [
    ("a_file", "exists and is not a directory"), ("a_file/sub", "cannot create"),
    ("link", "is a symlink"), ("dangling", "is a symlink"), ("partial", "already holds schemas"),
    ("ws", "agentos.yaml already exists"), ("ws/sessions", "the event logs"),
    ("ws/sessions/new", "the event logs"), ("a\0b", "NUL"), (LONG_NAME, "too long"),
    (LONG_PATH, "too long"),
])
def test_init_refuses_a_target_it_could_not_own_before_writing(init_targets: Path, outside_dir: Path,
                                                              cli: Cli, monkeypatch: pytest.MonkeyPatch,
                                                              target: str, why: str) -> None:
    before, outside_before = _tree(init_targets), _tree(outside_dir)
    monkeypatch.chdir(init_targets)
    code, out, err = cli("init", target)
    assert code == 2 and out == "" and why in _one_line(err)
    assert _tree(init_targets) == before and _tree(outside_dir) == outside_before

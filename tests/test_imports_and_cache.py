"""`import agentos_kernel` loads no HTTP client, YAML parser or JSON Schema validator; the
notebook path reuses one Runtime per workspace until a contract file changes; libyaml reads
contracts exactly as the pure-Python loader does; a new session id is found without listing
the sessions. Counted, never timed (speed lives in bench/bench_scale.py)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from agentos_kernel import Runtime
from agentos_kernel.clock import first_free
from agentos_kernel.jupyter import runtime_cache
from agentos_kernel.jupyter.api import run_agent
from agentos_kernel.jupyter.contract_watch import ContractWatch
from agentos_kernel.jupyter.runtime_cache import cached_runtime, clear
from agentos_kernel.providers.faults import load_fault_plan
from agentos_kernel.store.jsonl import JsonlEventStore
from agentos_kernel.workspace import reference_dir
from agentos_kernel.yamlload import safe_load

from .helpers import CANONICAL

LIBRARY = ("http.client", "ssl", "yaml", "jsonschema_rs")


def _loaded_after(code: str, cwd: Path) -> list[str]:
    probe = f"{code}\nimport json, sys\nprint(json.dumps(sorted(m for m in {LIBRARY!r} if m in sys.modules)))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=cwd,
                         check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_import_agentos_kernel_loads_no_http_client_yaml_or_jsonschema(tmp_path: Path) -> None:
    assert _loaded_after("import agentos_kernel", tmp_path) == []
    assert _loaded_after("from agentos_kernel import Event, Snapshot, replay", tmp_path) == []


def test_an_offline_request_never_loads_an_http_client(tmp_path: Path, workspace: Path) -> None:
    code = (f"from agentos_kernel import Runtime\nrt = Runtime.from_workspace({str(workspace)!r})\n"
            f"assert rt.handle_user_request({CANONICAL!r}).value.ok")
    assert _loaded_after(code, tmp_path) == ["jsonschema_rs", "yaml"]


@pytest.fixture(params=["inotify", "stat"])
def fresh_cache(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """An empty cache, watching contract files with inotify or (where that is not
    available) comparing stat signatures: the same guarantees either way."""
    if request.param == "stat":
        monkeypatch.setattr(ContractWatch, "start", classmethod(lambda cls, paths: None))
    clear()
    yield
    clear()


def test_with_inotify_a_reused_runtime_stats_no_contract_file(
        workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    clear()
    rt = cached_runtime(workspace)
    assert next(iter(runtime_cache._CACHE.values())).watch is not None, "inotify is on Linux"

    def no_stat(*_: object) -> None:
        raise AssertionError("a stat signature was taken though the files are watched")

    monkeypatch.setattr(runtime_cache, "signature", no_stat)
    assert run_agent(CANONICAL, workspace=workspace).ok  # writes sessions/: not a contract
    assert cached_runtime(workspace) is rt
    clear()


@pytest.mark.parametrize("how", ["in place", "renamed into place", "touched", "new nested file"])
def test_every_kind_of_edit_is_seen_on_the_next_call(workspace: Path, fresh_cache: None,
                                                    how: str) -> None:
    rt = cached_runtime(workspace)
    skill = workspace / "skills" / "greet" / "SKILL.md"
    if how == "in place":
        with skill.open("a") as f:
            f.write("\n")
    elif how == "renamed into place":  # how editors save: a new file, then rename
        tmp = skill.with_name(".SKILL.md.swp")
        tmp.write_text(skill.read_text())
        os.replace(tmp, skill)
    elif how == "touched":
        os.utime(skill, ns=(1, 1))
    else:
        (workspace / "skills" / "greet" / "notes").mkdir()
        (workspace / "skills" / "greet" / "notes" / "x.md").write_text("x")
    assert cached_runtime(workspace) is not rt


def test_a_symlink_among_the_contracts_falls_back_to_stat_signatures(
        workspace: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "shared-skill"
    shutil.copytree(workspace / "skills" / "greet", elsewhere)
    shutil.rmtree(workspace / "skills" / "greet")
    (workspace / "skills" / "greet").symlink_to(elsewhere)
    clear()
    rt = cached_runtime(workspace)
    assert next(iter(runtime_cache._CACHE.values())).watch is None  # its target is not watched
    (elsewhere / "SKILL.md").write_text((elsewhere / "SKILL.md").read_text() + "\n")
    assert cached_runtime(workspace) is not rt
    clear()


def test_the_notebook_path_reuses_one_runtime_until_a_skill_is_edited(
        workspace: Path, fresh_cache: None) -> None:
    rt = cached_runtime(workspace)
    assert cached_runtime(workspace) is rt
    assert cached_runtime(workspace, profile="scripted-alt") is not rt  # another profile
    assert run_agent(CANONICAL, workspace=workspace).session_id == "s0001"
    assert run_agent(CANONICAL, workspace=workspace).session_id == "s0002"
    assert cached_runtime(workspace) is rt
    skill = workspace / "skills" / "greet" / "SKILL.md"
    text = skill.read_text()
    assert "description:" in text
    skill.write_text(text.replace("description:", "description: EDITED", 1))
    edited = cached_runtime(workspace)
    assert edited is not rt and "EDITED" in edited.skills["greet"].description
    assert cached_runtime(workspace) is edited


@pytest.mark.parametrize("change", ["agentos.yaml", "new schema", "removed agent", "new workflow"])
def test_any_contract_change_loads_the_workspace_again(workspace: Path, fresh_cache: None,
                                                       change: str) -> None:
    rt = cached_runtime(workspace)
    if change == "agentos.yaml":
        config = workspace / "agentos.yaml"
        config.write_text(config.read_text() + "\n# a comment\n")
    elif change == "new schema":
        (workspace / "schemas" / "extra_v1.json").write_text('{"type": "object"}')
    elif change == "removed agent":
        next((workspace / "agents").glob("*.md")).unlink()
    else:
        (workspace / "workflows" / "notes.txt").write_text("x")
    try:
        again = cached_runtime(workspace)
    except Exception:  # a removed agent may break the workspace: then it was loaded again
        return
    assert again is not rt


def test_a_cached_runtime_counts_ids_as_a_new_one_would(workspace: Path, fresh_cache: None) -> None:
    assert [run_agent(CANONICAL, workspace=workspace).session_id for _ in range(2)] == ["s0001", "s0002"]
    shutil.rmtree(workspace / "sessions")  # a new Runtime would start again at s0001
    assert run_agent(CANONICAL, workspace=workspace).session_id == "s0001"
    plan = load_fault_plan("hook_deny")
    denied = cached_runtime(workspace, faults=plan)
    assert denied is not cached_runtime(workspace) and cached_runtime(workspace, faults=plan) is denied


def test_a_cached_runtime_checks_its_count_instead_of_probing_again(
        workspace: Path, fresh_cache: None, monkeypatch: pytest.MonkeyPatch) -> None:
    for n in range(1, 301):  # 300 sessions: probing afresh would ask ~17 times
        log = workspace / "sessions" / f"s{n:04d}" / ".events.jsonl"
        log.parent.mkdir(parents=True)
        log.touch()
    assert run_agent(CANONICAL, workspace=workspace).session_id == "s0301"
    probes: list[str] = []
    exists = JsonlEventStore.exists
    monkeypatch.setattr(JsonlEventStore, "exists", lambda self, sid: probes.append(sid) or exists(self, sid))
    assert run_agent(CANONICAL, workspace=workspace).session_id == "s0302"
    assert probes == ["s0300", "s0301", "s0302"]  # the one before, then counting on
    shutil.rmtree(workspace / "sessions" / "s0302")  # the newest deleted: a new Runtime's id
    assert run_agent(CANONICAL, workspace=workspace).session_id == "s0302"
    for n in range(250, 303):  # the tail deleted: probed afresh, as a new Runtime would
        shutil.rmtree(workspace / "sessions" / f"s{n:04d}", ignore_errors=True)
    fresh = Runtime.from_workspace(workspace).new_session_id()
    assert fresh == "s0250" and run_agent(CANONICAL, workspace=workspace).session_id == fresh


def test_libyaml_reads_every_contract_as_the_pure_loader_does() -> None:
    ref = reference_dir()
    files = [ref / "agentos.yaml", *ref.glob("workflows/**/*.md"), *ref.glob("skills/**/*.md"),
             *ref.glob("agents/*.md")]
    assert len(files) > 10
    for f in files:
        text = f.read_text(encoding="utf-8")
        if f.suffix == ".md" and not text.startswith("---"):
            continue
        head = text[3:text.find("\n---", 3)] if f.suffix == ".md" else text
        assert safe_load(head) == yaml.safe_load(head), f
    for broken in ("a: 1\nb: [unclosed\nc: 3\n", "a: 1\n  b: 2\n", "x: 'open\n"):
        with pytest.raises(yaml.YAMLError) as pure:
            yaml.safe_load(broken)
        with pytest.raises(yaml.YAMLError) as ours:
            safe_load(broken)
        assert str(ours.value) == str(pure.value)  # the same message and line as before


def test_the_next_id_is_found_without_listing_the_sessions(workspace: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    for n in range(1, 301):  # 300 sessions, made directly (their content is not read)
        log = workspace / "sessions" / f"s{n:04d}" / ".events.jsonl"
        log.parent.mkdir(parents=True)
        log.touch()
    (workspace / "sessions" / "named").mkdir()
    monkeypatch.setattr(JsonlEventStore, "sessions", lambda self: pytest.fail("listed the sessions"))
    probes: list[str] = []
    exists = JsonlEventStore.exists
    monkeypatch.setattr(JsonlEventStore, "exists", lambda self, sid: probes.append(sid) or exists(self, sid))
    rt = Runtime.from_workspace(workspace)
    assert rt.new_session_id() == "s0301"
    assert len(probes) <= 2 * 9 + 2  # O(log N): doubling to 512, bisecting back, one check


def test_first_free_is_the_end_of_the_run() -> None:
    for top in (0, 1, 2, 3, 7, 8, 9, 1000, 1023, 1024):
        asked: list[int] = []
        assert first_free(lambda n, top=top, asked=asked: asked.append(n) or n <= top) == top + 1
        assert len(asked) <= 2 * (top.bit_length() + 1) + 1
    assert first_free(lambda n: n in {1, 2, 3, 5, 6}) in (4, 7)  # a hole, never a taken id

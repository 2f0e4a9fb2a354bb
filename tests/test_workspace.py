"""Workspace resolution: an explicit path, the nearest agentos.yaml, else the bundled
reference — and logs that never depend on where a workspace or the package lives."""

from __future__ import annotations

from pathlib import Path

from agentos_kernel import Runtime
from agentos_kernel.workspace import find_workspace, reference_dir


def test_without_agentos_yaml_the_bundled_reference_is_used_and_sessions_go_to_cwd(
        tmp_path: Path) -> None:
    ws = find_workspace(cwd=tmp_path)
    assert ws.bundled and ws.root == tmp_path.resolve()
    assert ws.contract_dir("skills") == reference_dir() / "skills"
    rt = Runtime.from_workspace(cwd=tmp_path)
    sid = rt.handle_user_request("hello, greet Ada").value.session_id
    assert (tmp_path / "sessions" / sid / ".events.jsonl").is_file()


def test_bundled_skill_paths_in_the_log_are_relative_to_the_reference(tmp_path: Path) -> None:
    rt = Runtime.from_workspace(cwd=tmp_path)
    sid = rt.handle_user_request("hello, greet Ada").value.session_id
    invoked = [e for e in rt.events(sid) if e.type == "skill.invoke"]
    assert invoked[0].payload["file"] == "skills/greet/SKILL.md"
    log = (tmp_path / "sessions" / sid / ".events.jsonl").read_text()
    assert str(reference_dir()) not in log and str(tmp_path) not in log


def test_the_nearest_parent_with_agentos_yaml_is_the_workspace(tmp_path: Path) -> None:
    (tmp_path / "agentos.yaml").write_text("default_profile: p\nprofiles: {p: {provider: scripted, "
                                           "model: m}}\n")
    deep = tmp_path / "a" / "b"
    deep.mkdir(parents=True)
    ws = find_workspace(cwd=deep)
    assert not ws.bundled and ws.root == tmp_path.resolve()


def test_an_explicit_workspace_is_resolved_through_links_to_its_real_files(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "shared.yaml").write_text("default_profile: p\nprofiles: {p: {provider: scripted, "
                                          "model: m}}\n")
    (real / "agentos.yaml").symlink_to(tmp_path / "shared.yaml")
    (tmp_path / "via").symlink_to(real)
    ws = find_workspace(tmp_path / "via")
    assert ws.root == real.resolve()
    assert ws.config_file == (tmp_path / "shared.yaml").resolve()  # the link followed
    (real / "agentos.yaml").unlink()
    (real / "agentos.yaml").write_text((tmp_path / "shared.yaml").read_text())
    assert find_workspace(tmp_path / "via").config_file == real.resolve() / "agentos.yaml"

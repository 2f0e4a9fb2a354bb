"""A workspace loaded again in the same process (a Runtime rebuilt after one contract edit)
reuses what it read before only where the bytes are the same: the schema registry (its
compiled validators with it) and each YAML document, keyed by their exact text, so an
edit that keeps a file's size and mtime is still seen (issue 24). Counts, never times."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml

from agentos_kernel import Runtime, yamlload
from agentos_kernel.errors import ContractError
from agentos_kernel.schemas.registry import SchemaRegistry
from agentos_kernel.yamlload import load_yaml


def _same_size_same_mtime(path: Path, old: str, new: str) -> None:
    """Rewrite `path` with `old` replaced by `new` (same length), its mtime put back."""
    assert len(old) == len(new)
    st = path.stat()
    path.write_text(path.read_text().replace(old, new, 1))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert path.stat().st_size == st.st_size and path.stat().st_mtime_ns == st.st_mtime_ns


def test_the_same_schema_bytes_give_the_registry_already_loaded(workspace: Path) -> None:
    schemas = workspace / "schemas"
    first = SchemaRegistry.load(schemas)
    assert first.violations({"steps": []}, "plan_v1")  # compiles plan_v1's validator
    again = SchemaRegistry.load(schemas)
    assert again is first
    assert Runtime.from_workspace(workspace).schemas is first


def test_a_schema_edited_in_place_is_loaded_afresh(workspace: Path) -> None:
    path = workspace / "schemas" / "plan_v1.json"
    first = SchemaRegistry.load(workspace / "schemas")
    assert first.schema("plan_v1")["properties"]["steps"]["minItems"] == 1
    _same_size_same_mtime(path, '"minItems": 1', '"minItems": 3')
    again = SchemaRegistry.load(workspace / "schemas")
    assert again is not first and again.schema("plan_v1")["properties"]["steps"]["minItems"] == 3


def test_a_bad_schema_fails_every_load_with_the_same_problem(workspace: Path) -> None:
    SchemaRegistry.load(workspace / "schemas")  # kept: the bad one must not be served from it
    path = workspace / "schemas" / "plan_v1.json"
    path.write_text(path.read_text() + "\r\n}")
    messages = []
    for _ in range(2):
        with pytest.raises(ContractError) as err:
            SchemaRegistry.load(workspace / "schemas")
        messages.append(str(err.value))
    assert messages[0] == messages[1] and "plan_v1.json" in messages[0] and "not valid JSON" in messages[0]


def test_a_yaml_text_read_before_is_not_parsed_again(monkeypatch: pytest.MonkeyPatch) -> None:
    parsed: list[str] = []
    real = yamlload._plain_read

    def counting(text: str) -> tuple[object, bool]:
        parsed.append(text)
        return real(text)

    monkeypatch.setattr(yamlload, "_plain_read", counting)
    text = "name: greet\ntriggers: [hello, hi]\n"
    first = load_yaml(text)
    first["triggers"].append("changed by a caller")
    second = load_yaml(text)
    assert second == {"name": "greet", "triggers": ["hello", "hi"]}
    assert parsed == [text]
    assert load_yaml(text.replace("greet", "great")) == {"name": "great", "triggers": ["hello", "hi"]}
    assert len(parsed) == 2


def test_a_yaml_error_is_raised_every_time() -> None:
    for _ in range(2):
        with pytest.raises(yaml.YAMLError):
            load_yaml("a: [1, 2\n")


def test_a_skill_edited_in_place_reaches_the_rebuilt_runtime(workspace: Path) -> None:
    skill = workspace / "skills" / "greet" / "SKILL.md"
    before = Runtime.from_workspace(workspace).skills["greet"].description
    assert before[:6] != "EDITED"
    _same_size_same_mtime(skill, f"description: {before[:6]}", "description: EDITED")
    assert Runtime.from_workspace(workspace).skills["greet"].description.startswith("EDITED")


def test_a_closed_contract_watch_is_torn_down_off_the_callers_thread(
        workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import queue
    import time

    from agentos_kernel.jupyter import contract_watch
    from agentos_kernel.jupyter.contract_watch import ContractWatch

    handed: queue.SimpleQueue[int] = queue.SimpleQueue()
    monkeypatch.setattr(contract_watch, "_closer", lambda: handed)
    watch = ContractWatch.start([workspace / "agentos.yaml", workspace / "skills"])
    assert watch is not None, "inotify is on Linux"
    fd = watch._fd
    watch.close()
    assert watch.changed()  # at once: the Runtime it guarded is never reused
    assert handed.get_nowait() == fd
    os.fstat(fd)  # still open: the caller did not wait for Linux to tear the watches down
    monkeypatch.undo()
    contract_watch._closer().put(fd)  # the real closer thread closes it
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and os.path.exists(f"/proc/self/fd/{fd}"):
        time.sleep(0.01)
    with pytest.raises(OSError):
        os.fstat(fd)


def test_schema_files_are_listed_as_sorted_rglob_lists_them(tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    from agentos_kernel.schemas.loading import json_files

    root = tmp_path / "schemas"
    for rel in ("a.json", "a-b.json", "a/b.json", "a/z/c.json", ".hidden.json", ".json", "B.json",
                "x.JSON", "notes.txt", "deep/er/est/d.json", "é.json"):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text("{}")
    (root / "dir.json").mkdir()  # a directory named *.json is listed (and fails to load)
    (root / "dir.json" / "inner.json").write_text("{}")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "o.json").write_text("{}")
    (root / "linked").symlink_to(outside)  # not followed
    (root / "link.json").symlink_to(outside / "o.json")  # listed
    (root / "broken.json").symlink_to(tmp_path / "nowhere")  # listed
    for given in (root, tmp_path / "schemas" / ".." / "schemas", Path(os.path.relpath(root))):
        assert json_files(given) == [str(p) for p in sorted(given.rglob("*.json"))]
    assert json_files(tmp_path / "missing") == [] == sorted((tmp_path / "missing").rglob("*.json"))
    monkeypatch.chdir(root)
    assert json_files(Path(".")) == [str(p) for p in sorted(Path(".").rglob("*.json"))]


def test_the_yaml_kept_stays_within_its_bounds(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(yamlload, "KEEP_READ", 3)
    monkeypatch.setattr(yamlload, "KEEP_READ_CHARS", 40)
    texts = [f"n: {i}\n" for i in range(5)]
    for text in texts:
        load_yaml(text)
    assert [t for t, _ in yamlload._READ] == texts[2:]  # the three used last
    big = "text: " + "x" * 40 + "\n"
    assert load_yaml(big) == {"text": "x" * 40}
    assert sum(len(t) for t, _ in yamlload._READ) <= 40
    assert (big, yamlload.MAX_YAML_CHARS) not in yamlload._READ


def test_a_cached_runtime_finds_its_workspace_once(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from agentos_kernel import kernel
    from agentos_kernel.jupyter import runtime_cache

    found: list[object] = []
    real = runtime_cache.find_workspace

    def spy(*args: object) -> object:
        found.append(args)
        return real(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(runtime_cache, "find_workspace", spy)
    monkeypatch.setattr(kernel, "find_workspace", spy)
    runtime_cache.clear()
    rt = runtime_cache.cached_runtime(workspace)
    assert len(found) == 1 and rt.workspace.root == workspace.resolve()
    runtime_cache.clear()


@pytest.mark.parametrize("make", ["dir", "file", "missing", "link-to-dir", "dangling"])
def test_a_contract_dir_is_the_workspaces_as_pathlib_finds_it(tmp_path: Path, make: str) -> None:
    from agentos_kernel.workspace import Workspace, reference_dir

    own = tmp_path / "schemas"
    if make == "dir":
        own.mkdir()
    elif make == "file":
        own.write_text("")
    elif make == "link-to-dir":
        (tmp_path / "elsewhere").mkdir()
        own.symlink_to(tmp_path / "elsewhere")
    elif make == "dangling":
        own.symlink_to(tmp_path / "nowhere")
    ws = Workspace(tmp_path, tmp_path / "agentos.yaml", False)
    assert ws.contract_dir("schemas") == (own if own.is_dir() else reference_dir() / "schemas")

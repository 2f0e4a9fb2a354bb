"""Workspace.shown on strings gives what the pathlib form it replaced gave (a fresh kernel's
load names three paths with it: issue 24): on generated paths under the workspace, the
reference, elsewhere, through links, `..`, missing, and a link loop."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentos_kernel.workspace import Workspace, reference_dir


def _shown_before(ws: Workspace, path: Path) -> str:
    """Workspace.shown as it was (session 2)."""
    real = path.resolve()
    for base in (ws.root, reference_dir()):
        try:
            return real.relative_to(base.resolve()).as_posix()
        except ValueError:
            continue
    return path.as_posix()


def _outcome(show: Callable[[Workspace, Path], str], ws: Workspace, path: Path) -> object:
    try:
        return show(ws, path)
    except RuntimeError as exc:
        return ("RuntimeError", str(exc))


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    (tmp_path / "ws" / "schemas" / "events").mkdir(parents=True)
    (tmp_path / "other").mkdir()
    (tmp_path / "ws" / "link-out").symlink_to(tmp_path / "other")
    (tmp_path / "other" / "link-in").symlink_to(tmp_path / "ws" / "schemas")
    (tmp_path / "ws" / "loop").symlink_to(tmp_path / "ws" / "loop")
    return tmp_path


PARTS = ["ws", "schemas", "events", "other", "link-out", "link-in", "loop", "..", ".", "missing", "x.json"]


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(parts=st.lists(st.sampled_from(PARTS), max_size=5),
       root_parts=st.sampled_from([["ws"], ["ws", "."], ["other", "link-in", ".."]]))
def test_shown_is_the_pathlib_forms(tree: Path, parts: list[str], root_parts: list[str]) -> None:
    ws = Workspace(tree.joinpath(*root_parts), tree / "ws" / "agentos.yaml", False)
    for path in (tree.joinpath(*parts), Path(*parts), reference_dir().joinpath(*parts)):
        assert _outcome(Workspace.shown, ws, path) == _outcome(_shown_before, ws, path), path

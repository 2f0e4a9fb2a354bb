"""What a fresh kernel's Runtime does only when it needs to (issue 24): counts, never times."""

from __future__ import annotations

import pytest


def test_the_schemas_folder_is_named_only_when_a_schema_is_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    # delete-the-feature: naming it up front, as before, makes three calls here (two realpaths each)
    from agentos_kernel.kernel import Runtime
    from agentos_kernel.workspace import Workspace

    shown: list[str] = []
    real = Workspace.shown
    monkeypatch.setattr(Workspace, "shown", lambda self, path: shown.append(str(path)) or real(self, path))
    Runtime.from_workspace(None)  # the bundled workspace: nothing missing
    assert not any(p.endswith("schemas") for p in shown) and len(shown) == 2  # agentos.yaml, agents/

"""The package shows the spec (issue 21): one folder per layer, the import rules written once as
import-linter contracts (pyproject.toml) that hold, and that bite when broken.

`.ci/run` runs `lint-imports` itself; these tests run the same contracts inside pytest, check
the tree's shape, and break each kind of contract once in a copy of the package to see it fail.
"""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import agentos_kernel

from .helpers import REPO

PACKAGE = Path(agentos_kernel.__file__).resolve().parent
LAYERS = ("schemas", "store", "hooks", "skills", "tools", "providers", "roles", "workflows")
"""The spec's layers L7, L4, L6, L5, L1, L2, L3, L8: each a folder of the package."""


def _lint(root: Path) -> subprocess.CompletedProcess[str]:
    """`lint-imports` over the package found in `root`, with `root`'s pyproject.toml."""
    return subprocess.run([sys.executable, "-c", "from importlinter.cli import lint_imports_command;"
                           "lint_imports_command()", "--no-cache", "--no-logo", "pyproject.toml"],
                          cwd=root, env={"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin"},
                          capture_output=True, text=True, check=False)


def test_the_import_contracts_hold() -> None:
    done = _lint(REPO)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert "0 broken" in done.stdout and "4 kept" in done.stdout, done.stdout[-1500:]


@pytest.mark.parametrize(("module", "line", "contract"), [
    ("store/events.py", "from ..roles import session", "The spec's layers point down"),
    ("cli/common.py", "from . import main", "No import circles"),
    ("tools/builtin.py", "import pandas", "The runtime never imports"),
    ("roles/agents.py", "from ..providers import scripted", "Only the composition root"),
])
def test_each_contract_fails_when_it_is_broken(tmp_path: Path, module: str, line: str,
                                               contract: str) -> None:
    shutil.copytree(PACKAGE, tmp_path / "agentos_kernel",
                    ignore=shutil.ignore_patterns("__pycache__", "_reference"))
    shutil.copy2(REPO / "pyproject.toml", tmp_path / "pyproject.toml")
    target = tmp_path / "agentos_kernel" / module
    text = target.read_text(encoding="utf-8")
    head, sep, rest = text.partition("from __future__ import annotations\n")
    target.write_text(head + sep + line + "  # the break under test\n" + rest, encoding="utf-8")
    done = _lint(tmp_path)
    assert done.returncode != 0, done.stdout[-2000:]
    flat = " ".join(done.stdout.split())  # a long contract name is wrapped over two lines
    verdicts = flat.split("Contracts:")[0]
    after = verdicts.split(contract, 1)[1]
    assert after.index("BROKEN") < (after.index("KEPT") if "KEPT" in after else len(after)), flat[-1500:]


def _modules(folder: Path) -> list[Path]:
    return sorted(p for p in folder.glob("*.py"))


def test_the_tree_shows_the_layers() -> None:
    top = _modules(PACKAGE)
    assert len(top) <= 10, f"{len(top)} modules at the top: {[p.name for p in top]}"
    for layer in LAYERS:
        assert (PACKAGE / layer / "__init__.py").is_file(), f"{layer}/ is a folder of its own"
    for folder in sorted(p.parent for p in PACKAGE.rglob("__init__.py")):
        if "_reference" in folder.parts:
            continue
        mods = _modules(folder)
        assert len(mods) <= 16, f"{folder.relative_to(PACKAGE)}/ holds {len(mods)} modules; split it"
        doc = ast.get_docstring(ast.parse((folder / "__init__.py").read_text(encoding="utf-8")))
        assert doc and len(doc.split()) >= 8, \
            f"{folder.relative_to(PACKAGE)}/__init__.py says what the folder owns"


def test_the_package_face_resolves_every_name() -> None:
    for name in agentos_kernel.__all__:
        assert getattr(agentos_kernel, name) is not None, name
    assert callable(agentos_kernel.replay) and type(agentos_kernel).__name__ == "module"

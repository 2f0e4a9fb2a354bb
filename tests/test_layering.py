"""The package map's one direction of imports (DESIGN: "Arrows point down the list").

The workbench (jupyter/), the command line (cli.py) and grading (labs/) sit on top of the
runtime; no runtime layer may import them, so grading code can never change what a run
does, and `import agentos_kernel` never loads the workbench. Concrete providers are wired
in one place (kernel.py); rerun.py is the one other user, for its cassette.
"""

from __future__ import annotations

import ast
from pathlib import Path

import agentos_kernel

PACKAGE = Path(agentos_kernel.__file__).resolve().parent
TOP = ("jupyter", "labs", "cli")
# testing.py calls the CLI's init (the one implementation of it); __main__.py is the CLI
ON_TOP = {"cli.py", "cli_log.py", "cli_fork.py", "cli_mcp.py", "cli_workspace.py", "cli_export.py",
          "cli_store.py",
          "__main__.py", "testing.py"}
# `%load_ext agentos_kernel` must find its entry point in the package's __init__.
ENTRY_POINTS = {"__init__.py": {"jupyter.magics"}}
CONCRETE = {"scripted", "anthropic", "openai_compat", "gemini", "cassette", "cassette_file",
            "registry"}
MAY_WIRE_PROVIDERS = {"kernel.py", "rerun.py"}


def imported(path: Path) -> set[str]:
    """Modules of the package imported by `path`, as dotted names relative to the package."""
    rel = path.relative_to(PACKAGE).with_suffix("")
    here = list(rel.parts[:-1])
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = here[: len(here) - (node.level - 1)] if node.level > 1 else here
                mod = [*base, *(node.module.split(".") if node.module else [])]
                names.update(".".join([*mod, a.name]) if not node.module else ".".join(mod)
                             for a in node.names)
            elif node.module and node.module.startswith("agentos_kernel."):
                names.add(node.module.removeprefix("agentos_kernel."))
        elif isinstance(node, ast.Import):
            names.update(a.name.removeprefix("agentos_kernel.") for a in node.names
                         if a.name.startswith("agentos_kernel."))
    return names


def runtime_modules() -> list[Path]:
    return [p for p in sorted(PACKAGE.rglob("*.py"))
            if p.relative_to(PACKAGE).parts[0] not in ("jupyter", "labs") and p.name not in ON_TOP]


def test_runtime_layers_never_import_the_workbench_cli_or_grading() -> None:
    bad = {p.relative_to(PACKAGE).as_posix():
           sorted(m for m in imported(p) - ENTRY_POINTS.get(p.name, set()) if m.split(".")[0] in TOP)
           for p in runtime_modules()}
    assert {k: v for k, v in bad.items() if v} == {}


def test_only_the_composition_root_names_concrete_providers() -> None:
    bad = {}
    for p in sorted(PACKAGE.rglob("*.py")):
        rel = p.relative_to(PACKAGE)
        if rel.parts[0] == "providers" or rel.name in MAY_WIRE_PROVIDERS:
            continue
        hits = sorted(m for m in imported(p) if m.startswith("providers.") and m.split(".")[1] in CONCRETE)
        if hits:
            bad[rel.as_posix()] = hits
    assert bad == {}


def test_the_import_scanner_sees_relative_and_nested_imports() -> None:
    # The rules above are only as good as `imported`: check it on the shapes used in the package.
    assert "errors" in imported(PACKAGE / "workflows" / "engine.py")  # from ..errors import ...
    assert "labs.commands" in imported(PACKAGE / "cli.py")
    assert "providers.registry" in imported(PACKAGE / "kernel.py")

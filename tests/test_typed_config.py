"""The mypy configuration in pyproject.toml: its per-module sections name modules that exist
(a module moved or renamed without its entry would silently drop out of the strict checks),
and none of them says `strict`, which mypy reads as the global switch (mypy issue #11401)."""

from __future__ import annotations

import importlib.util
import tomllib

from .helpers import REPO

MYPY = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["mypy"]


def test_every_override_names_a_module_of_the_package_that_exists() -> None:
    named = [m for o in MYPY["overrides"] for m in o["module"] if m.split(".")[0] == "agentos_kernel"]
    assert "agentos_kernel.kernel" in named and "agentos_kernel.roles.session" in named
    missing = [m for m in named if importlib.util.find_spec(m) is None]
    assert not missing, f"pyproject.toml [tool.mypy] overrides name modules that do not exist: {missing}"


def test_no_override_says_strict_and_the_seams_get_the_strict_flags() -> None:
    assert not [o["module"] for o in MYPY["overrides"] if "strict" in o], \
        "`strict` in an override turns strict mode on for every module: spell out its flags"
    seams = next(o for o in MYPY["overrides"] if "agentos_kernel.kernel" in o["module"])
    for flag in ("disallow_any_generics", "disallow_untyped_calls", "warn_return_any",
                 "disallow_incomplete_defs", "strict_equality", "extra_checks"):
        assert seams.get(flag) is True, flag
    assert seams.get("implicit_reexport") is False
    assert MYPY["disallow_untyped_defs"] and MYPY["files"] == ["agentos_kernel"]

"""The provider registry: which adapter a profile's `provider` names, the key variable a
run on it reads, and the checks `agentos validate` and `Runtime.from_workspace` share.
kernel.py (the composition root) re-exports it; nothing else outside providers/ names a
concrete adapter."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from ..config import RuntimeProfile
from ..errors import Problem
from ..workspace import reference_dir
from .base import Provider
from .faults import FaultPlan

if TYPE_CHECKING:
    from ._http import HttpAdapter

ProviderFactory = Callable[[RuntimeProfile, FaultPlan | None], Provider]
ADAPTERS: dict[str, tuple[str, str]] = {
    "anthropic": ("anthropic", "AnthropicProvider"), "openai": ("openai_compat", "OpenAIProvider"),
    "local": ("openai_compat", "LocalProvider"), "gemini": ("gemini", "GeminiProvider"),
    "openai_compat": ("openai_compat", "OpenAICompatProvider"),
}
"""The HTTP adapters by registry key: (module in providers/, class). Each is imported when a
profile first uses it: they load httpx and ssl, which an offline class (and `import
agentos_kernel`) never needs."""


def adapter_class(provider: str) -> type[HttpAdapter]:
    """The HTTP adapter class a profile's `provider` names (KeyError if none)."""
    module, name = ADAPTERS[provider]
    return getattr(importlib.import_module(f".{module}", __package__), name)


def _scripted(p: RuntimeProfile, f: FaultPlan | None) -> Provider:
    from .scripted import ScriptedProvider
    return ScriptedProvider(p.model, p.prices, f, p.max_retries)


def _cassette(p: RuntimeProfile, f: FaultPlan | None) -> Provider:
    from .cassette_file import CassetteFile
    return CassetteFile(p.cassette or "")


def _http(provider: str) -> ProviderFactory:
    return lambda p, f: adapter_class(provider).from_profile(p)


PROVIDERS: dict[str, ProviderFactory] = {
    "scripted": _scripted, "cassette": _cassette, **{name: _http(name) for name in ADAPTERS}}


def cassette_problem(file: str, prof: RuntimeProfile, root: Path) -> tuple[RuntimeProfile, Problem | None]:
    """A `provider: cassette` profile with its cassette path made absolute (relative to the
    workspace root, else the reference workspace's copy), and the problem with it if the
    file is missing or unreadable."""
    if prof.provider != "cassette":
        return prof, None
    where = f"profiles.{prof.name}.cassette"
    if not prof.cassette:
        return prof, Problem(file, where, "provider cassette needs `cassette: <file>` (a file "
                             "written by `agentos run --profile <real profile> --record <file>`)")
    path = Path(prof.cassette) if Path(prof.cassette).is_absolute() else root / prof.cassette
    shipped = reference_dir() / prof.cassette
    if not path.exists() and not Path(prof.cassette).is_absolute() and shipped.is_file():
        path = shipped  # a cassette shipped with the reference workspace (cassettes/*.json)
    prof = replace(prof, cassette=str(path))
    from .cassette_file import CassetteError, CassetteFile

    try:
        CassetteFile(path)
    except CassetteError as exc:
        return prof, Problem(file, where, str(exc))
    return prof, None


def key_env_of(prof: RuntimeProfile) -> str | None:
    """The environment variable a run on `prof` reads its API key from: the profile's
    `api_key_env`, else the adapter's default (OPENAI_API_KEY, ANTHROPIC_API_KEY, ...);
    None when the provider needs no key (scripted, local, a compatible server)."""
    if prof.provider not in ADAPTERS:
        return prof.api_key_env
    return adapter_class(prof.provider).key_env_of(prof)


def unknown_provider(file: str, prof: RuntimeProfile) -> Problem | None:
    """The problem with a profile naming a provider this build does not have, else None."""
    if prof.provider in PROVIDERS:
        return None
    return Problem(file, f"profiles.{prof.name}.provider", f"unknown provider {prof.provider!r}; "
                   f"available in this build: {', '.join(sorted(PROVIDERS))}")



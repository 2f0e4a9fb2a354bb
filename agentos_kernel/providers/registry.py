"""The provider registry: which adapter a profile's `provider` names, the key variable a
run on it reads, and the checks `agentos validate` and `Runtime.from_workspace` share.
kernel.py (the composition root) re-exports it; nothing else outside providers/ names a
concrete adapter."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from ..errors import Problem
from ..profile import RuntimeProfile
from ..workspace import reference_dir
from ._http import HttpAdapter
from .anthropic import AnthropicProvider
from .base import Provider
from .cassette_file import CassetteError, CassetteFile
from .faults import FaultPlan
from .gemini import GeminiProvider
from .openai_compat import LocalProvider, OpenAICompatProvider, OpenAIProvider
from .scripted import ScriptedProvider

ProviderFactory = Callable[[RuntimeProfile, FaultPlan | None], Provider]
ADAPTERS: dict[str, type[HttpAdapter]] = {
    "anthropic": AnthropicProvider, "openai": OpenAIProvider, "local": LocalProvider,
    "gemini": GeminiProvider, "openai_compat": OpenAICompatProvider,
}
"""The HTTP adapters by registry key (each reads its key from the env var its profile names)."""
PROVIDERS: dict[str, ProviderFactory] = {
    "scripted": lambda p, f: ScriptedProvider(p.model, p.prices, f, p.max_retries),
    **{name: (lambda p, f, cls=cls: cls.from_profile(p)) for name, cls in ADAPTERS.items()},
    "cassette": lambda p, f: CassetteFile(p.cassette or ""),
}


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
    try:
        CassetteFile(path)
    except CassetteError as exc:
        return prof, Problem(file, where, str(exc))
    return prof, None


def key_env_of(prof: RuntimeProfile) -> str | None:
    """The environment variable a run on `prof` reads its API key from: the profile's
    `api_key_env`, else the adapter's default (OPENAI_API_KEY, ANTHROPIC_API_KEY, ...);
    None when the provider needs no key (scripted, local, a compatible server)."""
    adapter = ADAPTERS.get(prof.provider)
    return adapter.key_env_of(prof) if adapter else prof.api_key_env


def unknown_provider(file: str, prof: RuntimeProfile) -> Problem | None:
    """The problem with a profile naming a provider this build does not have, else None."""
    if prof.provider in PROVIDERS:
        return None
    return Problem(file, f"profiles.{prof.name}.provider", f"unknown provider {prof.provider!r}; "
                   f"available in this build: {', '.join(sorted(PROVIDERS))}")



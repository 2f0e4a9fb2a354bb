"""L2 Provider-agnostic Completion: one call shape for every model backend.

The names below load on first use (PEP 562), so importing a submodule such as
`providers.faults` (which `%load_ext` needs for its presets) does not load the call path.
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = [
    "CompletionRequest",
    "CompletionResponse",
    "Provider",
    "ProviderFault",
    "Usage",
    "complete_with_retries",
    "redact",
]


def __getattr__(name: str) -> Any:
    if name not in __all__:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.base"), name)
    globals()[name] = value
    return value

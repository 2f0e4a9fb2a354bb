"""agentos-kernel: a reference Agent OS Runtime (spec layers L1-L8, invariants I-1..I-5).

Public API re-exports only. Nothing here does I/O at import time, and pandas, matplotlib,
ipywidgets and IPython are never imported by the runtime itself. The re-exports load on
first use (PEP 562 module `__getattr__`): `import agentos_kernel` (and `%load_ext`) loads
no HTTP client, YAML parser or JSON Schema validator until something needs one.
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"


_LAZY = {
    "ContractError": "errors", "DomainError": "errors", "Err": "errors", "ErrorCode": "errors",
    "InvariantViolation": "errors", "Ok": "errors", "Problem": "errors",
    "Event": "store.events", "EventStore": "store.events", "JsonlEventStore": "store.jsonl",
    "read_log": "store.events", "verify_chain": "store.events",
    "HookBus": "hooks", "HookDecision": "hooks", "HookHandler": "hooks",
    "VerifyReport": "store.integrity", "verify_log": "store.integrity",
    "Runtime": "kernel", "RunResult": "roles.session",
    "RuntimeProfile": "config",
    "Snapshot": "store.replay.fold", "replay": "store.replay.fold",
    "SchemaRegistry": "schemas.registry",
    "ToolCall": "tools.dispatch", "ToolDef": "tools.dispatch", "ToolRegistry": "tools.dispatch",
    "dispatch_tool": "tools.dispatch",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def load_ipython_extension(ipython: object) -> None:
    """`%load_ext agentos_kernel`: registers the workbench magics. Imported here, not at module
    level, so `import agentos_kernel` stays free of IPython."""
    from .jupyter.magics import load_ipython_extension as load

    load(ipython)


__all__ = [
    "ContractError", "DomainError", "Err", "ErrorCode", "Event", "EventStore", "HookBus",
    "HookDecision", "HookHandler", "InvariantViolation", "JsonlEventStore", "Ok", "Problem",
    "RunResult", "Runtime", "RuntimeProfile", "SchemaRegistry", "Snapshot", "ToolCall", "ToolDef",
    "ToolRegistry", "VerifyReport", "__version__", "dispatch_tool", "load_ipython_extension",
    "read_log", "replay", "verify_chain", "verify_log",
]


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})

"""agentos-kernel: a reference Agent OS Runtime (spec layers L1-L8, invariants I-1..I-5).

Public API re-exports only. Nothing here does I/O at import time, and pandas, matplotlib,
ipywidgets and IPython are never imported by the runtime itself.
"""

from .errors import ContractError, DomainError, Err, ErrorCode, InvariantViolation, Ok, Problem
from .events import Event, EventStore, JsonlEventStore, read_log, verify_chain
from .hooks import HookBus, HookDecision, HookHandler
from .integrity import VerifyReport, verify_log
from .kernel import RunResult, Runtime
from .profile import RuntimeProfile
from .replay import Snapshot, replay
from .schemas import SchemaRegistry
from .tools import ToolCall, ToolDef, ToolRegistry, dispatch_tool

__version__ = "0.1.0"


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

"""The Jupyter workbench: magics (%agent, %replay, %events, %%skill), display objects, the
LayerStepper and ReplayScrubber widgets, the events DataFrame and the figures.

Importing this package loads nothing heavy: pandas, matplotlib and ipywidgets are imported
the first time a name that needs them is used (PEP 562 module `__getattr__`).
"""

from __future__ import annotations

import importlib
from typing import Any

_LAZY = {
    "AgentRun": "display", "EventView": "display", "SkillCheck": "verdicts", "SnapshotView": "display",
    "run_agent": "api", "fork_agent": "api", "replay_session": "api", "register_skill": "api",
    "WorkbenchError": "api",
    "UnknownSession": "source", "load_session": "source",
    "events_frame": "frames", "cost_by_role": "frames", "cumulative_cost": "frames",
    "timeline_figure": "figures.session", "cost_figure": "figures.session",
    "phase_graph_figure": "figures.phases", "phase_graph_data": "figures.phases",
    "workflow_frame": "figures.phases",
    "WorkbenchFigure": "figures.canvas", "subplots": "figures.canvas",
    "LogDiff": "widgets.diffview", "DiffView": "widgets.diffview", "diff_sessions": "widgets.diffview",
    "cost_whatif": "figures.whatif", "CostWhatIf": "figures.whatif",
    "LayerStepper": "widgets.stepper", "ReplayScrubber": "widgets.stepper",
    "diff_snapshots": "widgets.stepper",
    "LiveStepper": "widgets.livestep",
    "sessions_figure": "figures.classroom", "failures_figure": "figures.classroom",
    "lab_cost_figure": "figures.classroom", "class_timeline_figure": "figures.classroom",
}

__all__ = sorted([*_LAZY, "load_ipython_extension"])


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__


def load_ipython_extension(ipython: Any) -> None:
    """`%load_ext agentos_kernel.jupyter` (also reached from `%load_ext agentos_kernel`)."""
    from .magics import load_ipython_extension as load

    load(ipython)

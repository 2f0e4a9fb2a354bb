"""Fault plans: reproduce every fail-closed row of the spec on the scripted provider.

A plan is a list of faults (file: YAML/JSON matching `fault_plan_v1`, or preset names
joined by commas). Provider faults change what the fake model answers; `hooks` entries
add gates to the run (hook deny, timeout, exception) exactly as agentos.yaml would.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..schemas.textcheck import decode_problem
from ..yamlload import FrontmatterError, load_yaml, yaml_error, yaml_problem

FAULT_KINDS = (
    "malformed_json", "schema_violation", "tool_call", "provider_error", "timeout",
    "reviewer_fail", "stale_hash", "finding", "output",
)


@dataclass(frozen=True)
class Fault:
    """One injected misbehaviour."""

    kind: str
    """One of FAULT_KINDS."""
    role: str | None = None
    """Role (or L8 persona id) whose call misbehaves (None: any)."""
    times: int = 1
    """How many calls misbehave before it heals; -1 for every call."""
    tool: str | None = None
    """For tool_call: the tool the worker calls."""
    args: dict[str, Any] | None = None
    """tool_call: the arguments passed; finding: the added finding's fields; output: fields
    that override the persona's output."""


@dataclass(frozen=True)
class FaultPlan:
    """What to break in one run."""

    name: str
    """Preset names or the plan file."""
    faults: tuple[Fault, ...] = ()
    """Provider faults, applied in order."""
    hooks: tuple[dict[str, Any], ...] = field(default=())
    """Extra hook entries (agentos.yaml `hooks:` format)."""


def _h(event: str, handler: str, **kw: Any) -> dict[str, Any]:
    return {"event": event, "handler": f"agentos_kernel.hooks.builtin:{handler}", "priority": 1000,
            **kw}


PRESETS: dict[str, dict[str, Any]] = {
    "malformed_lead": {"faults": [{"kind": "malformed_json", "role": "lead"}]},
    "malformed_planner": {"faults": [{"kind": "malformed_json", "role": "planner"}]},
    "malformed_worker": {"faults": [{"kind": "malformed_json", "role": "worker"}]},
    "malformed_reviewer": {"faults": [{"kind": "malformed_json", "role": "reviewer"}]},
    "schema_violation": {"faults": [{"kind": "schema_violation", "role": "planner"}]},
    "unknown_tool": {"faults": [{"kind": "tool_call", "role": "worker", "times": -1,
                                 "tool": "no_such_tool", "args": {}}]},
    "tool_out_of_scope": {"faults": [{"kind": "tool_call", "role": "worker", "times": -1,
                                      "tool": "write_file", "args": {}}]},
    "dangerous_tool": {"faults": [{"kind": "tool_call", "role": "worker", "times": -1,
                                   "tool": "rm", "args": {"path": "."}}]},
    "bad_tool_args": {"faults": [{"kind": "tool_call", "role": "worker", "times": -1,
                                  "tool": "echo", "args": {"txt": 1}}]},
    "provider_flaky": {"faults": [{"kind": "provider_error", "role": "lead", "times": 2}]},
    "provider_down": {"faults": [{"kind": "provider_error", "role": "lead", "times": -1}]},
    "provider_timeout": {"faults": [{"kind": "timeout", "role": "planner", "times": -1}]},
    "reviewer_fail_once": {"faults": [{"kind": "reviewer_fail", "times": 1}]},
    "reviewer_fail": {"faults": [{"kind": "reviewer_fail", "times": -1}]},
    # Every verdict of a first pass on the scripted profile (max_rework 2: 3 verdicts), then
    # pass: a Stop hook that allows continuation after the escalation gets a passing pass.
    "reviewer_fail_pass": {"faults": [{"kind": "reviewer_fail", "times": 3}]},
    "write_conflict": {"faults": [{"kind": "stale_hash", "role": "worker", "times": -1}]},
    "hook_deny": {"hooks": [_h("PreToolUse", "deny_all")]},
    "hook_timeout": {"hooks": [_h("PreToolUse", "sleep_forever", timeout_s=0.2)]},
    "hook_error": {"hooks": [_h("PreToolUse", "raise_error")]},
    "prompt_denied": {"hooks": [_h("UserPromptSubmit", "deny_all")]},
    # L8 cycles: `role` is the persona id (scripted_personas.py).
    "p0_finding": {"faults": [{"kind": "finding", "role": "security-reviewer", "times": -1}]},
    "p0_finding_once": {"faults": [{"kind": "finding", "role": "security-reviewer", "times": 1}]},
    "p0_manual": {"faults": [{"kind": "finding", "role": "security-reviewer", "times": -1,
                              "args": {"autofix_class": "manual",
                                       "title": "credentials logged in clear text"}}]},
    "malformed_persona": {"faults": [{"kind": "malformed_json", "role": "security-reviewer"}]},
    "grade_regression": {"faults": [{"kind": "output", "role": "ralph", "args": {"grade": 85}}]},
    "grade_stuck": {"faults": [{"kind": "output", "role": "ralph", "times": -1, "args": {"grade": 30}}]},
    "grade_zero": {"faults": [{"kind": "output", "role": "ralph", "args": {"grade": 0}}]},
    "workflow_denied": {"hooks": [_h("WorkflowStart", "deny_all")]},
    "phase_advance_denied": {"hooks": [_h("PhaseAdvance", "deny_all")]},
    "phase_advance_timeout": {"hooks": [_h("PhaseAdvance", "sleep_forever", timeout_s=0.2)]},
    "phase_advance_error": {"hooks": [_h("PhaseAdvance", "raise_error")]},
    "workflow_complete_denied": {"hooks": [_h("WorkflowComplete", "deny_all")]},
}


class FaultPlanError(ValueError):
    """A plan cannot be read; the message names the file or preset and the field."""


def _build(name: str, doc: Any, where: str) -> FaultPlan:
    if not isinstance(doc, dict):
        raise FaultPlanError(f"{where}: -: a fault plan is an object with 'faults' and/or 'hooks'")
    extra = set(doc) - {"faults", "hooks", "schema_version"}
    if extra:
        raise FaultPlanError(f"{where}: {sorted(extra)[0]}: unknown key (use faults, hooks)")
    faults = []
    for i, f in enumerate(doc.get("faults") or []):
        if not isinstance(f, dict) or f.get("kind") not in FAULT_KINDS:
            raise FaultPlanError(
                f"{where}: faults[{i}].kind: must be one of {', '.join(FAULT_KINDS)}")
        unknown = set(f) - {"kind", "role", "times", "tool", "args"}
        if unknown:
            raise FaultPlanError(f"{where}: faults[{i}].{sorted(unknown)[0]}: unknown field")
        times = f.get("times", 1)
        if not isinstance(times, int) or times < -1 or times == 0:
            raise FaultPlanError(f"{where}: faults[{i}].times: a positive integer, or -1 for always")
        faults.append(Fault(f["kind"], f.get("role"), times, f.get("tool"), f.get("args")))
    hooks = doc.get("hooks") or []
    if not isinstance(hooks, list) or not all(isinstance(h, dict) for h in hooks):
        raise FaultPlanError(f"{where}: hooks: a list of agentos.yaml hook entries")
    return FaultPlan(name, tuple(faults), tuple(hooks))


def plan_from_doc(name: str, doc: Any) -> FaultPlan:
    """A plan from an already-parsed fault_plan_v1 document (e.g. embedded in a conformance
    scenario); FaultPlanError names `name` and the field."""
    return _build(name, doc, name)


MAX_PLAN_CHARS = 256 * 1024


def _is_file(path: Path) -> bool:
    """Path.is_file that says False for a name no file system can hold (a NUL, too long)."""
    try:
        return path.is_file()
    except (OSError, ValueError):
        return False


def load_fault_plan(spec: str) -> FaultPlan:
    """A plan from a file path, or from preset names joined by commas."""
    path = Path(spec)
    if path.suffix in (".yaml", ".yml", ".json") or _is_file(path):
        try:
            text = path.read_text(encoding="utf-8")
            doc = load_yaml(text, max_chars=MAX_PLAN_CHARS)
        except UnicodeDecodeError as exc:
            raise FaultPlanError(f"{spec}: -: {decode_problem(exc)}") from None
        except FrontmatterError as exc:  # out of bounds, or a value that is not JSON: its field
            raise FaultPlanError(f"{spec}: {exc.field}: {exc}") from None
        except (OSError, ValueError) as exc:  # unreadable, a NUL in the name, out of bounds
            why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            raise FaultPlanError(f"{spec}: -: cannot read the fault plan ({why})") from None
        except yaml_error() as exc:
            line, why = yaml_problem(exc, text)
            where = "-" if line is None else f"line {line + 1}"
            raise FaultPlanError(f"{spec}: {where}: not valid YAML/JSON ({why})") from None
        return _build(spec, doc, spec)
    faults: list[Fault] = []
    hooks: list[dict[str, Any]] = []
    for name in (n.strip() for n in spec.split(",")):
        if name not in PRESETS:
            raise FaultPlanError(
                f"unknown fault preset {name!r}; presets: {', '.join(sorted(PRESETS))} "
                "(or give a .yaml plan file)")
        plan = _build(name, PRESETS[name], f"preset {name}")
        faults += plan.faults
        hooks += plan.hooks
    return FaultPlan(spec, tuple(faults), tuple(hooks))

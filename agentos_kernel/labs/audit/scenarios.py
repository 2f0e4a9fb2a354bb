"""Conformance scenarios (conformance/scenarios/*.json, schema conformance/scenario_v1.json):
loading them, and running them on this runtime to produce one log per scenario.

The kit is language-neutral: another implementation runs the same prompt with its mock
provider, injects the fault the scenario describes, and writes `LOG_DIR/<id>/.events.jsonl`;
`agentos conform LOG_DIR` (labs/audit/conform.py) checks the logs. Here the runtime writes its
own: each scenario runs in a scratch copy of the reference workspace (a scenario's tools
may write files) with the log store pointed at LOG_DIR, under the session id = scenario id.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jsonschema_rs

from ...errors import ContractError, Err, Problem
from ...providers.faults import FaultPlanError, plan_from_doc
from ...schemas.loading import draft_problem
from ...store.events import LOG_NAME
from ...store.jsonl import JsonlEventStore
from ...workspace import reference_dir


@dataclass(frozen=True)
class Scenario:
    """One conformance scenario (a scenario_v1 document)."""

    id: str
    """Scenario id: the file stem and the session directory name under LOG_DIR."""
    title: str
    """What it shows, in one line."""
    plane: str
    """core, or L8 (optional for an implementation without the workflow plane)."""
    prompt: str
    """The user request."""
    profile: str
    """Runtime profile to run it on (a deterministic mock provider)."""
    cycle: str | None
    """L8 cycle id to run instead of one Plan-Work-Review request."""
    fault_plan: dict[str, Any] | None
    """The fault as a fault_plan_v1 document (None: no fault)."""
    expect: dict[str, Any]
    """What the log must show (scenario_v1 `expect`)."""
    file: str
    """Where it was loaded from."""

    @property
    def optional(self) -> bool:
        """An implementation may leave this scenario's log out (the L8 plane is optional)."""
        return self.plane == "L8"


def scenarios_dir() -> Path:
    """The bundled conformance/scenarios directory."""
    return reference_dir() / "conformance" / "scenarios"


def load_scenarios(root: Path | None = None) -> list[Scenario]:
    """Every `<root>/*.json` checked against `<root>/../scenario_v1.json`, sorted by id;
    ContractError names each bad file and field."""
    root = Path(root) if root is not None else scenarios_dir()
    schema_file = root.parent / "scenario_v1.json"
    try:
        doc = json.loads(schema_file.read_text(encoding="utf-8"))
        if (refused := draft_problem(doc)) is not None:  # validator_for would fetch it
            raise ValueError(refused)
        validator = jsonschema_rs.validator_for(doc, offline=True)  # a $ref to a URL: refused, not fetched
    except (OSError, ValueError) as exc:
        raise ContractError([Problem(str(schema_file), "-", f"cannot load the scenario schema: "
                                     f"{exc}")]) from None
    files = sorted(root.glob("*.json"))
    if not files:
        raise ContractError([Problem(str(root), "-", "no scenario files (*.json) here")])
    problems: list[Problem] = []
    found: list[Scenario] = []
    for f in files:
        try:
            doc = json.loads(f.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            problems.append(Problem(str(f), "-", f"not readable JSON: {exc}"))
            continue
        errors = list(validator.iter_errors(doc))
        if errors:
            e = errors[0]
            where = "/".join(str(p) for p in e.instance_path) or "-"
            problems.append(Problem(str(f), where, f"{e.message} (scenario_v1)"))
            continue
        if doc["id"] != f.stem:
            problems.append(Problem(str(f), "id", f"is {doc['id']!r}; it must equal the file name "
                                                  f"{f.stem!r}"))
            continue
        fault = doc["fault"]
        found.append(Scenario(doc["id"], doc["title"], doc.get("plane", "core"), doc["prompt"],
                              doc["profile"], doc.get("cycle"), fault.get("plan"), doc["expect"],
                              str(f)))
    if problems:
        raise ContractError(problems)
    return found


@dataclass(frozen=True)
class ScenarioRun:
    """What running one scenario on this runtime left behind."""

    id: str
    """The scenario (and session) id."""
    ok: bool
    """The session closed ok."""
    log: Path
    """Its log: LOG_DIR/<id>/.events.jsonl."""


def run_scenarios(log_dir: Path | str, scenarios: list[Scenario] | None = None, *,
                  workspace: Path | None = None) -> list[ScenarioRun]:
    """Run each scenario on this runtime, writing `log_dir/<id>/.events.jsonl`. `workspace`
    None: a scratch copy of the reference workspace, removed afterwards. FileExistsError
    when a scenario's log is already there (logs are append-only; use an empty LOG_DIR)."""
    from ...kernel import Runtime  # the kernel imports this module's neighbours, not this one
    from ...testing import scratch_workspace

    log_dir = Path(log_dir)
    scenarios = load_scenarios() if scenarios is None else scenarios
    taken = [s.id for s in scenarios if (log_dir / s.id / LOG_NAME).exists()]
    if taken:
        raise FileExistsError(f"{log_dir}: already holds logs for {', '.join(taken)}; "
                              "give an empty LOG_DIR")
    scratch = scratch_workspace(chdir=False, prefix="agentos-conform-") if workspace is None else None
    root = scratch.root if scratch else Path(workspace)  # type: ignore[arg-type]
    store = JsonlEventStore(log_dir)
    runs = []
    try:
        for s in scenarios:
            try:
                faults = plan_from_doc(f"{s.file}: fault.plan", s.fault_plan) if s.fault_plan else None
            except FaultPlanError as exc:
                raise ContractError([Problem(s.file, "fault.plan", str(exc))]) from None
            rt = Runtime.from_workspace(root, profile=s.profile, faults=faults)
            rt.store = store  # the log goes to LOG_DIR; tools still work in the workspace
            result = (rt.run_cycle(s.cycle, s.prompt, session_id=s.id) if s.cycle
                      else rt.handle_user_request(s.prompt, session_id=s.id))
            if isinstance(result, Err) and result.error.session_id is None:
                raise ContractError([Problem(s.file, "-", f"the runtime refused to start it: "
                                             f"{result.error}")])
            ok = not isinstance(result, Err) and bool(result.value.ok)
            runs.append(ScenarioRun(s.id, ok, store.path(s.id)))
    finally:
        if scratch is not None:
            scratch.close()
    return runs


__all__ = ["Scenario", "ScenarioRun", "load_scenarios", "run_scenarios", "scenarios_dir"]

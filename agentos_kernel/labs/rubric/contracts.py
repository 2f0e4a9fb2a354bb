"""Contract discipline: role outputs and the tool boundary pass schema validation.

1. schemas/: every *.json is a JSON object with a `$id` and a valid draft 2020-12 schema
   (jsonschema-rs meta-validation, as the runtime's registry does), no id twice, and the spec's
   shared ids are all there (REQUIRED_SCHEMAS);
2. agents/: a role prompt for each PWR role (agents/lead.md ... reviewer.md), not empty;
3. skills/: skills/greet/SKILL.md exists and every SKILL.md frontmatter is valid against the
   project's reference skill_frontmatter_v1 (not the submission's copy, which a student
   could loosen);
4. sessions/example/.events.jsonl, where the log lets us tell: each role-output event
   (lead.directive, plan.created, worker.report, review.result) is valid against the
   submission's schema for it, and each tool.invoke has a `name` and object `args`, which
   must be valid against the tool's input schema when schemas/ has one (tool_<name>_in_v1,
   <name>_in_v1 or <name>_input_v1; its absence is a note, not a failure).
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import jsonschema_rs
import orjson

from ...schemas.loading import dangling_refs, meta_problem
from ...schemas.registry import SchemaRegistry, Violation
from ...skills import frontmatter
from ...store.recorder import EVENT_SCHEMAS
from ...workspace import reference_dir
from .model import CriterionResult, fail
from .submission import SubmissionFileError, files, read_bytes, read_text

KEY = "contract_discipline"
REQUIRED_SCHEMAS = ("completion_request_v1", "completion_response_v1", "lead_directive_v1", "plan_v1",
                    "worker_report_v1", "review_result_v1", "skill_frontmatter_v1", "write_claim_v1")
ROLES = ("lead", "planner", "worker", "reviewer")
ROLE_SCHEMAS = ("lead_directive_v1", "plan_v1", "worker_report_v1", "review_result_v1")
ROLE_EVENTS = {t: s for t, s in EVENT_SCHEMAS.items() if s in ROLE_SCHEMAS}
LOG = "sessions/example/.events.jsonl"
TOOL_SCHEMA_NAMES = ("tool_{}_in_v1", "{}_in_v1", "{}_input_v1")


@functools.cache
def reference_schemas() -> SchemaRegistry:
    """The project's own schemas (skill_frontmatter_v1 is checked against these)."""
    return SchemaRegistry.load(reference_dir() / "schemas")


def load_schemas(root: Path) -> tuple[SchemaRegistry | None, list[str]]:
    """The submission's schemas/ as a registry, and every problem found on the way."""
    docs: dict[str, dict[str, Any]] = {}
    where: dict[str, Path] = {}
    problems: list[str] = []
    for rel in files(root, "schemas", (".json",)):
        try:
            doc = orjson.loads(read_bytes(root, rel))
        except SubmissionFileError as exc:
            problems.append(str(exc))
            continue
        except orjson.JSONDecodeError as exc:
            problems.append(f"{rel}: not valid JSON ({exc}); fix the syntax")
            continue
        sid = doc.get("$id") if isinstance(doc, dict) else None
        if not isinstance(sid, str) or not sid:
            problems.append(f"{rel}: $id: missing; give the schema an id such as {Path(rel).stem!r}")
            continue
        if sid in docs:
            problems.append(f"{rel}: $id: {sid!r} is already defined in {where[sid].as_posix()}")
            continue
        bad = meta_problem(doc)  # as the runtime's registry checks it (and never fetches a draft)
        if bad is not None:
            problems.append(f"{rel}: not a valid draft 2020-12 schema: {bad}")
            continue
        docs[sid], where[sid] = doc, Path(rel)
    problems += [f"schemas/: no schema with $id {sid!r}; add schemas/{sid}.json from the spec's Contracts "
                 "section" for sid in REQUIRED_SCHEMAS if sid not in docs]
    # as the runtime's load: a $ref to nothing loaded (a URL included, which compiling would
    # fetch) leaves no registry to compile from
    if dangling := [str(p) for p in dangling_refs(docs, where)]:
        return None, [*problems, *dangling]
    try:
        return SchemaRegistry(docs, where), problems
    except (ValueError, jsonschema_rs.ValidationError) as exc:
        return None, [*problems, f"schemas/: the schemas do not load together: {exc}"]


def _prompts(root: Path) -> list[str]:
    problems = []
    for role in ROLES:
        rel = f"agents/{role}.md"
        try:
            if not read_text(root, rel).strip():
                problems.append(f"{rel}: empty; write the {role} role prompt (spec: Canonical Role Prompts)")
        except SubmissionFileError as exc:
            problems.append(f"{exc}; add the {role} role prompt (spec: Canonical Role Prompts)")
    return problems


def _skills(root: Path) -> tuple[list[str], int]:
    problems = []
    found = [rel for rel in files(root, "skills", ("SKILL.md",)) if Path(rel).name == "SKILL.md"]
    if "skills/greet/SKILL.md" not in found:
        problems.append("skills/greet/SKILL.md: missing; add the spec's Example Skill")
    ref = reference_schemas()
    for rel in found:
        try:
            meta, _ = frontmatter.split(read_text(root, rel))
        except SubmissionFileError as exc:
            problems.append(str(exc))
            continue
        except ValueError as exc:
            problems.append(f"{rel}: frontmatter: {exc}")
            continue
        except Exception as exc:  # yaml.YAMLError and its many subclasses
            problems.append(f"{rel}: frontmatter: not valid YAML ({getattr(exc, 'problem', exc)})")
            continue
        if not isinstance(meta, dict):
            problems.append(f"{rel}: frontmatter: must be a YAML mapping of fields")
            continue
        for v in ref.violations(meta, "skill_frontmatter_v1"):
            problems.append(f"{rel}: frontmatter {frontmatter.field_of(v.path, v.message)}: {v.message} "
                            "(skill_frontmatter_v1); fix the field")
    return problems, len(found)


def _violations(schemas: SchemaRegistry, payload: Any, sid: str) -> list[Any]:
    """The first violation, if any (a schema whose $ref cannot be resolved is one too)."""
    try:
        return schemas.violations(payload, sid)[:1]
    except ValueError as exc:
        return [Violation("/", f"schema {sid} cannot be used: {exc}")]


def _log(root: Path, schemas: SchemaRegistry) -> tuple[list[str], list[str], int]:
    try:
        data = read_bytes(root, LOG)
    except SubmissionFileError as exc:
        return [], [f"{exc}: role outputs not checked (see observability)"], 0
    problems, notes, checked = [], [], 0
    for n, line in enumerate(data.splitlines(), 1):
        try:
            ev = orjson.loads(line) if line.strip() else None
        except orjson.JSONDecodeError:
            continue  # observability reports unreadable lines
        if not isinstance(ev, dict):
            continue
        t, payload = ev.get("type"), ev.get("payload")
        if t in ROLE_EVENTS and ROLE_EVENTS[t] in schemas:
            checked += 1
            for v in _violations(schemas, payload, ROLE_EVENTS[t]):
                problems.append(f"{LOG}:{n}: {t} payload fails {ROLE_EVENTS[t]} at {v.path}: {v.message}; "
                                "validate each role output before it is logged")
        elif t == "tool.invoke":
            checked += 1
            name, args = (payload or {}).get("name") if isinstance(payload, dict) else None, (
                payload.get("args") if isinstance(payload, dict) else None)
            if not isinstance(name, str) or not isinstance(args, dict):
                problems.append(f"{LOG}:{n}: tool.invoke payload needs a string name and object args "
                                "(spec: Tool Dispatch)")
                continue
            sid = next((s.format(name) for s in TOOL_SCHEMA_NAMES if s.format(name) in schemas), None)
            if sid is None:
                notes.append(f"tool {name!r}: no input schema ({TOOL_SCHEMA_NAMES[0].format(name)}) in "
                             "schemas/; its args were not checked")
                continue
            for v in _violations(schemas, args, sid):
                problems.append(f"{LOG}:{n}: {name} args fail {sid} at {v.path}: {v.message}; "
                                "dispatch_tool must check args against schema_in first")
    return problems, sorted(set(notes)), checked


def check(root: Path) -> CriterionResult:
    """The contract discipline criterion for the submission at `root`."""
    schemas, problems = load_schemas(root)
    problems += _prompts(root)
    skill_problems, skills = _skills(root)
    problems += skill_problems
    notes: list[str] = []
    checked = 0
    if schemas is not None:
        log_problems, notes, checked = _log(root, schemas)
        problems += log_problems
    if problems:
        return fail(KEY, problems, notes)
    count = len(schemas.ids()) if schemas else 0
    return CriterionResult(KEY, True, f"{count} valid schemas, 4 role prompts, {skills} valid SKILL.md, "
                           f"{checked} logged role outputs and tool calls valid", tuple(notes))

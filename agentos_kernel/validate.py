"""`agentos validate`: check every contract file of a workspace and report every problem
as `file: field: what is wrong` (not just the first)."""

from __future__ import annotations

from pathlib import Path

from .builtin_tools import BUILTIN_TOOLS
from .errors import ContractError, Problem
from .hooks import HOOK_EVENTS
from .hooks.loader import resolve_callable
from .profile import load_config
from .recorder import CHECKED_ON_USE, EVENT_SCHEMAS
from .roles import load_agents
from .schemas import SchemaRegistry
from .skills import discover
from .tools import ToolDef
from .workspace import Workspace, find_workspace, reference_dir


def validate_workspace(path: Path | None = None) -> tuple[Workspace, list[Problem]]:
    """Every problem in the workspace's schemas, config, agents, skills, hooks and workflows."""
    ws = find_workspace(path)
    problems: list[Problem] = []
    try:
        schemas = SchemaRegistry.load(ws.contract_dir("schemas"))
    except ContractError as exc:
        return ws, exc.problems  # nothing else can be checked without the schemas
    problems += missing_schemas(schemas, BUILTIN_TOOLS, ws.shown(ws.contract_dir("schemas")))
    if problems:
        return ws, problems  # the loaders below would trip over the same missing ids
    try:
        config = load_config(ws.config_file, schemas, ws.shown(ws.config_file))
    except ContractError as exc:
        problems += exc.problems
        config = None
    agents_dir = ws.contract_dir("agents")
    try:
        load_agents(agents_dir, schemas, ws.shown(agents_dir))
    except ContractError as exc:
        problems += exc.problems
    roots = list(config.skill_roots) if config else ["skills"]
    skills = discover([ws.contract_dir(r) if r == "skills" else ws.root / r for r in roots], schemas,
                      base=reference_dir() if ws.bundled else ws.root)
    problems += skills.skipped
    known_tools = {t.name for t in BUILTIN_TOOLS}
    # validate starts no server, so a configured server's tools are known by their prefix only
    bridged = tuple(f"{s.name}__" for s in config.mcp_servers) if config else ()
    for skill in skills.skills.values():
        for tool in skill.allowed_tools:
            if tool not in known_tools and not tool.startswith(bridged):
                problems.append(Problem(skill.file, "allowed-tools",
                                        f"tool {tool!r} is not registered (known: "
                                        f"{', '.join(sorted(known_tools))}); a call to it would be "
                                        "TOOL_NOT_FOUND"))
    if config is not None:
        from .kernel import unknown_provider  # the composition root knows this build's providers

        problems += [p for prof in config.profiles.values() if (p := unknown_provider(config.file, prof))]
        for i, entry in enumerate(config.hooks):
            if entry["event"] not in HOOK_EVENTS:
                problems.append(Problem(config.file, f"hooks[{i}].event", "unknown hook event"))
            if "handler" in entry:
                try:
                    resolve_callable(entry["handler"])
                except ValueError as exc:
                    problems.append(Problem(config.file, f"hooks[{i}].handler", str(exc)))
    workflows = ws.contract_dir("workflows")
    if workflows.is_dir():
        from .workflows.registry import load_workflows  # celpy loads only when L8 is checked

        try:
            load_workflows(workflows, schemas, ws.shown(workflows))
        except ContractError as exc:
            problems += exc.problems
    return ws, problems


# Schemas the loaders check agentos.yaml, agents/*.md and SKILL.md files against.
LOADER_SCHEMAS = ("workspace_config_v1", "agent_frontmatter_v1", "skill_frontmatter_v1")


def missing_schemas(schemas: SchemaRegistry, tools: tuple[ToolDef, ...], shown: str) -> list[Problem]:
    """Fail closed at load (I-3) when a schema the loaders or a registered tool names is not
    loaded, instead of a KeyError in the middle of a session."""
    needs = [(sid, "the workspace loader") for sid in LOADER_SCHEMAS]
    needs += [(sid, f"event type {t!r}") for t, sid in EVENT_SCHEMAS.items() if t not in CHECKED_ON_USE]
    needs += [(sid, f"tool {t.name!r} ({side})") for t in tools
              for side, sid in (("schema_in", t.schema_in), ("schema_out", t.schema_out))]
    return [Problem(shown, sid, f"no schema {sid!r} is loaded; {who} needs it")
            for sid, who in needs if sid not in schemas]

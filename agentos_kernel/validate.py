"""`agentos validate`: check every contract file of a workspace and report every problem
as `file: field: what is wrong` (not just the first)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from .config import RuntimeProfile, WorkspaceConfig, load_config
from .errors import ContractError, Problem
from .hooks import HOOK_EVENTS
from .hooks.loader import resolve_callable
from .roles.agents import load_agents
from .schemas.registry import SchemaRegistry
from .skills.registry import discover
from .store.recorder import CHECKED_ON_USE, EVENT_SCHEMAS
from .tools.builtin import BUILTIN_TOOLS
from .tools.dispatch import ToolDef
from .tools.write_scope import build_scope
from .workspace import Workspace, find_workspace, reference_dir


@dataclass(frozen=True)
class Validation:
    """What `agentos validate` found."""

    workspace: Workspace
    """The workspace checked."""
    problems: list[Problem]
    """Findings that make the workspace unusable for the selected profile (exit 1)."""
    warnings: list[Problem]
    """Findings about profiles not selected: printed, not a failure (a key not exported yet)."""


def validate_workspace(path: Path | None = None) -> tuple[Workspace, list[Problem]]:
    """Every problem in the workspace's schemas, config, agents, skills, hooks and workflows."""
    found = validate(path)
    return found.workspace, found.problems


def validate(path: Path | None = None, profile: str | None = None) -> Validation:
    """`validate_workspace`, and each profile checked for a run: an API key variable that is
    not set is a problem for `profile` (default: the default_profile), a warning for the others."""
    ws = find_workspace(path)
    warnings: list[Problem] = []
    problems = _contracts(ws, profile, warnings)
    return Validation(ws, problems, warnings)


def profile_findings(config: WorkspaceConfig, selected: str | None, root: Path
                     ) -> tuple[list[Problem], list[Problem]]:
    """(problems, warnings) about the profiles: an unknown provider or selected profile is a
    problem; an API key variable that is not set, or a cassette file that is missing or
    unreadable, is a problem for the selected profile (the run would fail) and a warning
    for every other profile."""
    from .providers.registry import cassette_problem, key_env_of, unknown_provider

    selected = selected or config.default_profile
    problems = [p for prof in config.profiles.values() if (p := unknown_provider(config.file, prof))]
    warnings: list[Problem] = []
    if selected not in config.profiles:
        problems.append(Problem(config.file, "profile", f"no profile {selected!r}; known: "
                                f"{', '.join(sorted(config.profiles))}"))
    for prof in config.profiles.values():
        bad = cassette_problem(config.file, prof, root)[1]
        if bad is not None:
            (problems if prof.name == selected else warnings).append(bad)
        _store_env(config.file, prof, problems if prof.name == selected else warnings)
        env = key_env_of(prof)
        if not env or os.environ.get(env):
            continue
        field = f"profiles.{prof.name}.api_key_env"
        if prof.name == selected:
            problems.append(Problem(config.file, field, f"{env} is not set; export the "
                                    f"{prof.provider} API key there (export {env}=...) before "
                                    f"running profile {prof.name!r}"))
        else:
            warnings.append(Problem(config.file, field, f"{env} is not set; a run with --profile "
                                    f"{prof.name} fails at its first model call until it is exported"))
    return problems, warnings


def _store_env(file: str, prof: RuntimeProfile, found: list[Problem]) -> None:
    """A postgres event store whose DSN variable is not set: the run could not store a thing."""
    env = prof.event_store.dsn_env
    if prof.event_store.kind == "postgres" and env and not os.environ.get(env):
        found.append(Problem(file, f"profiles.{prof.name}.event_store.dsn_env",
                             f"{env} is not set; export the PostgreSQL connection string there "
                             f"(export {env}=postgresql://ROLE@HOST/DB) before running profile "
                             f"{prof.name!r} (docs/class-server.md)"))


def _contracts(ws: Workspace, profile: str | None, warnings: list[Problem]) -> list[Problem]:
    problems: list[Problem] = []
    try:
        schemas = SchemaRegistry.load(ws.contract_dir("schemas"))
    except ContractError as exc:
        return exc.problems  # nothing else can be checked without the schemas
    problems += missing_schemas(schemas, BUILTIN_TOOLS, ws)
    if problems:
        return problems  # the loaders below would trip over the same missing ids
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
        try:
            build_scope(ws.root, config, config.hooks)
        except ContractError as exc:
            problems += exc.problems
        found, warned = profile_findings(config, profile, ws.root)
        problems += found
        warnings += warned
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
    return problems


# Schemas the loaders check agentos.yaml, agents/*.md and SKILL.md files against.
LOADER_SCHEMAS = ("workspace_config_v1", "agent_frontmatter_v1", "skill_frontmatter_v1")


def missing_schemas(schemas: SchemaRegistry, tools: tuple[ToolDef, ...], ws: Workspace) -> list[Problem]:
    """Fail closed at load (I-3) when a schema the loaders or a registered tool names is not
    loaded, instead of a KeyError in the middle of a session. The schemas folder is named
    (`Workspace.shown`, two realpaths) only when one is missing."""
    needs = [(sid, "the workspace loader") for sid in LOADER_SCHEMAS]
    needs += [(sid, f"event type {t!r}") for t, sid in EVENT_SCHEMAS.items() if t not in CHECKED_ON_USE]
    needs += [(sid, f"tool {t.name!r} ({side})") for t in tools
              for side, sid in (("schema_in", t.schema_in), ("schema_out", t.schema_out))]
    missing = [(sid, who) for sid, who in needs if sid not in schemas]
    if not missing:
        return []
    shown = ws.shown(ws.contract_dir("schemas"))
    return [Problem(shown, sid, f"no schema {sid!r} is loaded; {who} needs it") for sid, who in missing]

"""RuntimeProfile and agentos.yaml (I-2: swapping a provider is a profile change only)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .errors import ContractError, Problem
from .schemas.textcheck import DEFAULT_MAX_PROMPT_BYTES, decode_problem
from .store.durability import DEFAULT_FSYNC, Durability, FsyncPolicy
from .store.redaction import PII_CATEGORIES
from .yamlload import FrontmatterError, field_of, load_yaml, yaml_error, yaml_problem

if TYPE_CHECKING:
    from .schemas.registry import SchemaRegistry

CONFIG_NAME = "agentos.yaml"
DEFAULT_WRITABLE = ("notes",)
"""Where tools write when agentos.yaml has no `writable:` (a data folder, no contract)."""


@dataclass(frozen=True)
class EventStoreConfig:
    """A profile's `event_store`: where its sessions' events live."""

    kind: str = "jsonl"
    """jsonl (sessions/<id>/.events.jsonl) or postgres."""
    dsn_env: str | None = None
    """With postgres: the environment variable holding the connection string."""
    pool_max: int = 4
    """With postgres: most connections one process opens."""
    sessions_may_link_out: bool = False
    """With jsonl: sessions/ may be a symbolic link leading out of the workspace."""


@dataclass(frozen=True)
class TelemetryConfig:
    """A profile's `telemetry`: live OpenTelemetry export of its sessions."""

    otlp_endpoint: str
    """OTLP/HTTP traces endpoint."""
    service_name: str = "agentos-kernel"
    """service.name of the exported resource."""
    capture_content: bool | None = None
    """Export tool call arguments and results (GenAI content capture); None: as
    OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT says, off when it is unset."""


@dataclass(frozen=True)
class RuntimeProfile:
    """Which provider and model run the roles, and the loop's bounds."""

    name: str
    """Profile key in agentos.yaml."""
    provider: str
    """Provider registry key: scripted, anthropic, openai, gemini, openai_compat."""
    model: str
    """Model name passed to the provider."""
    deterministic: bool = False
    """Logical clock and counter ids: byte-identical logs for the same request."""
    max_retries: int = 2
    """Provider retries inside the adapter before PROVIDER_ERROR."""
    timeout_s: float = 60.0
    """Per-call provider timeout: each read of the answer (and a whole unstreamed answer)."""
    stream: bool = True
    """HTTP providers: stream the answer (its text shows as it arrives); the log is the same
    either way. Scripted and cassette providers answer at once and ignore it."""
    max_rework: int = 2
    """REVIEW fail -> REWORK at most this many times, then human escalation."""
    max_iterations: int = 3
    """Plan-work-review passes a Stop hook that allows continuation may run."""
    max_tool_turns: int = 8
    """Tool-using model turns per worker call."""
    max_repairs: int = 0
    """Repair turns per role call: a role answer that is not JSON or breaks its schema is
    handed back to the model with the error this many times before it fails closed (0: at
    once, as the scripted profiles do; the real-model examples use 2)."""
    compact_after: int = 40
    """Messages in a worker conversation before PreCompact fires."""
    temperature: float | None = None
    """Sampling temperature, if set."""
    max_tokens: int | None = None
    """Output budget per call, if set."""
    api_key_env: str | None = None
    """Environment variable holding the API key (never the key itself)."""
    base_url: str | None = None
    """Endpoint for OpenAI-compatible servers."""
    cassette: str | None = None
    """With `provider: cassette`: the cassette file replayed (relative to the workspace)."""
    prices: dict[str, float] = field(default_factory=dict)
    """input_per_mtok / output_per_mtok in USD."""
    agents: dict[str, str] = field(default_factory=dict)
    """Role -> agent file (agents/<name>.md) when it differs from the role name."""
    redact_patterns: tuple[str, ...] = ()
    """Extra regexes redacted (as [REDACTED]) before anything is logged."""
    redact_pii: tuple[str, ...] = ()
    """PII categories redacted too, on every sink (email, phone, kr_rrn, us_ssn, iban)."""
    fsync: FsyncPolicy = DEFAULT_FSYNC
    """When session logs are fsynced: never | close | every_n | always (docs/reliability.md)."""
    fsync_every: int | None = None
    """With `fsync: every_n`: fsync after this many events."""
    event_store: EventStoreConfig = EventStoreConfig()
    """Where sessions are stored (jsonl by default, or postgres)."""
    telemetry: TelemetryConfig | None = None
    """Live OpenTelemetry export, if set."""
    max_prompt_bytes: int = DEFAULT_MAX_PROMPT_BYTES
    """Longest prompt (UTF-8 bytes) a session starts with; a longer one is PROMPT_TOO_LARGE
    (the log holds a copy per model call: docs/reliability.md)."""

    @property
    def durability(self) -> Durability:
        """The fsync policy the event store applies to this profile's sessions."""
        return Durability(self.fsync, self.fsync_every or 1)

    def agent_for(self, role: str) -> str:
        return self.agents.get(role, role)


@dataclass(frozen=True)
class McpServerConfig:
    """One `mcp_servers` entry of agentos.yaml: an MCP server (stdio `command` or streamable-HTTP
    `url`) whose tools the runtime registers as `<name>__<tool>` (agentos_kernel/tools/mcp_client.py)."""

    name: str
    """Server name, the prefix of its tools' names (lowercase letters, digits, `-`)."""
    command: tuple[str, ...]
    """Executable and arguments; relative paths resolve against the workspace root."""
    env: dict[str, str] = field(default_factory=dict)
    """Extra environment variables, merged over the SDK's safe default environment."""
    timeout_s: float = 30.0
    """Bound on the server's start-up and on each tool call."""
    where: str = "mcp_servers[0]"
    """Its position in agentos.yaml, named in every error about it."""
    url: str | None = None
    """A streamable-HTTP server's endpoint, instead of a command (then `command` is empty)."""


@dataclass(frozen=True)
class WorkspaceConfig:
    """agentos.yaml, checked against workspace_config_v1."""

    file: str
    """Where it was read from (for messages)."""
    default_profile: str
    """Profile used when none is named."""
    profiles: dict[str, RuntimeProfile]
    """Profiles by name."""
    hooks: tuple[dict[str, Any], ...] = ()
    """Hook entries: event, handler|command, priority, timeout_s, id."""
    skill_roots: tuple[str, ...] = ("skills",)
    """Directories scanned for */SKILL.md, relative to the workspace."""
    mcp_servers: tuple[McpServerConfig, ...] = ()
    """MCP servers whose tools are added to the tool registry."""
    writable: tuple[str, ...] = DEFAULT_WRITABLE
    """Folders tools may write inside, relative to the workspace (write_scope.py)."""

    def profile(self, name: str | None = None) -> RuntimeProfile:
        """A profile by name; KeyError names the bad key and the known ones."""
        key = name or self.default_profile
        try:
            return self.profiles[key]
        except KeyError:
            raise KeyError(f"unknown profile {key!r} in {self.file}; known: "
                           f"{', '.join(sorted(self.profiles))}") from None


# Bounded like frontmatter (depth, values, aliases) but longer: a config lists many profiles.
MAX_CONFIG_CHARS = 4 * 1024 * 1024


def load_config(path: Path, schemas: SchemaRegistry, shown: str | None = None) -> WorkspaceConfig:
    """Read and check agentos.yaml; raise ContractError naming file and field."""
    shown = shown or str(path)
    try:
        text = path.read_text(encoding="utf-8")
        doc = load_yaml(text, max_chars=MAX_CONFIG_CHARS)
    except OSError as exc:
        raise ContractError([Problem(shown, "-", f"cannot read: {exc.strerror}")]) from None
    except UnicodeDecodeError as exc:
        raise ContractError([Problem(shown, "-", decode_problem(exc))]) from None
    except FrontmatterError as exc:  # out of bounds: too long, too deep, too many values
        raise ContractError([Problem(shown, exc.field, str(exc))]) from None
    except yaml_error() as exc:
        line, why = yaml_problem(exc, text)
        raise ContractError([Problem(shown, "-" if line is None else f"line {line + 1}",
                                     f"not valid YAML: {why}")]) from None
    found = schemas.violations(doc, "workspace_config_v1")
    if found:
        raise ContractError([Problem(shown, field_of(v.path, v.message), v.message)
                             for v in found])
    profiles = {name: RuntimeProfile(name=name, **{k: _field(k, v) for k, v in body.items()})
                for name, body in doc["profiles"].items()}
    problems = [Problem(shown, f"profiles.{p.name}.redact_patterns[{i}]",
                        f"not a valid regular expression ({why}); fix or remove it")
                for p in profiles.values() for i, why in _bad_patterns(p.redact_patterns)]
    problems += [Problem(shown, f"profiles.{p.name}.redact_pii[{i}]",
                         f"unknown PII category {name!r}; known: {', '.join(PII_CATEGORIES)}")
                 for p in profiles.values() for i, name in enumerate(p.redact_pii)
                 if name not in PII_CATEGORIES]
    if doc["default_profile"] not in profiles:
        problems.append(Problem(shown, "default_profile",
                                f"{doc['default_profile']!r} is not one of the profiles "
                                f"({', '.join(sorted(profiles))})"))
    for p in profiles.values():
        if p.agent_for("reviewer") == p.agent_for("worker"):
            problems.append(Problem(shown, f"profiles.{p.name}.agents",
                                    "the reviewer would review its own work: give reviewer and "
                                    "worker different agents (SELF_REVIEW)"))
    servers = tuple(McpServerConfig(e["name"], tuple(e.get("command") or ()),
                                    dict(e.get("env") or {}), e.get("timeout_s", 30.0),
                                    f"mcp_servers[{i}]", e.get("url"))
                    for i, e in enumerate(doc.get("mcp_servers") or ()))
    for i, server in enumerate(servers):
        if server.name in {s.name for s in servers[:i]}:  # the name prefixes its tools' names
            problems.append(Problem(shown, f"{server.where}.name",
                                    f"server name {server.name!r} is used by an earlier entry"))
    if problems:
        raise ContractError(problems)
    return WorkspaceConfig(shown, doc["default_profile"], profiles, tuple(doc.get("hooks") or ()),
                           tuple(doc.get("skill_roots") or ("skills",)), servers,
                           tuple(doc.get("writable", DEFAULT_WRITABLE)))


def _field(key: str, value: Any) -> Any:
    """A checked profile value as RuntimeProfile holds it."""
    if key in ("redact_patterns", "redact_pii"):
        return tuple(value)
    if key == "event_store":
        return EventStoreConfig(**value)
    if key == "telemetry":
        return TelemetryConfig(**value)
    return value


def _bad_patterns(patterns: tuple[str, ...]) -> list[tuple[int, str]]:
    bad = []
    for i, pattern in enumerate(patterns):
        try:
            re.compile(pattern)
        except re.error as exc:
            bad.append((i, str(exc)))
    return bad

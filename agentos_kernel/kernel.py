"""Composition root: `Runtime.from_workspace()` wires the layers; `handle_user_request()`
(flow.py) runs the spec's ten-step flow. It and providers/registry.py (re-exported here) are the
only modules that name concrete adapters."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Iterable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any

from .clock import CounterIds, LogicalClock, RandomIds, SystemClock, first_free, random_session_id
from .config import RuntimeProfile, WorkspaceConfig, load_config
from .errors import ContractError, DomainError, Err, ErrorCode, Problem, Result
from .hooks import HookBus
from .hooks.loader import handler_from_entry
from .providers.base import LiveText, StreamWatcher, TextSink
from .providers.faults import FaultPlan
from .providers.registry import (  # key_env_of, ADAPTERS: the composition root's API (__all__)
    ADAPTERS,
    PROVIDERS,
    ProviderFactory,
    cassette_problem,
    key_env_of,
    unknown_provider,
)
from .roles.agents import AgentDef, load_agents
from .roles.flow import RequestFlow
from .roles.session import Session
from .schemas.registry import SchemaRegistry
from .schemas.textcheck import prompt_refusal
from .skills.registry import SkillRegistry, discover
from .store.events import Event, check_session_id
from .store.factory import open_store
from .store.lock import SessionExists, SessionLinked, SessionLocked
from .store.reading import SessionReading
from .store.recorder import SessionLog
from .tools.builtin import BUILTIN_TOOLS
from .tools.dispatch import ToolContext, ToolDef, ToolRegistry
from .tools.write_scope import WriteScope, build_scope
from .validate import missing_schemas
from .workspace import CONTRACT_DIRS, Workspace, find_workspace, reference_dir

# The composition root's API: Runtime, and the provider registry it re-exports (validate.py
# and the CLI name the registry through here; nothing outside providers/ names an adapter).
__all__ = ["ADAPTERS", "PROVIDERS", "Runtime", "cassette_problem", "key_env_of", "unknown_provider"]


class Runtime(RequestFlow, SessionReading):
    """One workspace's registries and one profile, ready to run a request (the request's
    flow itself is in flow.py)."""

    def __init__(self, workspace: Workspace, config: WorkspaceConfig, profile: RuntimeProfile,
                 schemas: SchemaRegistry, agents: dict[str, AgentDef], skills: SkillRegistry,
                 tools: ToolRegistry, hooks: HookBus, faults: FaultPlan | None = None,
                 provider_factory: ProviderFactory | None = None, bridged: Any = None,
                 scope: WriteScope | None = None) -> None:
        self.workspace, self.config, self.profile = workspace, config, profile
        self.scope = scope if scope is not None else build_scope(workspace.root, config, config.hooks)
        """Where this runtime's tools may write (write_scope.py); every session's ToolContext."""
        self.provider_factory = provider_factory  # None: PROVIDERS[profile.provider]; rerun: a cassette
        self.schemas, self.agents, self.skills, self.tools, self.hooks = (
            schemas, agents, skills, tools, hooks)
        self.faults = faults
        self.record_to: Path | None = None
        """A cassette file every answered model call is added to (`agentos run --record`)."""
        self.store = open_store(profile, workspace.sessions, config.file)
        self._next_n: int | None = None
        self._recheck = False  # forget_session_ids: check the count before using it
        self.logical_start_ms = 0
        """With a deterministic profile: the logical clock's first reading, in ms after its epoch
        (a simulated class spreads its sessions over the term; classroom.simulate_class)."""
        self.watchers: list[Callable[[Event], None]] = []
        """Called with each event of this runtime's sessions once it is logged (`watching`)."""
        self.gates: list[Callable[[Event], None]] = []
        """Called with each event just before it is logged (`watching(..., before=True)`)."""
        self.live_text = LiveText()
        """Streamed answer text of this runtime's sessions, redacted, to whoever watches."""
        self.bridged = bridged
        """The MCP servers this runtime started (mcp_bridges.BridgedTools), or None."""
        if profile.telemetry is not None:  # live OpenTelemetry export; the SDK loads only then
            from .telemetry.otel_live import watcher_for
            self.watchers.append(watcher_for(config.file, profile))

    @classmethod
    def from_workspace(cls, path: Path | str | Workspace | None = None, *, profile: str | None = None,
                       faults: FaultPlan | None = None, cwd: Path | None = None,
                       tools: Iterable[ToolDef] = ()) -> Runtime:
        """Load every contract of a workspace; ContractError names each bad file and field.
        `path` may be a Workspace `find_workspace` gave (runtime_cache has found it already).
        `tools` are your own ToolDefs, registered after the builtin ones; like theirs, their
        schema_in and schema_out must be in the workspace's schemas/ (else ContractError)."""
        ws = path if isinstance(path, Workspace) else find_workspace(
            Path(path) if path is not None else None, cwd)
        schemas = SchemaRegistry.load(ws.contract_dir("schemas"))
        own = BUILTIN_TOOLS + tuple(tools)
        missing = missing_schemas(schemas, own, ws)
        if missing:
            raise ContractError(missing)
        config = load_config(ws.config_file, schemas, ws.shown(ws.config_file))
        try:
            prof = config.profile(profile)
        except KeyError as exc:
            raise ContractError([Problem(config.file, "profile", exc.args[0])]) from None
        problem = unknown_provider(config.file, prof)
        prof, bad_cassette = cassette_problem(config.file, prof, ws.root)
        if problem or bad_cassette:
            raise ContractError([p for p in (problem, bad_cassette) if p])
        agents_dir = ws.contract_dir("agents")
        agents = load_agents(agents_dir, schemas, ws.shown(agents_dir))
        skills = discover([ws.contract_dir(r) if r == "skills" else ws.root / r
                           for r in config.skill_roots], schemas,
                          base=reference_dir() if ws.bundled else ws.root)
        hooks = HookBus()
        problems = []
        entries = list(config.hooks) + list(faults.hooks if faults else ())
        for i, entry in enumerate(entries):
            where = f"hooks[{i}]" if i < len(config.hooks) else f"fault plan hooks[{i - len(config.hooks)}]"
            try:
                hooks.register(entry["event"], handler_from_entry(entry, ws.root))
            except (ValueError, KeyError) as exc:
                problems.append(Problem(config.file, where, str(exc).strip("'\"")))
        if problems:
            raise ContractError(problems)
        # Before any server starts: a bad writable entry is a load error like any other.
        scope = build_scope(ws.root, config, entries, [ws.contract_dir(n) for n in CONTRACT_DIRS])
        bridged = None
        if config.mcp_servers:  # the MCP SDK is imported only by a workspace that names a server
            from .tools.mcp_bridges import bridge_servers
            bridged = bridge_servers(config, schemas, ws.root, own)
            schemas, own = bridged.schemas, bridged.tools
        return cls(ws, config, prof, schemas, agents, skills, ToolRegistry(own), hooks, faults,
                   bridged=bridged, scope=scope)

    # -- resources --------------------------------------------------------------------
    def close(self) -> None:
        """Stop what this runtime started: its bridged MCP servers (idempotent). Sessions are
        not owned here: each request closes its own log."""
        if self.bridged is not None:
            self.bridged.close()

    def __enter__(self) -> Runtime:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def refresh_tools(self) -> bool:
        """Take up a bridged server's new tool list (after `tools/list_changed`); True when
        the registry changed. Called as each session opens, so a request sees one list."""
        if self.bridged is None or not self.bridged.refresh():
            return False
        self.schemas, self.tools = self.bridged.schemas, ToolRegistry(self.bridged.tools)
        return True

    # -- running ----------------------------------------------------------------------
    def new_session_id(self) -> str:
        """The next id to try: s0001, s0002 … when deterministic, else a random one.
        Only `open_session` claims it (another process may take it first)."""
        if not self.profile.deterministic:
            return random_session_id()
        if self._recheck and self._next_n is not None and self._next_n > 1 \
                and not self.store.exists(f"s{self._next_n - 1:04d}"):
            self._next_n = None  # the last id counted is gone (deleted by hand): probe again
        self._recheck = False
        if self._next_n is None:  # found once by probing, never by listing; then counted
            self._next_n = first_free(lambda n: self.store.exists(f"s{n:04d}"))
        while self.store.exists(f"s{self._next_n:04d}"):
            self._next_n += 1
        return f"s{self._next_n:04d}"

    def forget_session_ids(self) -> None:
        """Count the next id as a new Runtime would (runtime_cache reuses a Runtime across
        requests): the count goes on while the id before it still has a log, and is probed
        afresh when that log is gone (sessions deleted by hand start again at s0001). One
        existence check instead of the O(log N) probes, which grew with the workspace."""
        self._recheck = True

    def _claim(self, session_id: str | None) -> str | Err:
        """Claim `session_id`, or the first free new id, under the session's OS lock: two
        processes never get the same id, and a session has one writer (SESSION_LOCKED)."""
        while True:
            sid = session_id or self.new_session_id()
            try:
                self.store.create(sid)
                return sid
            except (SessionExists, SessionLocked) as exc:
                if session_id is None:  # taken by another process since it was listed: next
                    if self._next_n is not None:
                        self._next_n += 1
                    continue
                if isinstance(exc, SessionLocked):
                    return Err(DomainError("lock", ErrorCode.SESSION_LOCKED, str(exc)))
                why = str(exc) if isinstance(exc, SessionLinked) else f"session {sid!r} already exists"
                return Err(DomainError("config", ErrorCode.SESSION_EXISTS,
                                       f"{why}; pick another --session id"))

    def open_session(self, session_id: str | None = None) -> Session | Err:
        """A new session with its log, claimed for this writer until the log is closed (the
        id is checked and must be unused; SESSION_LOCKED names the pid writing it)."""
        if session_id is not None:
            problem = check_session_id(session_id)
            if problem:
                return Err(DomainError("config", ErrorCode.SESSION_ID_INVALID, problem))
        sid = self._claim(session_id)
        if isinstance(sid, Err):
            return sid
        self.refresh_tools()
        det = self.profile.deterministic
        clock = LogicalClock(self.logical_start_ms) if det else SystemClock()
        log = SessionLog(self.store, self.schemas, clock,
                         CounterIds() if det else RandomIds(), sid, watchers=self.watchers,
                         gates=self.gates, **self.redaction())
        try:
            provider = (self.provider_factory or PROVIDERS[self.profile.provider])(
                self.profile, self.faults)
            self.live_text.attach(provider, log.redact)  # redacted as the log would be
            if self.record_to is not None:
                from .providers.cassette_file import Recording  # only `agentos run --record`

                provider = Recording(provider, self.record_to, log.redact)
        except BaseException:
            log.close()  # no session to hand back: give up its claim
            raise
        return Session(log=log, profile=self.profile, provider=provider, tools=self.tools,
                       hooks=self.hooks, schemas=self.schemas, agents=self.agents,
                       tool_context=ToolContext(self.workspace.root, sid, self.scope))

    @contextmanager
    def watching(self, watch: Callable[[Event], None], *, before: bool = False) -> Iterator[None]:
        """Call `watch(event)` for each event logged while inside (a live trace); with
        `before`, just before it is appended (a live stepper). A watcher that has a
        `streamed(piece)` method (StreamWatcher) is given streamed answer text too."""
        kind = self.gates if before else self.watchers
        kind.append(watch)
        try:
            with self.live_text.watching(watch.streamed if isinstance(watch, StreamWatcher) else None):
                yield
        finally:
            kind.remove(watch)

    def streaming(self, sink: TextSink) -> AbstractContextManager[None]:
        """Call `sink(piece)` with each piece of streamed answer text while inside (the
        profile's `stream`; redacted first)."""
        return self.live_text.watching(sink)

    def redaction(self) -> dict[str, Any]:
        """What a session log redacts beyond the secret shapes: the API key (read from the
        env var the run reads, never stored), the profile's redact_patterns and redact_pii."""
        env = key_env_of(self.profile)
        key = os.environ.get(env, "") if env else ""
        return {"secrets": (key,) if key else (), "patterns": self.profile.redact_patterns,
                "pii": self.profile.redact_pii}

    def start_session(self, prompt: str, session_id: str | None = None, *,
                      actor: str = "user") -> Session | Err:
        """Open a session and log `session.start` by `actor` (and any skipped skill files). A
        prompt that is empty, not UTF-8 text or over the profile's max_prompt_bytes is refused
        before any session exists (PROMPT_EMPTY, PROMPT_INVALID, PROMPT_TOO_LARGE): nothing
        is run, so nothing is recorded or left on disk."""
        refused = prompt_refusal(prompt, self.profile.max_prompt_bytes, self.profile.name,
                                 self.config.file)
        if refused is not None:
            return Err(refused)
        session = self.open_session(session_id)
        if isinstance(session, Err):
            return session
        try:
            start: dict[str, Any] = {"prompt": prompt}  # redacted by the log, like every payload
            if session.log.redact(prompt) == prompt:
                # Not for a prompt holding a secret: a card number is few enough guesses that
                # its hash, beside the rest of the prompt in clear, would give it away.
                start["prompt_sha256"] = hashlib.sha256(prompt.encode()).hexdigest()
            session.log.append("session.start", actor, {
                **start, "profile": self.profile.name, "provider": self.profile.provider,
                "model": self.profile.model, "deterministic": self.profile.deterministic})
            for p in self.skills.skipped:
                session.log.append("skill.skipped", "system", {"file": p.file, "field": p.field,
                                                               "reason": p.message})
        except BaseException:
            session.log.close()  # not handed back, so never guarded: release its claim here
            raise
        return session

    # L8 is imported on use, so `import agentos_kernel` never loads celpy.
    @property
    def workflows(self) -> Any:
        """The workflows/ registry (L8), loaded once; ContractError names each bad file."""
        from .workflows.registry import registry_of
        return registry_of(self)

    def run_cycle(self, cycle_id: str, prompt: str, *, session_id: str | None = None,
                  mode: str | None = None) -> Result[Any]:
        """Run an L8 cycle: Ok(CycleResult) for every verdict (workflows/engine.py)."""
        from .workflows.engine import run_cycle
        return run_cycle(self, cycle_id, prompt, session_id=session_id, mode=mode)

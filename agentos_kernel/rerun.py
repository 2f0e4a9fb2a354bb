"""Re-run with verification (DESIGN: "Re-running is a different verb").

Replay (replay.py) is a pure fold and touches nothing. A re-run runs the recorded request
again, in a new session of the same workspace, through every layer: hooks, skills, roles,
dispatch and the log all run for real, but the model is a cassette of the recorded
answers (providers/cassette.py) and every tool call returns its recorded result
(recorded_tools.py), so no side effect is repeated. The two logs are then compared event
by event; the first difference is where the code or the contracts (agent prompts,
skills, schemas, workflows) now behave differently from the recording.
"""

from __future__ import annotations

import contextlib
import hashlib
from dataclasses import asdict, dataclass
from typing import Any

from .errors import DomainError, Err, ErrorCode, Ok, Result
from .events import Event, check_session_id, verify_chain
from .kernel import Runtime
from .logdiff import MISSING, first_difference, rename_session, short
from .providers.cassette import CassetteProvider
from .recorded_tools import recorded_tools
from .session import SERVED_ACTOR

IGNORED = {"hook.fired": ("ms",), "llm.response": ("attempts",)}
"""Payload fields that measure the run rather than decide it (wall time, retries)."""
NOT_RUN = ("event.amended",)
"""Event types appended to a log after its run (corrections): not something to reproduce."""


@dataclass(frozen=True)
class Divergence:
    """Where a re-run first differs from its recording."""

    index: int
    """1-based position of the first differing event in both logs (the trace's seq)."""
    path: str
    """What differs: `type`, `actor`, `payload.<field>...`, or `event` when one log ends first."""
    recorded: Any
    """The recorded value there (`<missing>` when absent)."""
    new: Any
    """The re-run's value there (`<missing>` when absent)."""


@dataclass(frozen=True)
class RerunReport:
    """The outcome of re-running one recorded session."""

    original: str
    """The recorded session."""
    rerun_session: str
    """The new session the re-run was logged in."""
    identical: bool
    """Every event matches on (type, actor, payload), volatile fields aside."""
    events_compared: int
    """Event pairs compared: the whole log when identical, else up to the divergence."""
    first_divergence: Divergence | None
    """Where the logs first differ (None when identical)."""
    chain_broken_at: int | None = None
    """The recorded event whose hash chain does not match (edited after it was written), if any."""

    @property
    def verified(self) -> bool:
        """Identical behaviour and an intact recorded log."""
        return self.identical and self.chain_broken_at is None

    def verdict(self) -> str:
        """One line: `rerun s0002 matches s0001 (32 events)` or where it diverged."""
        tamper = (f"; the recorded log's hash chain breaks at event {self.chain_broken_at} "
                  "(edited after it was written)" if self.chain_broken_at is not None else "")
        if self.first_divergence is None:
            return (f"rerun {self.rerun_session} matches {self.original} "
                    f"({self.events_compared} events){tamper}")
        d = self.first_divergence
        return (f"rerun {self.rerun_session} of {self.original} diverged at event {d.index}: {d.path}: "
                f"recorded {short(d.recorded)} new {short(d.new)}{tamper}")

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready data."""
        return asdict(self)


def rerun(runtime: Runtime, session_id: str, *, new_session_id: str | None = None
          ) -> Result[RerunReport]:
    """Re-run a recorded session and compare. Err (no new session) when it cannot be re-run:
    no such session, no session.start, a redacted prompt, or a refused new session id."""
    problem = check_session_id(session_id)
    if problem:
        return Err(DomainError("config", ErrorCode.SESSION_ID_INVALID, problem))
    if not runtime.store.exists(session_id):
        return Err(DomainError("config", ErrorCode.UNKNOWN_ID,
                               f"no session {session_id!r} in {runtime.workspace.sessions}"))
    logged = runtime.events(session_id)
    broken = verify_chain(logged)
    recorded = [e for e in logged if e.type not in NOT_RUN]
    start = next((e for e in recorded if e.type == "session.start"), None)
    if start is None:
        return Err(DomainError("config", ErrorCode.UNKNOWN_ID,
                               f"session {session_id!r} has no session.start: nothing to re-run"))
    if start.actor == SERVED_ACTOR:
        return Err(DomainError("config", ErrorCode.CONFIG_INVALID,
                               f"session {session_id!r} cannot be re-run: it was served to an MCP "
                               "client (agentos mcp serve), whose calls are not a request to "
                               f"repeat; read it with: agentos replay {session_id}"))
    prompt = start.payload["prompt"]
    if hashlib.sha256(prompt.encode()).hexdigest() != start.payload.get("prompt_sha256"):
        return Err(DomainError("config", ErrorCode.CONFIG_INVALID,
                               f"session {session_id!r} cannot be re-run: its prompt was redacted "
                               "in the log (sha256 differs from prompt_sha256), so the original "
                               "input cannot be re-created"))
    copy = _runtime_for(runtime, start.payload.get("profile"))
    new_id = new_session_id or copy.new_session_id()
    rename = (session_id, new_id)
    cassette = CassetteProvider.from_events(recorded, rename=rename)
    copy.provider_factory = lambda _profile, _faults: cassette
    copy.tools = recorded_tools(runtime.tools, recorded, rename=rename)
    started = next((e.payload for e in recorded if e.type == "workflow.started"), None)
    ran = (copy.run_cycle(started["cycle_id"], prompt, session_id=new_id, mode=started["mode"])
           if started is not None else copy.handle_user_request(prompt, session_id=new_id))
    if isinstance(ran, Err) and ran.error.session_id is None:  # refused before the session opened
        return ran
    count, divergence = compare(recorded, copy.events(new_id), rename)
    return Ok(RerunReport(session_id, new_id, divergence is None, count, divergence, broken))


def _runtime_for(rt: Runtime, profile_name: str | None) -> Runtime:
    """A copy of `rt` on the recorded profile (when the workspace still has it), without
    fault injection: the recording already holds every answer a fault produced."""
    profile = rt.profile
    if profile_name and profile_name != profile.name:
        # the profile is gone: keep the runtime's; a model change then shows as a divergence
        with contextlib.suppress(KeyError):
            profile = rt.config.profile(profile_name)
    return Runtime(rt.workspace, rt.config, profile, rt.schemas, rt.agents, rt.skills, rt.tools,
                   rt.hooks, None)


def compare(recorded: list[Event], new: list[Event], rename: tuple[str, str]
            ) -> tuple[int, Divergence | None]:
    """(events compared, first divergence) on (type, actor, payload), the recorded session
    id read as the new one and the IGNORED fields left out."""
    for i, (a, b) in enumerate(zip(recorded, new, strict=False), 1):
        found = first_difference(_view(a, rename), _view(b, None))
        if found is not None:
            return i, Divergence(i, *found)
    if len(recorded) == len(new):
        return len(new), None
    i = min(len(recorded), len(new)) + 1
    was = recorded[i - 1].type if i <= len(recorded) else MISSING
    now = new[i - 1].type if i <= len(new) else MISSING
    return i, Divergence(i, "event", was, now)


def _view(e: Event, rename: tuple[str, str] | None) -> dict[str, Any]:
    payload = e.payload
    if isinstance(payload, dict) and e.type in IGNORED:
        payload = {k: v for k, v in payload.items() if k not in IGNORED[e.type]}
    view = {"type": e.type, "actor": e.actor, "payload": payload}
    return rename_session(view, *rename) if rename else view


__all__ = ["Divergence", "RerunReport", "compare", "rerun"]

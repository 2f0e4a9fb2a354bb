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

from ..errors import ContractError, DomainError, Err, ErrorCode, Ok, Result
from ..kernel import Runtime
from ..providers.cassette import CassetteProvider
from ..providers.faults import FaultPlanError, load_fault_plan
from ..schemas.jsondiff import short
from ..store.events import Event, check_session_id, verify_chain
from ..tools.dispatch import SERVED_ACTOR
from .diff import Divergence, diff_events
from .recorded_tools import recorded_tools

NOT_RUN = ("event.amended",)
"""Event types appended to a log after its run (corrections): not something to reproduce."""


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
    # A fork (fork.py) is re-run as it ran: its prefix copied, then the live part played back.
    # (the last session.forked: a fork of a fork copied its parent's one with the prefix)
    k = max((i for i, e in enumerate(recorded) if e.type == "session.forked"), default=None)
    forked = recorded[k].payload if k is not None else None
    if forked is not None and forked.get("faults") and runtime.faults is None:
        # The fork's gates came from its fault plan (e.g. hook_deny): the re-run needs the
        # same hooks; the plan's model faults are already in the recorded answers.
        try:
            runtime = _with_plan(runtime, forked["faults"])
        except (FaultPlanError, ContractError) as exc:
            return Err(DomainError("config", ErrorCode.CONFIG_INVALID,
                                   f"fork {session_id!r} ran with faults {forked['faults']!r}, "
                                   f"which cannot be loaded again: {exc}"))
    copy = _runtime_for(runtime, (forked or start.payload).get("profile"))
    new_id = new_session_id or copy.new_session_id()
    rename = (session_id, new_id)
    cassette = CassetteProvider.from_events(recorded, rename=rename)
    copy.provider_factory = lambda _profile, _faults: cassette
    copy.tools = recorded_tools(runtime.tools, recorded[k:] if k is not None else recorded,
                                rename=rename)
    started = next((e.payload for e in recorded if e.type == "workflow.started"), None)
    if forked is not None:
        from .fork import resume  # fork imports this module's neighbours; import on use
        ran = resume(copy, recorded[:k], forked, session_id, session_id=new_id,
                     skip_calls=cassette.advance)
    elif started is not None:
        ran = copy.run_cycle(started["cycle_id"], prompt, session_id=new_id, mode=started["mode"])
    else:
        ran = copy.handle_user_request(prompt, session_id=new_id)
    if isinstance(ran, Err) and ran.error.session_id is None:  # refused before the session opened
        return ran
    count, divergence = compare(recorded, copy.events(new_id), rename)
    return Ok(RerunReport(session_id, new_id, divergence is None, count, divergence, broken))


def _with_plan(rt: Runtime, faults: str) -> Runtime:
    """`rt`'s workspace loaded again with the fault plan's hooks registered."""
    ws = rt.workspace
    return Runtime.from_workspace(None if ws.bundled else ws.root, cwd=ws.root,
                                  profile=rt.profile.name, faults=load_fault_plan(faults))


def _runtime_for(rt: Runtime, profile_name: str | None) -> Runtime:
    """A copy of `rt` on the recorded profile (when the workspace still has it), without
    fault injection: the recording already holds every answer a fault produced."""
    profile = rt.profile
    if profile_name and profile_name != profile.name:
        # the profile is gone: keep the runtime's; a model change then shows as a divergence
        with contextlib.suppress(KeyError):
            profile = rt.config.profile(profile_name)
    return Runtime(rt.workspace, rt.config, profile, rt.schemas, rt.agents, rt.skills, rt.tools,
                   rt.hooks, None, scope=rt.scope)


def compare(recorded: list[Event], new: list[Event], rename: tuple[str, str]
            ) -> tuple[int, Divergence | None]:
    """(events compared, first divergence) on (type, actor, payload), the recorded session
    id read as the new one and the volatile fields left out: logdiff's engine, the same one
    `agentos diff` uses."""
    found = diff_events(recorded, new, rename)
    return found.compared if found.first else len(new), found.first


__all__ = ["Divergence", "RerunReport", "compare", "rerun"]

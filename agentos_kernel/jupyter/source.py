"""Resolve what a user hands the workbench (a session id, or the object `%agent` returned)
into the session's events, read from its log. Reading never writes or re-runs anything."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..store.events import Event, check_session_id
from ..store.jsonl import JsonlEventStore
from ..store.replay.logview import LogEvents
from ..workspace import Workspace, find_workspace

SHOWN_IDS = 8
"""How many of the latest session ids an unknown-session message lists."""


class UnknownSession(LookupError):
    """A session id with no log in the workspace; the message is one line with the fix."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else "unknown session"


@dataclass(frozen=True)
class SessionData:
    """One session's events, as recorded."""

    session_id: str
    """The session id (directory name under sessions/)."""
    events: Sequence[Event]
    """Every event of its log, in order (a tuple; LogEvents from `open_session`)."""
    workspace: Workspace
    """Where the log was read from."""


def known_sessions(ws: Workspace) -> list[str]:
    """Session ids with a log in the workspace, sorted."""
    return JsonlEventStore(ws.sessions).sessions()


def load_session(session: Any, workspace: Path | str | None = None) -> SessionData:
    """Events of `session`: a session id (looked up in `workspace`, else the workspace of the
    current directory), or anything with `session_id`, `events` and `workspace` (an AgentRun)."""
    return _resolve(session, workspace, lazy=False)


def open_session(session: Any, workspace: Path | str | None = None) -> SessionData:
    """`load_session`, but a log's events are LogEvents: its bytes are held and each event
    is parsed when asked for (what the widgets use on sessions of any length)."""
    return _resolve(session, workspace, lazy=True)


def session_log(session: str, workspace: Path | str | None = None) -> Path:
    """The log file of session id `session` (UnknownSession when it has none), unread."""
    problem = check_session_id(session)
    if problem:
        raise UnknownSession(problem)
    ws = find_workspace(Path(workspace) if workspace is not None else None)
    store = JsonlEventStore(ws.sessions)
    if not store.exists(session):
        ids = known_sessions(ws)
        shown = ", ".join(ids[-SHOWN_IDS:]) if ids else "none yet; run %agent first"
        if len(ids) > SHOWN_IDS:  # a list cut short says so, or it reads as every session
            shown += f" and {len(ids) - SHOWN_IDS} more"
        raise UnknownSession(f"no session {session!r} in this workspace (sessions: {shown})")
    return store.path(session)


def _resolve(session: Any, workspace: Path | str | None, lazy: bool) -> SessionData:
    if isinstance(session, SessionData):
        return session
    if all(hasattr(session, a) for a in ("session_id", "events", "workspace")):
        return SessionData(session.session_id, tuple(session.events), session.workspace)
    if not isinstance(session, str):
        raise TypeError(f"expected a session id or the result of %agent, not {type(session).__name__}")
    path = session_log(session, workspace)
    ws = find_workspace(Path(workspace) if workspace is not None else None)
    events = LogEvents(path) if lazy else tuple(JsonlEventStore(ws.sessions).read(session))
    return SessionData(session, events, ws)

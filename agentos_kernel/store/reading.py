"""Mixed into Runtime: reading and amending its sessions, whichever store holds them (a
sessions folder of JSONL files, or PostgreSQL)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..clock import CounterIds, LogicalClock, RandomIds, SystemClock
from .events import Event, LogError, ends_complete
from .integrity import VerifyReport, verify_log, verify_session
from .jsonl import JsonlEventStore
from .recorder import SessionLog
from .replay.fold import Snapshot, replay_path
from .replay.fold import replay as replay_events
from .replay.summary import RECENT, SnapshotSummary, _BoundedFold, summarize, summarize_path

if TYPE_CHECKING:
    from ..config import RuntimeProfile
    from ..schemas.registry import SchemaRegistry
    from ..workspace import Workspace
    from .postgres.store import PostgresEventStore


class SessionReading:
    """The attributes below are the Runtime's."""

    store: JsonlEventStore | PostgresEventStore
    schemas: SchemaRegistry
    profile: RuntimeProfile
    workspace: Workspace
    redaction: Callable[[], dict[str, Any]]

    def events(self, session_id: str) -> list[Event]:
        """A session's events (KeyError names a session that has no log)."""
        return list(self.store.read(session_id))

    def amend(self, session_id: str, target_id: str, field: str, value: Any, reason: str) -> Event:
        """Correct an earlier event by appending `event.amended` (never an edit in place).
        The session is claimed first: SessionLocked while another writer has it open."""
        log = self.log_file(session_id)
        if log is not None and not ends_complete(log):  # appending would glue onto it
            raise LogError(f"{log}: the log ends in a torn or unterminated "
                           f"line; set it aside first: agentos verify {session_id} --repair")
        self.store.reopen(session_id)
        try:
            if not any(e.id == target_id for e in self.store.read(session_id)):
                raise KeyError(f"no event {target_id!r} in session {session_id!r}")
            det = self.profile.deterministic
            last = self.store.tail(session_id)
            clock = LogicalClock.after(last.ts) if det and last else SystemClock()
            writer = SessionLog.resume(self.store, self.schemas, clock,
                                       CounterIds() if det else RandomIds(), session_id,
                                       **self.redaction())
            return writer.append("event.amended", "user", {"target_id": target_id, "field": field,
                                                        "value": value, "reason": reason}, target_id)
        finally:
            self.store.close(session_id)

    def replay(self, session_id: str, at: int | None = None) -> Snapshot:
        """The snapshot recomputed from the log alone."""
        if not self.store.exists(session_id):
            raise KeyError(f"no session {session_id!r} in {self.store_name}")
        log = self.log_file(session_id)
        return replay_path(log, at) if log is not None else replay_events(self.store.read(session_id), at)

    def replay_summary(self, session_id: str, at: int | None = None,
                       recent: int = RECENT) -> SnapshotSummary:
        """`replay` in bounded memory (snapshot_v2): counts, tallies and the last `recent`
        tool calls, hook decisions, violations and errors, for logs of any length."""
        if not self.store.exists(session_id):
            raise KeyError(f"no session {session_id!r} in {self.store_name}")
        log = self.log_file(session_id)
        if log is None:
            return summarize(self.store.read(session_id), at, recent)
        return summarize_path(log, at, recent)

    def verified_summary(self, session_id: str, recent: int = RECENT
                         ) -> tuple[VerifyReport, SnapshotSummary | None]:
        """`verify_session` and `replay_summary` in one pass over the log (`agentos replay
        --summary`): the report, and the summary when the log verifies and folds; None when
        it does not (then `replay_summary` reads it again: its result or error as before)."""
        fold = _BoundedFold(recent)
        if isinstance(self.store, JsonlEventStore):  # the file itself, read as verify_log reads it
            report = verify_log(self.store._log(session_id), fold=fold)
        else:
            report = verify_session(self.store, session_id, fold=fold)
        return report, fold.summary() if report.ok and not fold.failed else None

    def log_file(self, session_id: str) -> Path | None:
        """The session's `.events.jsonl` when this runtime stores JSONL, else None (its
        events are in a database: read them with `self.store.read`)."""
        return self.store.path(session_id) if isinstance(self.store, JsonlEventStore) else None

    @property
    def store_name(self) -> str:
        """Where this runtime's sessions are, for messages: the sessions folder or `postgres:ENV`."""
        return str(getattr(self.store, "name", self.workspace.sessions))


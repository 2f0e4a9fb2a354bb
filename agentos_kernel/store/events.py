"""L4 Append-only Event Store: one `.events.jsonl` per session, append only.

An event carries the spec's eight fields plus optional `seq` (1-based position) and
`chain` (sha256 over the previous chain and this event's canonical bytes), so a log is
tamper-evident. Logs with only the eight fields (another language's implementation, a
student's) load and replay; a numeric `ts` is read as Unix seconds.
"""

from __future__ import annotations

import hashlib
import re
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

import orjson

from ..clock import iso

LOG_NAME = ".events.jsonl"
REQUIRED_FIELDS = ("id", "session_id", "ts", "type", "actor", "payload", "schema_version", "parent_id")
OPTIONAL_FIELDS = ("seq", "chain")
FIELD_NAMES = (*REQUIRED_FIELDS, *OPTIONAL_FIELDS)
EVENT_KEYS = ({*REQUIRED_FIELDS}, {*FIELD_NAMES})
"""The key sets an event's line may have (without or with seq and chain): `d.keys() in EVENT_KEYS`."""
_SESSION_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


class LogError(ValueError):
    """A log line cannot be read as an event; the message names file, line and field."""


def check_session_id(session_id: str) -> str | None:
    """None when `session_id` is safe as a directory name, else why it is not."""
    if not isinstance(session_id, str) or not _SESSION_ID.fullmatch(session_id) or ".." in session_id:
        return (
            f"invalid session id {session_id!r}: use 1-64 letters, digits, '.', '_' or '-', "
            "starting with a letter or digit, without '..' or '/'"
        )
    return None


@dataclass(frozen=True)
class Event:
    """One recorded state change (the spec's `Event`)."""

    id: str
    """Unique id of this event."""
    session_id: str
    """The session whose log holds it."""
    ts: str
    """ISO-8601 UTC timestamp."""
    type: str
    """Event type, e.g. `tool.invoke`; selects the payload schema."""
    actor: str
    """Who caused it: user, system, a role, a tool, a hook."""
    payload: Any
    """Type-specific data, checked against the type's schema before it is appended."""
    schema_version: str = "v1"
    """Version of the event envelope."""
    parent_id: str | None = None
    """The event this one answers (tool.result -> tool.invoke), if any."""
    seq: int | None = None
    """1-based position in the session's log (optional extension)."""
    chain: str | None = None
    """sha256 hex over the previous chain and this event's canonical bytes (optional)."""

    def to_dict(self) -> dict[str, Any]:
        """The JSON object written to the log (seq and chain only when set)."""
        d = {
            "id": self.id,
            "session_id": self.session_id,
            "ts": self.ts,
            "type": self.type,
            "actor": self.actor,
            "payload": self.payload,
            "schema_version": self.schema_version,
            "parent_id": self.parent_id,
        }
        if self.seq is not None:
            d["seq"] = self.seq
        if self.chain is not None:
            d["chain"] = self.chain
        return d

    @classmethod
    def trusted(cls, fields: dict[str, Any]) -> Event:
        """An event from a dict holding exactly its ten fields, already checked by the caller
        (the session log building one; a line whose keys and types `from_dict` checked). The
        dict becomes the event's own: 0.3 µs instead of the frozen `__init__`'s 2 µs, twice
        per event of every request (written, then read back)."""
        event = object.__new__(cls)
        event.__dict__.update(fields)
        return event

    @classmethod
    def from_dict(cls, d: Any, where: str = "event") -> Event:
        """Read an event, naming `where` and the field in any error."""
        if (isinstance(d, dict) and d.keys() in EVENT_KEYS and type(d["ts"]) is str
                and type(d["type"]) is str and type(d["actor"]) is str):
            # The common case, a well-formed line: skip the field-by-field checks.
            if len(d) == len(FIELD_NAMES):
                return cls.trusted(d)
            return cls(**d)
        if not isinstance(d, dict):
            raise LogError(f"{where}: -: an event must be a JSON object")
        missing = [f for f in REQUIRED_FIELDS if f not in d]
        if missing:
            raise LogError(f"{where}: {missing[0]}: required event field is missing")
        extra = sorted(set(d) - set(REQUIRED_FIELDS) - set(OPTIONAL_FIELDS))
        if extra:
            raise LogError(f"{where}: {extra[0]}: not an event field")
        ts = d["ts"]
        if isinstance(ts, int | float) and not isinstance(ts, bool):
            try:
                ts = iso(datetime.fromtimestamp(ts, UTC))
            except (OverflowError, OSError, ValueError):
                raise LogError(f"{where}: ts: {ts} is not a time in Unix seconds") from None
        elif not isinstance(ts, str):
            raise LogError(f"{where}: ts: must be an ISO-8601 string or Unix seconds")
        for name in ("id", "session_id", "type", "actor", "schema_version"):
            if not isinstance(d[name], str):
                raise LogError(f"{where}: {name}: must be a string")
        return cls(
            id=d["id"],
            session_id=d["session_id"],
            ts=ts,
            type=d["type"],
            actor=d["actor"],
            payload=d["payload"],
            schema_version=d["schema_version"],
            parent_id=d["parent_id"],
            seq=d.get("seq"),
            chain=d.get("chain"),
        )


def line_event(line: bytes, session_id: str, where: str) -> Event:
    """The event one stored line holds (its newline optional), checked to be one event of
    `session_id`: for copying a line as it is. LogError naming `where` otherwise."""
    text = line[:-1] if line.endswith(b"\n") else line
    if not text.strip() or b"\n" in text:
        raise LogError(f"{where}: -: a line must hold exactly one event (a blank line is not copied)")
    try:
        ev = Event.from_dict(orjson.loads(text), where=where)
    except orjson.JSONDecodeError as exc:
        raise LogError(f"{where}: -: not JSON ({exc})") from None
    if ev.session_id != session_id:
        raise LogError(f"{where}: session_id: the event belongs to {ev.session_id!r}, not {session_id!r}")
    return ev


def canonical(obj: Any) -> bytes:
    """The one canonical encoding: UTF-8 JSON with sorted keys, no spaces."""
    return orjson.dumps(obj, option=orjson.OPT_SORT_KEYS)


def with_chain(body: bytes, actor: str, chain: str) -> bytes:
    """`canonical` of an event with its `chain`, from `body` = `canonical` of the same event
    without it, without encoding the payload again: in sorted order `chain` comes right
    after `actor`, the first key (the one splice SessionLog.append needs, tested against
    `canonical` in tests/fuzz/test_fuzz_jsonl.py)."""
    head = b'{"actor":' + orjson.dumps(actor)
    if not body.startswith(head):
        raise ValueError("body is not the canonical encoding of an event (actor first)")
    return b"%s,\"chain\":\"%s\"%s" % (head, chain.encode(), body[len(head):])


def chain_of(prev: str | None, event: Event) -> str:
    """The chain value for `event` following `prev` (None for the first event)."""
    body = event.to_dict()
    body.pop("chain", None)
    return hashlib.sha256((prev or "").encode() + canonical(body)).hexdigest()


class EventStore(Protocol):
    """Where events live. Every implementation passes tests/contract/test_event_store.py."""

    def create(self, session_id: str) -> None:
        """Claim a new session for this writer until `close`: SessionLocked when another
        writer has it, SessionExists when it already has a log."""

    def reopen(self, session_id: str) -> None:
        """Claim a session that has a log, to append to it: SessionLocked, or KeyError."""

    def append(self, event: Event, line: bytes | None = None) -> None:
        """Append one event to its session's log; never rewrites an earlier one. A session
        not claimed yet is claimed first (SessionLocked when another writer has it). `line`:
        the event's `canonical` bytes when the caller has them already (SessionLog does)."""

    def read(self, session_id: str) -> Iterator[Event]:
        """Stream a session's events in order; KeyError if the session has no log."""

    def tail(self, session_id: str) -> Event | None:
        """The last event of a session, or None if it has none."""

    def sessions(self) -> list[str]:
        """Every session id with a log, sorted."""

    def exists(self, session_id: str) -> bool:
        """True when the session has a log."""

    def close(self, session_id: str) -> None:
        """Release what is held for a session: its file and its claim (appending later
        claims it again)."""


@dataclass(frozen=True)
class TornTail:
    """The last line of a log that a writer did not finish (killed mid-append): it has no
    newline and is not JSON. Readers set it aside and report it; they never raise on it."""

    path: Path
    """The log file."""
    line: int
    """Its 1-based line number (one past the last complete line)."""
    offset: int
    """Byte offset where it starts; the file up to here is the complete lines."""
    size: int
    """How many bytes it holds."""

    def __str__(self) -> str:
        return (f"{self.path}:{self.line}: torn final line ({self.size} bytes, no newline, not JSON): "
                f"a writer stopped mid-append; the {self.line - 1} line(s) before it load; "
                f"`agentos verify --repair` moves it to {self.path.name}.torn")


class TornTailWarning(UserWarning):
    """Issued by the readers when they set a torn final line aside and no `on_torn` was given."""


def report_torn(tail: TornTail, on_torn: Callable[[TornTail], None] | None) -> None:
    """Hand a torn line to `on_torn`, or warn (TornTailWarning) when there is none: a torn
    line is set aside, never dropped silently."""
    if on_torn is None:
        warnings.warn(str(tail), TornTailWarning, stacklevel=2)
    else:
        on_torn(tail)


def ends_complete(path: Path) -> bool:
    """True when the file is missing, empty, or ends with a newline: the next line appended
    starts a line of its own (else it would glue onto a torn or unterminated last line)."""
    try:
        with Path(path).open("rb") as f:
            if f.seek(0, 2) == 0:
                return True
            f.seek(-1, 2)
            return f.read(1) == b"\n"
    except FileNotFoundError:
        return True


def log_lines(path: Path, on_torn: Callable[[TornTail], None] | None = None
              ) -> Iterator[tuple[int, Any]]:
    """(line number, parsed JSON) of every complete line, streaming. A torn final line is
    handed to `on_torn` (default: a TornTailWarning) and not yielded; a line that is not JSON
    anywhere else is corruption: LogError naming the line. Blank lines are passed over, and a
    key held twice in one object is read last-wins (orjson's way): both are for `agentos
    verify` (integrity.verify_log) to report, which `agentos replay/events` run first."""
    with Path(path).open("rb") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                if not line.endswith(b"\n"):  # whitespace as the last segment: not JSON, torn
                    report_torn(TornTail(Path(path), n, f.tell() - len(line), len(line)), on_torn)
                    return
                continue  # a blank line holds no event (`agentos verify` reports it)
            try:
                obj = orjson.loads(line)
            except orjson.JSONDecodeError as exc:
                if not line.endswith(b"\n"):  # only the file's last segment lacks one
                    report_torn(TornTail(Path(path), n, f.tell() - len(line), len(line)), on_torn)
                    return
                raise LogError(f"{path}:{n}: -: not JSON ({exc})") from None
            yield n, obj


def read_log(path: Path, on_torn: Callable[[TornTail], None] | None = None) -> Iterator[Event]:
    """Stream events from a JSONL file, one line at a time (memory flat in log length).
    A torn final line goes to `on_torn` (see log_lines); every complete event is yielded."""
    name = str(path)
    for n, obj in log_lines(path, on_torn):
        yield Event.from_dict(obj, where=f"{name}:{n}")


def verify_chain(events: Iterator[Event] | list[Event]) -> int | None:
    """The seq (or 1-based index) of the first event whose chain does not match, else None.
    Events without a chain are skipped (logs from implementations without the extension)."""
    prev: str | None = None
    for i, ev in enumerate(events, 1):
        if ev.chain is None:
            continue
        if chain_of(prev, ev) != ev.chain:
            return ev.seq or i
        prev = ev.chain
    return None

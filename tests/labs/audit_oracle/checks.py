"""The audit as it was before the streaming fold (kept only here, as the oracle the fold is
compared with in tests/labs/test_audit_fold.py).

Log-level audit checks: seq, ids, parents, the hash chain, start and close.

Each check takes the events read from one log (in file order) and returns its gaps; the
flow checks (pairs, transitions, hooks, schema violations, required types) are in
flow.py. `run_all` runs both in a fixed order, so a report lists gaps the same way
every time.
"""

from __future__ import annotations

from collections.abc import Callable

from agentos_kernel.labs.audit.model import Entry, Gap
from agentos_kernel.store.events import Event, chain_of

from . import flow as audit_flow

Check = Callable[[list[Entry]], list[Gap]]


def check_envelope(entries: list[Entry]) -> list[Gap]:
    """Ids are unique and every event belongs to the same session."""
    gaps: list[Gap] = []
    seen: dict[str, Entry] = {}
    sid = entries[0].raw["session_id"] if entries else None
    for e in entries:
        first = seen.setdefault(e.id, e)
        if first is not e:
            gaps.append(e.gap("envelope", f"id {e.id!r} is already the id of {first.name()} "
                                          f"(line {first.line}); every event needs a unique id"))
        if e.raw["session_id"] != sid:
            gaps.append(e.gap("envelope", f"session_id is {e.raw['session_id']!r} but the log "
                                          f"began as session {sid!r}; one log holds one session"))
    return gaps


def check_seq(entries: list[Entry]) -> list[Gap]:
    """When the log numbers its events, seq runs 1, 2, ... N in file order."""
    if not any("seq" in e.raw for e in entries):
        return []
    gaps: list[Gap] = []
    expected = 1
    for e in entries:
        seq = e.raw.get("seq")
        if seq is None:
            gaps.append(e.gap("seq", f"{e.type} at line {e.line} has no seq while the rest of the "
                                     f"log is numbered; expected seq {expected}"))
        elif seq != expected:
            missing = f"{expected}" if seq == expected + 1 else f"{expected}..{seq - 1}"
            why = (f"seq {missing} is missing (a dropped line?)" if seq > expected
                   else "a repeated or reordered line")
            gaps.append(e.gap("seq", f"{e.type} has seq {seq} where {expected} was expected: "
                                     f"{why}; seq must count 1..N in file order"))
            expected = seq
        expected += 1
    return gaps


def check_parents(entries: list[Entry]) -> list[Gap]:
    """A parent_id names an event earlier in the same log."""
    gaps: list[Gap] = []
    before: set[str] = set()
    later = {e.id: e for e in entries}
    for e in entries:
        pid = e.parent_id
        if pid is not None and pid not in before:
            where = f"a later event, {later[pid].name()}" if pid in later else "no event in this log"
            gaps.append(e.gap("parent", f"{e.type} has parent_id {pid!r}, which is {where}; "
                                        "parent_id must name an earlier event (the one it answers)"))
        before.add(e.id)
    return gaps


def check_chain(entries: list[Entry]) -> list[Gap]:
    """Where the log is chained, each event's chain is sha256(previous chain + its canonical
    bytes) (events.chain_of). Each event is checked against the chain its predecessor
    recorded, so an edited line is named alone and a dropped line names the one after it."""
    if not any("chain" in e.raw for e in entries):
        return []
    gaps: list[Gap] = []
    prev: str | None = None
    for e in entries:
        recorded = e.raw.get("chain")
        if recorded is None:
            gaps.append(e.gap("chain", f"{e.type} at line {e.line} has no chain while the rest of "
                                       "the log is chained: a line was added by hand"))
            continue
        if chain_of(prev, Event(**e.raw)) != recorded:
            gaps.append(e.gap("chain", f"{e.type}'s chain does not match sha256(previous chain + "
                                       "its canonical bytes): this line, or the one before it, was "
                                       "edited, dropped or reordered after it was written"))
        prev = recorded
    return gaps


def check_start(entries: list[Entry]) -> list[Gap]:
    """One session.start, and it is the first event."""
    starts = [e for e in entries if e.type == "session.start"]
    if not entries:
        return []
    if not starts:
        return [Gap("start", None, None, "no session.start: a session log begins with "
                                         "session.start {prompt, ...}")]
    gaps = []
    if entries[0] is not starts[0]:
        gaps.append(starts[0].gap("start", f"session.start is at line {starts[0].line}, not "
                                           "first; nothing happens before a session starts"))
    gaps += [e.gap("start", "a second session.start: one log holds one session") for e in starts[1:]]
    return gaps


def check_closed(entries: list[Entry]) -> list[Gap]:
    """Exactly one session.close {ok: bool}, the last event (only `event.amended`
    corrections may follow it); a close that is not ok says why."""
    if not entries:
        return []
    closes = [e for e in entries if e.type == "session.close"]
    if not closes:
        last = entries[-1]
        return [Gap("closed", None, None, f"no session.close: the log ends with {last.name()} "
                                          f"at line {last.line}; close every session, ok or not "
                                          "(session.close {ok, reason})")]
    gaps = [e.gap("closed", f"a second session.close (the first is seq {closes[0].seq}): a "
                            "session closes once") for e in closes[1:]]
    close = closes[0]
    after = [e for e in entries[entries.index(close) + 1:]
             if e.type not in ("session.close", "event.amended")]
    if after:
        gaps.append(close.gap("closed", f"session.close is not the last event: {len(after)} "
                                        f"event(s) follow it, first {after[0].name()} at line "
                                        f"{after[0].line}; only event.amended may follow the close"))
    ok = close.payload.get("ok")
    if not isinstance(ok, bool):
        gaps.append(close.gap("closed", "session.close has no boolean `ok`; say whether the "
                                        "session succeeded"))
    elif not ok and not close.payload.get("reason"):
        gaps.append(close.gap("closed", "session.close {ok: false} has no `reason`; a failed "
                                        "session says why it failed"))
    return gaps


LOG_CHECKS: tuple[Check, ...] = (check_envelope, check_seq, check_chain, check_parents,
                                 check_start, check_closed)


def run_all(entries: list[Entry], notes: list[str]) -> list[Gap]:
    """Every check, log-level first, then the flow; `notes` collects what was decided."""
    gaps: list[Gap] = []
    for check in LOG_CHECKS:
        gaps += check(entries)
    gaps += audit_flow.run_flow(entries, notes)
    return gaps

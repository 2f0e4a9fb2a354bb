"""JSONL log lines: garbage, invalid UTF-8, NUL, huge lines, deep nesting, torn lines and
non-events appended to a real log. Reading streams every event before the bad line and then
raises LogError naming `file:line`; those events still verify (hash chain) and replay to the
same snapshot; `replay_path` and `agentos replay` give a snapshot or a one-line error."""

from __future__ import annotations

import contextlib
import dataclasses
import io
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import assume, example, given
from hypothesis import strategies as st

from agentos_kernel.cli.main import main as cli_main
from agentos_kernel.store.events import (
    FIELD_NAMES,
    Event,
    LogError,
    canonical,
    read_log,
    verify_chain,
    with_chain,
)
from agentos_kernel.store.replay.fold import replay, replay_path

from . import error_line, fuzz, one_line
from .strategies import json_values, nasty_text


class Good(tuple):
    """(workspace, log bytes, its events), with a short repr for hypothesis' reports."""

    def __repr__(self) -> str:
        return f"<canonical log in {self[0]}>"


@pytest.fixture(scope="module")
def good(tmp_path_factory: pytest.TempPathFactory) -> Good:
    """A workspace with the canonical request's log."""
    ws = tmp_path_factory.mktemp("jsonl") / "ws"
    with contextlib.redirect_stdout(io.StringIO()):
        assert cli_main(["init", str(ws)]) == 0
        assert cli_main(["--workspace", str(ws), "run", "hello, greet Ada"]) == 0
    log = ws / "sessions" / "s0001" / ".events.jsonl"
    return Good((ws, log.read_bytes(), list(read_log(log))))


def _deep(n: int, obj: bool) -> bytes:
    return (b'{"a":' * n + b"1" + b"}" * n) if obj else (b"[" * n + b"]" * n)


bad_lines = st.one_of(
    st.binary(min_size=1, max_size=200),
    st.text(max_size=200).map(lambda t: t.encode("utf-8", "surrogatepass")),
    st.sampled_from([b"\0", b"\0" * 100, b"\xff\xfe\xfd", b'{"id":"\xff"}', b'"\\ud800"', b"\xef\xbb\xbf{}",
                     b"{", b"}", b"[]", b"null", b"1e999999", b"123456789012345678901234567890",
                     b'{"id": 1}', b'{"a": NaN}', b"\x1b[2J", b"\r"]),
    st.tuples(st.integers(2, 100_000), st.booleans()).map(lambda t: _deep(*t)),
    st.sampled_from([1 << 20, 4 << 20]).map(lambda n: b'{"payload": "' + b"x" * n + b'"}'),
    json_values.map(lambda v: json.dumps(v, ensure_ascii=False).encode("utf-8", "surrogatepass")),
)


def _torn(line: bytes, at: int) -> bytes:
    return line[: max(1, min(at, len(line) - 2))]


HUGE_LINE = b'{"payload": "' + b"x" * (8 << 20) + b'"}'


@fuzz(120)
@given(bad=bad_lines | st.integers(1, 400).map(lambda n: b"TORN" + bytes([n % 256])),
       newline=st.booleans())
@example(bad=HUGE_LINE, newline=True)
@example(bad=_deep(100_000, obj=False), newline=True)
@example(bad=_deep(100_000, obj=True), newline=False)
@example(bad=b"TORN\x05", newline=False)
@example(bad=b'{"id": "\xff\xfe"}', newline=True)
def test_a_bad_line_is_named_and_nothing_before_it_is_lost(tmp_path: Path,
                                                          good: Good,
                                                          bad: bytes, newline: bool) -> None:
    _, data, events = good
    if bad.startswith(b"TORN"):  # the last event cut short, as a crash mid-write leaves it
        bad = _torn(data.splitlines()[-1], bad[4])
    log = tmp_path / ".events.jsonl"
    log.write_bytes(data + bad + (b"\n" if newline else b""))
    read: list[Event] = []
    try:
        for ev in read_log(log):
            read.append(ev)
    except LogError as exc:
        message = one_line(str(exc))
        line = int(message.removeprefix(f"{log}:").split(":", 1)[0])
        assert line > len(events), "a line before the bad one was blamed"
    assert read[: len(events)] == events, "an event logged before the bad line was lost"
    assert verify_chain(read[: len(events)]) is None
    assert replay(read[: len(events)]) == replay(events)
    try:
        snap = replay_path(log)
        assert snap.events >= len(events)
    except LogError as exc:
        assert one_line(str(exc)).startswith(f"{log}:")


@fuzz(25)
@given(bad=bad_lines)
@example(bad=HUGE_LINE)
@example(bad=_deep(100_000, obj=True))
def test_agentos_replay_of_a_log_with_a_bad_line_exits_0_or_2_in_one_line(
        good: Good, bad: bytes) -> None:
    ws, data, _ = good
    log = ws / "sessions" / "s0001" / ".events.jsonl"
    log.write_bytes(data + bad + b"\n")
    try:
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = cli_main(["--workspace", str(ws), "replay", "s0001"])
    finally:
        log.write_bytes(data)
    assert code in (0, 2)
    if code == 2:
        error_line(err.getvalue())
        assert out.getvalue() == ""


FIELDS = ("id", "session_id", "ts", "type", "actor", "payload", "schema_version", "parent_id", "seq", "chain")
PAYLOAD_KEYS = ("usage", "input_tokens", "violations", "to", "ok", "output", "target_id", "field",
                "name", "args", "entry_phase", "to_phase", "verdict")


@st.composite
def odd_events(draw: st.DrawFn, events: list[Event]) -> bytes:
    """A real event with one envelope field, or one payload key, set to a random JSON value."""
    d = draw(st.sampled_from(events)).to_dict()
    if draw(st.booleans()):
        d[draw(st.sampled_from(FIELDS))] = draw(json_values)
    else:
        d["type"] = draw(st.sampled_from(["llm.response", "schema.violation", "agent.transition",
                                          "event.amended", "workflow.phase_advanced", "session.close",
                                          d["type"]]))
        payload = d["payload"] if isinstance(d["payload"], dict) else {}
        d["payload"] = {**payload, draw(st.sampled_from(PAYLOAD_KEYS)): draw(json_values)}
    return json.dumps(d).encode()  # json_values holds integers past orjson's 64 bits


@fuzz(80)
@given(data=st.data())
def test_an_event_with_wrong_field_types_replays_or_is_named(tmp_path: Path,
                                                            good: Good,
                                                            data: Any) -> None:
    _, raw, events = good
    log = tmp_path / ".events.jsonl"
    log.write_bytes(raw + data.draw(odd_events(events)) + b"\n")
    n = len(events) + 1
    by_line, by_event = f"{log}:{n}: ", f"event {n} ("
    for read, where in ((lambda: list(read_log(log)) and replay(read_log(log)), (by_line, by_event)),
                        (lambda: replay_path(log), (by_line,))):
        try:
            read()
        except LogError as exc:  # read_log names the line; replay of Events names the event
            assert one_line(str(exc)).startswith(where)


@pytest.mark.parametrize("line, reason", [
    (b'{"id":"e","session_id":"s","ts":"2024-01-01T00:00:00Z","type":5,"actor":"a","payload":{},'
     b'"schema_version":"v1","parent_id":null}', "type is a number"),
    (b'{"id":"e","session_id":"s","ts":"2024-01-01T00:00:00Z","type":"llm.response","actor":"a",'
     b'"payload":{"usage":[1]},"schema_version":"v1","parent_id":null}', "usage is a list"),
    (b'{"id":"e","session_id":"s","ts":"2024-01-01T00:00:00Z","type":"schema.violation","actor":"a",'
     b'"payload":{"violations":"abc"},"schema_version":"v1","parent_id":null}', "violations is a string"),
])
def test_agentos_replay_names_an_event_with_wrong_types(good: Good,
                                                        line: bytes, reason: str, cli: Any) -> None:
    ws, data, _ = good
    log = ws / "sessions" / "s0001" / ".events.jsonl"
    log.write_bytes(data + line + b"\n")
    try:
        code, _, err = cli("--workspace", ws, "replay", "s0001")
    finally:
        log.write_bytes(data)
    assert code == 2 and error_line(err).startswith(f"agentos: error: {log}:33: "), reason


@fuzz(150)
@given(actor=nasty_text, payload=json_values, parent=st.none() | nasty_text,
       chain=st.text(alphabet="0123456789abcdef", min_size=64, max_size=64))
def test_the_chain_splice_is_the_canonical_line(actor: str, payload: Any, parent: str | None,
                                                chain: str) -> None:
    """SessionLog writes with_chain(canonical(body), ...) instead of encoding the event a
    second time: it must be the very bytes `canonical` gives for the event with its chain."""
    event = Event(id="e1", session_id="s1", ts="2026-01-01T00:00:00.000Z", type="t",
                  actor=actor, payload=payload, parent_id=parent, seq=1, chain=chain)
    body = event.to_dict()
    del body["chain"]
    try:
        encoded = canonical(body)
    except TypeError:  # an integer orjson cannot write: no event holds one
        assume(False)
    assert with_chain(encoded, actor, chain) == canonical(event.to_dict())


def test_the_trusted_constructor_knows_every_field_of_event() -> None:
    """Event.trusted fills __dict__ from the dict it is given: a field added to Event and
    not to FIELD_NAMES would leave events without it (AttributeError far from here)."""
    assert tuple(f.name for f in dataclasses.fields(Event)) == FIELD_NAMES


@fuzz(150)
@given(actor=nasty_text, payload=json_values, parent=st.none() | nasty_text,
       seq=st.none() | st.integers(1, 10**6), chain=st.none() | st.text(max_size=64))
def test_a_trusted_event_is_the_event_the_checked_constructor_makes(
        actor: str, payload: Any, parent: str | None, seq: int | None, chain: str | None) -> None:
    """The session log and the log reader build events with Event.trusted (no frozen
    __init__): equal, same hash, same repr, still frozen, read back from its own line."""
    fields = {"id": "e1", "session_id": "s1", "ts": "2026-01-01T00:00:00.000Z", "type": "t",
              "actor": actor, "payload": payload, "schema_version": "v1", "parent_id": parent,
              "seq": seq, "chain": chain}
    checked = Event(**fields)
    fast = Event.trusted(dict(fields))
    assert fast == checked and repr(fast) == repr(checked)
    assert dataclasses.asdict(fast) == dataclasses.asdict(checked)
    with pytest.raises(dataclasses.FrozenInstanceError):
        fast.actor = "someone else"  # type: ignore[misc]
    try:
        line = canonical(fast.to_dict())
    except TypeError:  # an integer orjson cannot write: no event holds one
        return
    assert Event.from_dict(json.loads(line)) == checked

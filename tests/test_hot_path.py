"""The request's hot path does the same work by quicker means (issue 24): each faster form is
compared with the form it replaces, on generated values, so a change to either shows here.
Speed itself is measured in bench/ (bench_floor.py), never in a test."""

from __future__ import annotations

import dataclasses
import json
import os
import re
from datetime import datetime
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentos_kernel import Runtime
from agentos_kernel.clock import CounterIds, LogicalClock
from agentos_kernel.errors import InvariantViolation
from agentos_kernel.hooks import bus
from agentos_kernel.hooks.bus import HookDecision
from agentos_kernel.providers.base import CompletionRequest, CompletionResponse, Usage
from agentos_kernel.providers.frozen_init import GENERATED, quick_init
from agentos_kernel.schemas import jsontext
from agentos_kernel.schemas.registry import Violation
from agentos_kernel.store.events import Event, canonical, chain_of
from agentos_kernel.store.jsonl import JsonlEventStore
from agentos_kernel.store.recorder import SessionLog
from agentos_kernel.store.redaction import Redactor

from .fuzz import fuzz
from .redaction_canaries import PII_CANARIES, SECRET_CANARIES

_CANARIES = [c.text for c in (*SECRET_CANARIES, *PII_CANARIES)]
_TEXT = st.one_of(st.text(), st.sampled_from(_CANARIES),
                  st.builds(lambda a, c, b: f"{a}{c}{b}", st.text(max_size=5),
                            st.sampled_from(_CANARIES), st.text(max_size=5)),
                  st.sampled_from(["password", "api_key", "token", "Authorization", "name"]))
_SCALAR = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), _TEXT)
_VALUE: st.SearchStrategy[Any] = st.recursive(
    _SCALAR, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                     st.tuples(inner, inner),
                                     st.dictionaries(_TEXT, inner, max_size=4)),
    max_leaves=20)


def _same(a: Any, b: Any) -> bool:
    """Equal and of the same types all the way down (1 == 1.0 == True is not enough; NaN
    is the same as NaN)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return a == b or (a != a and b != b)


@fuzz(300)
@given(value=_VALUE, secrets=st.lists(st.sampled_from(["Ada", "sk-", "1234"]), max_size=2),
       pattern=st.booleans(), pii=st.lists(st.sampled_from(["email", "phone"]), max_size=2))
def test_a_bound_redactor_redacts_exactly_as_the_redactor(
        value: Any, secrets: list[str], pattern: bool, pii: list[str]) -> None:
    redactor = Redactor.of(secrets, [re.compile("greet")] if pattern else [], pii)
    assert _same(redactor.bound()(value), redactor(value))


@fuzz(300)
@given(value=_VALUE, ensure_ascii=st.booleans(), sort_keys=st.booleans())
def test_jsontext_dumps_is_the_stdlib_text(value: Any, ensure_ascii: bool, sort_keys: bool) -> None:
    try:
        want: str | type[Exception] = json.dumps(value, ensure_ascii=ensure_ascii, sort_keys=sort_keys)
    except (TypeError, ValueError) as exc:
        want = type(exc)
    try:
        got: str | type[Exception] = jsontext.dumps(value, ensure_ascii=ensure_ascii,
                                                    sort_keys=sort_keys)
    except (TypeError, ValueError) as exc:
        got = type(exc)
    assert got == want


def test_jsontext_dumps_refuses_what_json_refuses() -> None:
    looped: dict[str, Any] = {}
    looped["self"] = looped
    for bad in (looped, {1: object()}, {"a": {1, 2}}):
        for ascii_ in (True, False):
            try:
                json.dumps(bad, ensure_ascii=ascii_)
            except (TypeError, ValueError) as exc:
                want = (type(exc), str(exc))
            try:
                jsontext.dumps(bad, ensure_ascii=ascii_)
            except (TypeError, ValueError) as exc:
                assert (type(exc), str(exc)) == want
            else:
                raise AssertionError(f"{bad!r} was encoded")


def test_jsontext_dumps_after_a_refusal_and_beside_another_call() -> None:
    """The held C encoder keeps its circular-reference markers between calls: a call that
    raised must not leave one behind (the next value holding that object would be refused
    as a cycle), and a call made while the held encoder is busy (another thread) gets a
    fresh one: the same text either way."""
    shared: list[Any] = [1, {"a": [2.5, None]}]
    looped: dict[str, Any] = {"ok": shared}
    looped["self"] = looped
    for ascii_ in (True, False):
        for sort in (True, False):
            with pytest.raises(ValueError, match="Circular reference"):
                jsontext.dumps(looped, ensure_ascii=ascii_, sort_keys=sort)
            with pytest.raises(TypeError):
                jsontext.dumps({"x": shared, "y": object()}, ensure_ascii=ascii_, sort_keys=sort)
            want = json.dumps({"z": shared}, ensure_ascii=ascii_, sort_keys=sort)
            assert jsontext.dumps({"z": shared}, ensure_ascii=ascii_, sort_keys=sort) == want
            held = jsontext._HELD[ascii_, sort]
            assert not held.markers
            with held.busy:  # another caller has it
                assert jsontext.dumps({"z": shared}, ensure_ascii=ascii_, sort_keys=sort) == want


def test_a_released_log_is_not_removed_but_an_empty_claim_is(tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    tried: list[str] = []
    real = os.rmdir
    monkeypatch.setattr(os, "rmdir", lambda p: (tried.append(os.fspath(p)), real(p))[1])
    store = JsonlEventStore(tmp_path / "sessions")
    store.create("empty")
    store.close("empty")  # claimed, nothing written: the folder goes
    assert tried == [os.fspath(tmp_path / "sessions" / "empty")]
    assert not (tmp_path / "sessions" / "empty").exists()
    store.create("s1")
    store.append(Event("s1-e0001", "s1", "2026-01-01T00:00:00.000Z", "session.start", "user", {}))
    store.close("s1")  # it holds its log: no removal is tried
    assert len(tried) == 1 and store.exists("s1")


_NUMBER = st.from_regex(r"-?(0|[1-9][0-9]{0,24})(\.[0-9]{1,22})?([eE][-+]?[0-9]{1,3})?", fullmatch=True)
_JSON_TEXT = st.one_of(
    _VALUE.map(lambda v: json.dumps(v, ensure_ascii=False)),  # NaN, big ints, nesting
    _VALUE.map(json.dumps),
    _NUMBER, _NUMBER.map(lambda n: f'{{"n": [{n}, "{n}"]}}'),
    st.floats().map(repr), st.text(max_size=30),
    st.sampled_from(['{"a": 1, "a": 2}', "[1,]", "\ufeff[]", '"\\ud800"', '"\ud800"', "[" * 1100,
                     "NaN", "-Infinity", "-0", "1e400", "18446744073709551616", " [1] ", "0123"]),
)


def _read(read: Any, text: str) -> Any:
    try:
        return ("ok", read(text))
    except (ValueError, RecursionError) as exc:  # JSONDecodeError is a ValueError
        return (type(exc), str(exc))


@fuzz(400)
@given(text=_JSON_TEXT)
def test_jsontext_loads_reads_what_json_reads(text: str) -> None:
    got, want = _read(jsontext.loads, text), _read(json.loads, text)
    assert got[0] == want[0] and (_same(got[1], want[1]) if got[0] == "ok" else got == want)


_DECISION_TEXT = st.one_of(st.sampled_from(["allow", "deny", "transform", "maybe", ""]),
                           st.text(max_size=3), st.just("deny\ud800"))
_REASON = st.one_of(st.none(), st.just(""), st.text(max_size=20), st.just("x" * 1200),
                    st.just("why \udcff"))


@fuzz(200)
@given(decision=_DECISION_TEXT, reason=_REASON)
def test_a_decision_object_is_judged_as_the_same_fields_in_a_dict(
        runtime: Runtime, decision: str, reason: str | None) -> None:
    """bus._as_decision's fast path for a HookDecision of text fields gives what the general
    path gives for the same fields as a mapping (the handler's own object when unchanged)."""
    log = SimpleNamespace(schemas=runtime.schemas)
    fields = {"decision": decision} if reason is None else {"decision": decision, "reason": reason}
    assert bus._as_decision(HookDecision(decision, reason), log) == bus._as_decision(fields, log)


def _old_line(prev: str | None, event: Event) -> tuple[str, bytes]:
    """The chain and the stored line as SessionLog made them before issue 24's session 3:
    `chain_of` the event, and `canonical` of the event with it."""
    chain = chain_of(prev, event)
    return chain, canonical({**event.to_dict(), "chain": chain})


@fuzz(150)
@given(steps=st.lists(st.tuples(st.sampled_from(["user", "system", "hook:(none)", 'a"\\\n\u00e9']) | _TEXT,
                                st.booleans(), _TEXT), min_size=1, max_size=6))
def test_the_session_log_writes_the_lines_and_chain_of_the_old_form(
        runtime: Runtime, tmp_path_factory: pytest.TempPathFactory,
        steps: list[tuple[str, bool, str]]) -> None:
    """SessionLog.append with its per-session validators, line heads and chain bytes: each
    stored line is `canonical` of the event with `chain_of` its predecessor, read back equal."""
    store = JsonlEventStore(tmp_path_factory.mktemp("log"))
    log = SessionLog(store, runtime.schemas, LogicalClock(), CounterIds(), "s1")
    prev, written = None, []
    for actor, ok, reason in steps:
        try:
            event = log.append("session.close", actor, {"ok": ok, "reason": reason})
        except InvariantViolation:  # text no log can hold: refused before anything is written
            assert log.seq == len(written)
            continue
        chain, line = _old_line(prev, event)
        assert event.chain == chain and event.seq == len(written) + 1
        prev = chain
        written.append(line)
    log.close()
    stored = list(store.lines("s1")) if written else []
    assert stored == [line + b"\n" for line in written]


def test_the_session_log_refuses_what_the_schema_refuses(runtime: Runtime, tmp_path: Path) -> None:
    """The validator looked up once per event type still refuses, with `violations`'
    message; a value that is not JSON and an unknown type are refused too; nothing written."""
    log = SessionLog(JsonlEventStore(tmp_path), runtime.schemas, LogicalClock(), CounterIds(), "s1")
    for payload in ({"ok": "yes"}, {"ok": True, "extra": 1}, {"ok": True, "reason": datetime.now()}):
        want = runtime.schemas.violations(payload, "event_session_close_v1")[0]
        with pytest.raises(InvariantViolation, match=re.escape(f"{want.path}: {want.message}")):
            log.append("session.close", "system", payload)
        log.append("session.close", "system", {"ok": True})  # the validator, cached, says yes
    with pytest.raises(InvariantViolation, match="no payload schema"):
        log.append("no.such.type", "system", {})
    assert log.seq == 3
    # a registry swapped in mid-session (tools/mcp_serve.py's refresh) is the one asked next
    log.schemas = SimpleNamespace(validity=lambda schema_id: lambda payload: False,  # type: ignore[assignment]
                                  violations=lambda payload, schema_id: [Violation("/", "refused")])
    with pytest.raises(InvariantViolation, match="/: refused"):
        log.append("session.close", "system", {"ok": True})


_FIELD = st.one_of(st.none(), st.integers(), st.floats(allow_nan=False), _TEXT,
                   st.tuples(st.dictionaries(_TEXT, _TEXT, max_size=2)),
                   st.dictionaries(_TEXT, st.integers(), max_size=2))


def _made(init: Any, cls: type, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    try:
        value = object.__new__(cls)
        init(value, *args, **kwargs)
    except TypeError as exc:
        return ("TypeError", str(exc))
    try:
        hashed: Any = hash(value)
    except TypeError as exc:
        hashed = str(exc)
    return (value, repr(value), hashed, list(vars(value).items()))


@fuzz(200)
@given(which=st.sampled_from([Usage, CompletionRequest, CompletionResponse]),
       values=st.lists(_FIELD, max_size=10), named=st.integers(0, 10),
       extra=st.sampled_from([{}, {"nope": 1}]))
def test_a_quick_init_makes_what_the_dataclass_init_makes(
        which: type, values: list[Any], named: int, extra: dict[str, Any]) -> None:
    """frozen_init.quick_init: the same value (equal, repr, hash, fields in order) or the
    same TypeError as the __init__ dataclasses generated, for any arguments; still frozen."""
    names = [f.name for f in dataclasses.fields(which)]
    args, kwargs = tuple(values[:named]), dict(zip(names[named:], values[named:], strict=False))
    kwargs.update(extra)
    assert _made(which.__init__, which, args, kwargs) == _made(GENERATED[which], which, args, kwargs)
    assert which.__init__ is not GENERATED[which]


def test_quick_init_refuses_a_class_it_cannot_make() -> None:
    @dataclasses.dataclass(frozen=True)
    class Listed:
        items: list[int] = dataclasses.field(default_factory=list)

    @dataclasses.dataclass(frozen=True)
    class Checked:
        n: int

        def __post_init__(self) -> None:
            assert self.n > 0

    for cls in (Listed, Checked):
        with pytest.raises(TypeError, match="needs the __init__ dataclasses makes"):
            quick_init(cls)
    with pytest.raises(dataclasses.FrozenInstanceError):
        Usage(1, 2).cost_usd = 1.0  # type: ignore[misc]


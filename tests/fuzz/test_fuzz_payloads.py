"""Schema payloads: random JSON, and Python values no JSON schema can check (bytes, dates,
sets, int keys, lone surrogates, cycles, alias-bomb graphs, deep nesting), against every
schema id. `SchemaRegistry.validate` never raises: Ok, or Err naming the schema id and the
path in one line. Through a session's log (`SessionLog.check`) each Err is a logged
`schema.violation` and the log still verifies and replays."""

from __future__ import annotations

import datetime
import decimal
import tracemalloc
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from agentos_kernel import Err, Ok, Runtime
from agentos_kernel.schemas.registry import SchemaRegistry
from agentos_kernel.store.events import read_log, verify_chain
from agentos_kernel.store.replay.fold import replay
from agentos_kernel.workspace import reference_dir

from . import fuzz, one_line
from .strategies import json_values, nasty_text

SCHEMAS = SchemaRegistry.load(reference_dir() / "schemas")
IDS = SCHEMAS.ids()
MAX_PEAK_BYTES = 64 << 20


def _cycle() -> list[Any]:
    loop: list[Any] = []
    loop.append(loop)
    return loop


def _bomb(fanout: int, depth: int) -> Any:
    value: Any = "lol"
    for _ in range(depth):
        value = [value] * fanout  # shared references, as YAML aliases build them
    return value


def _deep(n: int) -> Any:
    value: Any = 1
    for _ in range(n):
        value = {"a": [value]}
    return value


ODD = (b"bytes", bytearray(b"x"), datetime.date(2024, 1, 1), datetime.datetime(2024, 1, 1), {1, 2},
       frozenset(), decimal.Decimal("1.1"), complex(1, 2), object(), float("nan"), float("inf"),
       "\ud800", 2**100, -(2**100), ...)

class Built:
    """A payload built once per example, shown by its recipe: hypothesis reprs its arguments,
    and the repr of a bomb is the bomb expanded."""

    def __init__(self, label: str, value: Any) -> None:
        self.label, self.value = label, value

    def __repr__(self) -> str:
        return self.label


hostile = st.one_of(
    st.sampled_from(ODD),
    st.builds(lambda: Built("cycle", _cycle())),
    st.tuples(st.integers(2, 10), st.integers(2, 9)).map(lambda t: Built(f"bomb{t}", _bomb(*t))),
    st.integers(10, 5000).map(lambda n: Built(f"deep({n})", _deep(n))),
    st.dictionaries(st.integers() | st.none() | st.booleans(), json_values, min_size=1, max_size=3),
)


def _embedded(draw: st.DrawFn) -> Built:
    """A random JSON object with one hostile value somewhere in it."""
    base = draw(st.dictionaries(nasty_text, json_values, max_size=4))
    keys = sorted(base, key=repr)
    key, value = draw(nasty_text), draw(hostile)
    shown = f"{{{', '.join(f'{k!r}: ...' for k in keys if k != key)}, {key!r}: {value!r:.80}}}"
    base[key] = _value(value)
    return Built(shown, base)


def _value(payload: Any) -> Any:
    return payload.value if isinstance(payload, Built) else payload


payloads = st.one_of(json_values, st.dictionaries(nasty_text, json_values, max_size=6), hostile,
                     st.composite(_embedded)())


def _check(result: Ok | Err, payload: Any, schema_id: str) -> None:
    if isinstance(result, Ok):
        assert result.value is payload
    else:
        assert result.error.code == "SCHEMA_INVALID"
        assert one_line(result.error.message).startswith(f"{schema_id}: /")


@fuzz(400)
@given(payload=payloads, schema_id=st.sampled_from(IDS))
@example(payload=Built("bomb(9, 9)", _bomb(9, 9)), schema_id="plan_v1")
@example(payload=Built("cycle", _cycle()), schema_id="worker_report_v1")
@example(payload=Built("deep(10000)", {"output": _deep(10_000)}), schema_id="worker_report_v1")
def test_validate_is_ok_or_an_err_naming_the_path_for_any_payload(payload: Any, schema_id: str) -> None:
    if not isinstance(payload, Built):
        _check(SCHEMAS.validate(payload, schema_id), payload, schema_id)
        return
    payload = payload.value  # a bomb, a cycle, deep nesting: memory is measured too
    tracemalloc.start()
    try:
        result = SCHEMAS.validate(payload, schema_id)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    _check(result, payload, schema_id)
    assert peak < MAX_PEAK_BYTES, f"{peak >> 20} MB"


@pytest.fixture
def runtime_for_checks(workspace: Path) -> Runtime:
    return Runtime.from_workspace(workspace)


@fuzz(40)
@given(checks=st.lists(st.tuples(payloads, st.sampled_from(IDS)), min_size=1, max_size=5))
def test_a_checked_payload_is_logged_as_a_violation_and_the_log_stays_whole(
        runtime_for_checks: Runtime, checks: list[tuple[Any, str]]) -> None:
    session = runtime_for_checks.start_session("fuzz the schema boundary")
    log = session.log
    errs = 0
    try:
        for built, schema_id in checks:
            payload = _value(built)
            result = log.check(payload, schema_id, where="fuzz", actor="worker")
            _check(result, payload, schema_id)
            errs += isinstance(result, Err)
    finally:
        log.close()
    events = list(read_log(runtime_for_checks.store.path(session.session_id)))
    assert verify_chain(events) is None
    assert sum(e.type == "schema.violation" for e in events) == errs
    assert len(replay(events).schema_violations) == errs

"""CEL signals: random, huge and deeply nested expressions compile to a Signal or a Problem
naming the file and field (one line; never a RecursionError or a hang); a compiled signal
over any JSON context evaluates to Ok or Err (a deny), never an exception; the process-wide
recursion limit is left as it was."""

from __future__ import annotations

import sys
import tracemalloc
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from agentos_kernel import Err, Ok, Problem
from agentos_kernel.workflows.policy import SIGNAL_NAMES
from agentos_kernel.workflows.signals import MAX_EXPR_CHARS, Signal, compile_signal, evaluate

from . import fuzz, one_line
from .cel import cel_sources, expressions, pathological
from .strategies import json_values

ALLOWED = SIGNAL_NAMES | {"finding", "f"}
MAX_PEAK_BYTES = 64 << 20


def _compile(source: Any) -> Signal | Problem:
    limit = sys.getrecursionlimit()
    got = compile_signal(source, allowed=ALLOWED, file="workflows/phases/x.md", field="advance_signal")
    assert sys.getrecursionlimit() == limit
    if isinstance(got, Problem):
        assert (got.file, got.field) == ("workflows/phases/x.md", "advance_signal")
        one_line(got.message)
    else:
        assert got.where == "workflows/phases/x.md: advance_signal"
    return got


@fuzz(300)
@given(source=cel_sources)
def test_any_expression_compiles_or_is_a_problem_naming_the_field(source: str) -> None:
    got = _compile(source)
    if len(source) > MAX_EXPR_CHARS:
        assert isinstance(got, Problem) and "characters" in got.message


@fuzz(60)
@given(source=pathological())
def test_pathological_expressions_are_refused_in_bounded_memory(source: str) -> None:
    tracemalloc.start()
    try:
        got = _compile(source)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < MAX_PEAK_BYTES, f"{peak >> 20} MB to compile {source[:40]!r}..."
    if isinstance(got, Signal):  # whatever compiles also evaluates without raising
        assert isinstance(evaluate(got, {"generation": 1}), Ok | Err)


@fuzz(40)
@given(source=st.sampled_from([1, 1.5, None, [], {}, b"x", True]) | st.just(""))
def test_a_signal_that_is_not_a_string_is_a_problem(source: Any) -> None:
    assert isinstance(_compile(source), Problem)


@fuzz(250)
@given(source=expressions(), context=st.dictionaries(st.sampled_from(sorted(ALLOWED)), json_values,
                                                      max_size=6))
def test_a_compiled_signal_evaluates_to_ok_or_a_deny_over_any_context(source: str,
                                                                    context: dict[str, Any]) -> None:
    got = _compile(source)
    if isinstance(got, Problem):
        return
    result = evaluate(got, context)
    assert isinstance(result, Ok | Err)
    if isinstance(result, Err):
        one_line(result.error.message)
        assert result.error.message.startswith("workflows/phases/x.md: advance_signal: ")


@fuzz(40)
@given(context=st.one_of(
    st.integers(1, 60).map(lambda n: {"artifacts": _nest(n)}),
    st.integers(500, 5000).map(lambda n: {"grades": list(range(n))}),
    st.integers(10_000, 100_000).map(lambda n: {"prompt": "x" * n}),
    st.sampled_from([{"generation": 2**64}, {"generation": float("nan")}, {"prompt": b"x"},
                     {"prompt": {1, 2}}, {1: 2}, [], "x"])))
def test_oversized_or_non_json_contexts_are_denied_not_raised(context: Any) -> None:
    signal = _compile("size(grades) > 0 || generation > 0 || size(prompt) > 0")
    assert isinstance(signal, Signal)
    result = evaluate(signal, context)
    assert isinstance(result, Ok | Err)
    if isinstance(result, Err):
        one_line(result.error.message)


def _nest(n: int) -> Any:
    value: Any = 1
    for _ in range(n):
        value = {"a": value}
    return value

"""Signals are CEL over the phase context and nothing else: Python-style escapes, unknown
names, unknown functions and oversized input are refused; evaluation is deterministic and
every evaluation error is a deny. Property-based over generated expressions and contexts."""

from __future__ import annotations

import keyword
import string
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentos_kernel import Err, ErrorCode, Ok, Problem
from agentos_kernel.workflows import signals as sg
from agentos_kernel.workflows.fanout import FanOut
from agentos_kernel.workflows.policy import KIND_NAMES, SIGNAL_NAMES
from agentos_kernel.workflows.signals import Signal, compile_signal, evaluate, evaluate_bool

NAMES = frozenset({"review_aggregate", "generation", "grades", "prompt", "artifacts"})
CEL_WORDS = {"true", "false", "null", "in", "as", "break", "const", "continue", "else", "for", "function",
             "if", "import", "let", "loop", "package", "namespace", "return", "var", "void", "while"}
SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def compiled(src: str, names: frozenset[str] = NAMES) -> Signal:
    got = compile_signal(src, allowed=names, file="phases/x.md", field="advance_signal")
    assert isinstance(got, Signal), got
    return got


def refused(src: str, names: frozenset[str] = NAMES) -> str:
    got = compile_signal(src, allowed=names, file="phases/x.md", field="advance_signal")
    assert isinstance(got, Problem), f"{src!r} was accepted"
    assert got.file == "phases/x.md" and got.field == "advance_signal"
    return got.message


identifiers = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,12}", fullmatch=True).filter(
    lambda s: s not in CEL_WORDS)


# -- static refusal -----------------------------------------------------------------------
@SETTINGS
@given(name=identifiers.filter(lambda s: s not in NAMES))
def test_any_name_outside_the_context_is_refused(name: str) -> None:
    assert f"unknown name {name!r}" in refused(f"{name} == 1")
    assert f"unknown name {name!r}" in refused(f"generation > 0 && {name}.field == 'x'")


@SETTINGS
@given(fn=identifiers.filter(lambda s: s not in sg.FUNCTIONS), arg=st.sampled_from(["1", "'os'", "prompt"]))
def test_any_function_outside_the_allow_list_is_refused(fn: str, arg: str) -> None:
    assert f"unknown function {fn!r}" in refused(f"{fn}({arg}) == 1")


@SETTINGS
@given(method=identifiers.filter(lambda s: s not in sg.METHODS))
def test_any_method_outside_the_allow_list_is_refused(method: str) -> None:
    assert f"unknown method {method!r}" in refused(f"prompt.{method}('x')")


PYTHON_ESCAPES = [
    "__import__('os').system('rm -rf /')", "eval('1+1') == 2", "exec('x=1')", "open('/etc/passwd')",
    "getattr(prompt, '__class__')", "globals()", "locals()", "vars()", "dir()", "compile('1','f','eval')",
    "breakpoint()", "type(prompt) == string", "prompt.__class__", "review_aggregate.__dict__",
    "prompt.matches('(a+)+$')", "prompt.format('x')", "generation.__add__(1)", "os.system('x')",
    "sys.modules", "google.protobuf.Struct{}", "timestamp('2020-01-01T00:00:00Z')", ".os.system",
]


@pytest.mark.parametrize("src", PYTHON_ESCAPES)
def test_python_style_escapes_are_refused_at_load(src: str) -> None:
    refused(src)


@SETTINGS
@given(src=st.sampled_from(PYTHON_ESCAPES),
       left=st.sampled_from(["true", "generation > 1", "size(grades) == 0"]),
       op=st.sampled_from(["&&", "||"]))
def test_an_escape_hidden_in_a_larger_expression_is_still_refused(src: str, left: str, op: str) -> None:
    refused(f"{left} {op} ({src})")
    refused(f"grades.exists(g, {src})")


@SETTINGS
@given(n=st.integers(min_value=sg.MAX_EXPR_CHARS + 1, max_value=sg.MAX_EXPR_CHARS * 4))
def test_oversized_expressions_are_refused(n: int) -> None:
    src = ("generation == 1 || " * (n // 19 + 1))[:n].rstrip("| ") + " || true"
    assert len(src) > sg.MAX_EXPR_CHARS
    assert "characters; at most" in refused(src)


@SETTINGS
@given(depth=st.integers(min_value=30, max_value=400))
def test_deep_nesting_is_refused_not_crashed(depth: int) -> None:
    refused("(" * depth + "generation" + ")" * depth + " == 1")


def test_nested_comprehensions_are_refused() -> None:
    assert "inside another comprehension" in refused("grades.exists(a, grades.exists(b, a < b))")


def test_macro_variables_are_local_to_their_macro() -> None:
    compiled("grades.all(g, g >= 0)")
    assert "unknown name 'g'" in refused("grades.all(g, g >= 0) && g > 1")


def test_context_names_are_exactly_what_the_engine_provides() -> None:
    """The compile-time allow-list and the runtime context agree: a signal can never name
    something that is not there, nor reach anything that is."""

    class _Log:
        pass

    class _Session:
        log = _Log()

    class _Cycle:
        id = "c"

    fan = FanOut(None, _Session(), _Cycle(), "p", "interactive")  # type: ignore[arg-type]
    assert set(fan.context()) == SIGNAL_NAMES
    for names in KIND_NAMES.values():
        assert names.isdisjoint(SIGNAL_NAMES)


# -- evaluation ---------------------------------------------------------------------------
json_scalars = st.one_of(st.none(), st.booleans(), st.integers(-(2**40), 2**40),
                         st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=20))
json_values = st.recursive(json_scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=4),
    st.dictionaries(st.text(string.ascii_lowercase, max_size=6), inner, max_size=4)),
    max_leaves=20)
contexts = st.fixed_dictionaries({}, optional={n: json_values for n in NAMES})

atoms = st.one_of(
    st.sampled_from(["generation", "grades", "prompt", "review_aggregate", "artifacts",
                     "review_aggregate.p0_unresolved", "artifacts.pulse.grade", "size(grades)",
                     "grades[0]", "prompt.startsWith('a')", "has(review_aggregate.findings)",
                     "grades.exists(g, g > 50)", "grades.all(g, g >= 0)", "int('7')", "string(generation)"]),
    st.integers(-1000, 1000).map(str),
    st.text(string.ascii_letters, max_size=8).map(lambda s: f"'{s}'"),
    st.sampled_from(["true", "false", "null", "[1, 2]", "{'a': 1}"]),
)
expressions = st.recursive(atoms, lambda inner: st.one_of(
    st.tuples(inner, st.sampled_from(["==", "!=", "<", "<=", ">", ">=", "&&", "||", "+", "-", "*", "/",
                                      "%", "in"]), inner).map(lambda t: f"({t[0]} {t[1]} {t[2]})"),
    inner.map(lambda e: f"!({e})"),
    st.tuples(inner, inner, inner).map(lambda t: f"({t[0]} ? {t[1]} : {t[2]})"),
), max_leaves=6)


def _is_json(value: Any) -> bool:
    if isinstance(value, dict):
        return all(isinstance(k, str) and _is_json(v) for k, v in value.items())
    if isinstance(value, list):
        return all(_is_json(v) for v in value)
    return value is None or isinstance(value, bool | int | float | str)


@SETTINGS
@given(src=expressions, ctx=contexts)
def test_evaluation_is_total_deterministic_and_json(src: str, ctx: dict[str, Any]) -> None:
    sig = compile_signal(src, allowed=NAMES, file="f.md", field="advance_signal")
    if isinstance(sig, Problem):  # e.g. a macro nested by the generator: refused, not crashed
        return
    first, second = evaluate(sig, ctx), evaluate(sig, ctx)
    assert first == second
    if isinstance(first, Ok):
        assert _is_json(first.value)
    else:
        assert first.error.code == ErrorCode.GATE_DENIED and "denied (fail-closed)" in first.error.message


@SETTINGS
@given(ctx=contexts)
def test_a_missing_name_or_field_is_a_deny_never_a_default(ctx: dict[str, Any]) -> None:
    ctx = {k: v for k, v in ctx.items() if k != "review_aggregate"}
    got = evaluate_bool(compiled("review_aggregate.p0_unresolved == 0"), ctx)
    assert isinstance(got, Err) and got.error.code == ErrorCode.GATE_DENIED
    got = evaluate_bool(compiled("review_aggregate.p0_unresolved == 0"), {**ctx, "review_aggregate": {}})
    assert isinstance(got, Err)


@SETTINGS
@given(value=json_values)
def test_a_non_boolean_signal_is_a_deny(value: Any) -> None:
    got = evaluate_bool(compiled("generation"), {"generation": value})
    if isinstance(value, bool):
        assert got == Ok(value)
    else:
        assert isinstance(got, Err)


OVERSIZED = [
    {"prompt": "x" * (sg.MAX_STRING_CHARS + 1)},
    {"grades": list(range(sg.MAX_LIST_ITEMS + 1))},
    {"artifacts": {f"k{i}": i for i in range(sg.MAX_LIST_ITEMS + 1)}},
    {"generation": 2**70},
    {"prompt": object()},
    {"grades": [print]},
    {"review_aggregate": {1: "non-string key"}},
]


def _deep(n: int) -> Any:
    v: Any = 1
    for _ in range(n):
        v = [v]
    return v


@pytest.mark.parametrize("ctx", [*OVERSIZED, {"grades": _deep(sg.MAX_CONTEXT_DEPTH + 2)}],
                         ids=lambda c: next(iter(c)) if isinstance(c, dict) else str(c))
def test_oversized_or_non_json_contexts_are_denied(ctx: dict[str, Any]) -> None:
    got = evaluate(compiled("true"), ctx)
    assert isinstance(got, Err) and "denied (fail-closed)" in got.error.message


@SETTINGS
@given(n=st.integers(min_value=sg.MAX_LIST_ITEMS + 1, max_value=4 * sg.MAX_LIST_ITEMS),
       s=st.integers(min_value=sg.MAX_STRING_CHARS + 1, max_value=2 * sg.MAX_STRING_CHARS))
def test_generated_oversized_contexts_are_denied(n: int, s: int) -> None:
    sig = compiled("size(grades) >= 0")
    assert isinstance(evaluate(sig, {"grades": [0] * n}), Err)
    assert isinstance(evaluate(compiled("size(prompt) >= 0"), {"prompt": "p" * s}), Err)
    assert evaluate(sig, {"grades": [0] * sg.MAX_LIST_ITEMS}) == Ok(True)


def test_the_specs_example_signal() -> None:
    sig = compiled("review_aggregate.p0_unresolved == 0")
    assert sig.names == {"review_aggregate"}
    assert evaluate_bool(sig, {"review_aggregate": {"p0_unresolved": 0}}) == Ok(True)
    assert evaluate_bool(sig, {"review_aggregate": {"p0_unresolved": 2}}) == Ok(False)


def test_evaluation_errors_deny() -> None:
    for src in ("generation / 0 == 1", "grades[5] == 1", "int('x') == 1", "prompt + 1 == 2"):
        got = evaluate_bool(compiled(src), {"generation": 1, "grades": [], "prompt": "p"})
        assert isinstance(got, Err), src


def test_python_keywords_are_just_unknown_names() -> None:
    for word in ("lambda", "def", "class", "yield", "global", "nonlocal"):
        assert word in keyword.kwlist
        refused(f"{word} == 1")

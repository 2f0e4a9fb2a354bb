"""A CEL-ish expression strategy: well-formed expressions over the signal names, mutated ones,
and pathological ones (deeply nested, huge, long strings, macro chains)."""

from __future__ import annotations

from hypothesis import strategies as st

from .strategies import nasty_text

NAMES = ("review_aggregate", "artifacts", "completed", "generation", "finding", "phase", "mode",
         "persona", "unknown_name", "__class__", "f")
LITERALS = ("0", "1", "-1", "9223372036854775807", "18446744073709551615u", "1.5", "1e308", "true",
            "false", "null", "'P0'", '"x"', "b'\\x00'", "''", "[]", "{}", "[1, 2, 3]", "{'a': 1}",
            "'\\u0000'", "r'\\d+'")
BINARY = ("==", "!=", "<", "<=", ">", ">=", "&&", "||", "+", "-", "*", "/", "%", "in")
CALLS = ("size({})", "int({})", "string({})", "double({})", "bool({})", "has({}.x)", "matches({}, 'a+')",
         "timestamp({})", "dyn({})", "type({})", "{}.size()", "{}.contains('a')", "{}.startsWith('a')",
         "{}.exists(f, f.severity == 'P0')", "{}.all(x, x > 0)", "{}.map(x, x * 2)",
         "{}.filter(x, x.exists(y, y))", "{}.__class__", "{}.matches('(a+)+$')", "{}[0]", "{}['k']",
         "-{}", "!{}", "({})", "{} ? 1 : 2", "google.protobuf.Struct{{}}")


def expressions(max_leaves: int = 30) -> st.SearchStrategy[str]:
    """Random expressions built from names, literals, operators, calls and macros."""
    leaves = st.sampled_from(NAMES + LITERALS) | st.builds(
        lambda n, f: f"{n}.{f}", st.sampled_from(NAMES), st.sampled_from(
            ("findings", "p0_unresolved", "pulse", "grade", "severity", "route", "x")))
    return st.recursive(
        leaves,
        lambda kids: st.one_of(
            st.builds(lambda a, op, b: f"{a} {op} {b}", kids, st.sampled_from(BINARY), kids),
            st.builds(lambda f, a: f.format(a), st.sampled_from(CALLS), kids),
            st.lists(kids, max_size=4).map(lambda xs: "[" + ", ".join(xs) + "]")),
        max_leaves=max_leaves)


@st.composite
def pathological(draw: st.DrawFn) -> str:
    """Expressions built to hurt: deep parentheses, long strings, huge sums, macro nests."""
    n = draw(st.integers(1, 5000))
    kind = draw(st.sampled_from(["parens", "brackets", "string", "sum", "macros", "unary", "ternary"]))
    if kind == "parens":
        return "(" * n + "generation" + ")" * n
    if kind == "brackets":
        return "[" * n + "]" * n
    if kind == "string":
        return "'" + "a" * (n * 20) + "' == 'a'"
    if kind == "sum":
        return " + ".join(["1"] * n)
    if kind == "macros":
        inner = "x"
        for _ in range(min(n, 50)):
            inner = f"[1, 2].exists(x, {inner})"
        return inner
    if kind == "unary":
        return "!" * n + "true"
    return "true ? " * min(n, 400) + "1" + " : 0" * min(n, 400)


cel_sources = st.one_of(expressions(), pathological(), nasty_text, st.text(max_size=200))

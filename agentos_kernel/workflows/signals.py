"""L8 signals: advance_signal, halt_signal, exit conditions and policy `when` clauses are
CEL expressions (cel-python), compiled once at load and evaluated over a JSON context.

Why CEL: it is side-effect free, deterministic and not Turing-complete (DESIGN). On top of
what CEL already guarantees, a signal is checked statically before it is accepted:

- every top-level name must be one the evaluation site provides (`review_aggregate`,
  `finding`, ...); a variable bound by a macro (`findings.exists(f, ...)`) is local to it;
- only a short list of pure functions and methods may be called (no `matches`: Python's
  `re` can backtrack without bound); no message construction, no dunder field names;
- size bounds: the expression's length, its nesting and its comprehensions (no macro
  inside a macro: a nested comprehension over two 256-item lists takes seconds here).

Evaluation sees nothing but the context, which must be plain JSON within size bounds; any
evaluation error, or a result of the wrong type, is returned as an `Err` — the caller
denies (fail-closed).
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any

import celpy
import lark
from celpy import celtypes

from ..errors import DomainError, Err, ErrorCode, Ok, Problem, Result

# Size bounds: expression length, parse-tree depth (celpy recurses per level), macros per
# expression; values, nesting, items per list or map and characters per string of a context.
MAX_EXPR_CHARS, MAX_EXPR_DEPTH, MAX_MACROS = 1000, 200, 8
MAX_CONTEXT_NODES, MAX_CONTEXT_DEPTH, MAX_LIST_ITEMS, MAX_STRING_CHARS = 20_000, 16, 512, 16_384

MACROS = frozenset({"exists", "all", "exists_one", "map", "filter"})
FUNCTIONS = frozenset({"size", "int", "uint", "double", "string", "bool", "has"})
METHODS = frozenset({"size", "contains", "startsWith", "endsWith"}) | MACROS


@dataclass(frozen=True)
class Signal:
    """A compiled CEL expression and where it was written."""

    source: str
    """The expression as written."""
    where: str
    """`file: field`, for messages."""
    names: frozenset[str]
    """Top-level context names it reads."""
    program: Any
    """The compiled celpy program (evaluated many times, compiled once)."""

    def __str__(self) -> str:
        return self.source


@cache
def _environment() -> celpy.Environment:
    # Built on first use (≈60 ms for the grammar), never at import. celpy raises the
    # process-wide recursion limit; MAX_EXPR_DEPTH makes that unnecessary, so put it back.
    limit = sys.getrecursionlimit()
    env = celpy.Environment()
    sys.setrecursionlimit(limit)
    return env


def compile_signal(source: Any, *, allowed: Iterable[str], file: str, field: str) -> Signal | Problem:
    """Compile and check one expression; a Problem names file, field and position."""
    if not isinstance(source, str) or not source.strip():
        return Problem(file, field, "must be a non-empty CEL expression")
    if len(source) > MAX_EXPR_CHARS:
        return Problem(file, field, f"expression is {len(source)} characters; at most "
                                    f"{MAX_EXPR_CHARS} are accepted")
    try:
        tree = _environment().compile(source)
    except celpy.CELParseError as exc:
        where = _at(getattr(exc, "line", None), getattr(exc, "column", None))
        return Problem(file, field, f"CEL syntax error {where}: {_first_line(exc)} in {source!r}")
    except (RecursionError, lark.exceptions.LarkError) as exc:
        return Problem(file, field, f"CEL expression cannot be parsed ({type(exc).__name__}): "
                                    "nested too deeply or malformed")
    checker = _Checker(frozenset(allowed))
    try:
        checker.walk(tree, frozenset(), 0, 0)
    except RecursionError:
        checker.problems.append(f"expression is nested deeper than {MAX_EXPR_DEPTH} levels")
    if checker.macros > MAX_MACROS:
        checker.problems.append(f"{checker.macros} comprehension macros; at most {MAX_MACROS}")
    if checker.problems:
        return Problem(file, field, f"{checker.problems[0]} in {source!r}")
    try:
        program = _environment().program(tree)
    except Exception as exc:  # celpy rejects some trees only when building the program
        return Problem(file, field, f"CEL expression cannot be compiled: {_first_line(exc)}")
    return Signal(source, f"{file}: {field}", frozenset(checker.names), program)


class _Checker:
    """Walks a parse tree: collects top-level names and every reason to refuse it."""

    def __init__(self, allowed: frozenset[str]) -> None:
        self.allowed = allowed
        self.names: set[str] = set()
        self.problems: list[str] = []
        self.macros = 0

    def refuse(self, token: Any, message: str) -> None:
        self.problems.append(f"{_at(getattr(token, 'line', None), getattr(token, 'column', None))}: "
                             f"{message}")

    def name(self, token: Any, bound: frozenset[str]) -> None:
        name = str(token)
        if name in bound:
            return
        if name not in self.allowed:
            known = ", ".join(sorted(self.allowed))
            self.refuse(token, f"unknown name {name!r}; this signal can read: {known}")
        else:
            self.names.add(name)

    def walk(self, node: Any, bound: frozenset[str], depth: int, in_macro: int) -> None:
        if not isinstance(node, lark.Tree):
            return
        if depth > MAX_EXPR_DEPTH:
            raise RecursionError
        kind, kids = node.data, node.children
        if kind in ("ident", "dot_ident"):
            self.name(kids[0], bound)
        elif kind in ("member_object", "dot_ident_arg"):
            self.refuse(_token(node), "message construction and qualified calls are not allowed")
        elif kind == "ident_arg":
            if str(kids[0]) not in FUNCTIONS:
                self.refuse(kids[0], f"unknown function {str(kids[0])!r}; allowed: "
                                     f"{', '.join(sorted(FUNCTIONS))}")
            for k in kids[1:]:
                self.walk(k, bound, depth + 1, in_macro)
        elif kind == "member_dot":
            self.walk(kids[0], bound, depth + 1, in_macro)
            if str(kids[1]).startswith("__"):
                self.refuse(kids[1], f"field {str(kids[1])!r} is not allowed")
        elif kind == "member_dot_arg":
            self._method(kids, bound, depth, in_macro)
        else:
            for k in kids:
                self.walk(k, bound, depth + 1, in_macro)

    def _method(self, kids: list[Any], bound: frozenset[str], depth: int, in_macro: int) -> None:
        target, method = kids[0], kids[1]
        args = list(kids[2].children) if len(kids) > 2 and isinstance(kids[2], lark.Tree) else []
        self.walk(target, bound, depth + 1, in_macro)
        name = str(method)
        if name not in METHODS:
            self.refuse(method, f"unknown method {name!r}; allowed: {', '.join(sorted(METHODS))}")
            return
        if name not in MACROS:
            for a in args:
                self.walk(a, bound, depth + 1, in_macro)
            return
        self.macros += 1
        if in_macro:
            self.refuse(method, f"{name}() inside another comprehension is not allowed "
                                "(evaluation cost grows with the product of the lists)")
        var = _bare_ident(args[0]) if args else None
        if var is None:
            self.refuse(method, f"{name}() takes a variable name first, e.g. "
                                f"findings.{name}(f, f.severity == 'P0')")
            return
        for a in args[1:]:
            self.walk(a, bound | {var}, depth + 1, in_macro + 1)


def _bare_ident(node: Any) -> str | None:
    """The name when `node` is just an identifier (a macro's variable)."""
    while isinstance(node, lark.Tree):
        if node.data == "ident":
            return str(node.children[0])
        if len(node.children) != 1:
            return None
        node = node.children[0]
    return None


def _token(node: lark.Tree) -> Any:
    for tok in node.scan_values(lambda v: isinstance(v, lark.Token)):
        return tok
    return None


def _at(line: int | None, column: int | None) -> str:
    return f"at line {line}, column {column}" if line is not None else "at an unknown position"


def _first_line(exc: BaseException) -> str:
    text = str(exc.args[0] if exc.args else exc).strip()
    return (text.splitlines() or ["?"])[0][:200]


# -- evaluation ---------------------------------------------------------------------------
def check_context(context: Any) -> str | None:
    """Why `context` may not be evaluated (not plain JSON, or too big); None when it may."""
    if not isinstance(context, Mapping):
        return "the context must be a mapping of names to JSON values"
    nodes = 0
    stack: list[tuple[Any, int]] = [(context, 0)]
    while stack:
        value, depth = stack.pop()
        nodes += 1
        if nodes > MAX_CONTEXT_NODES:
            return f"the context holds more than {MAX_CONTEXT_NODES} values"
        if depth > MAX_CONTEXT_DEPTH:
            return f"the context is nested deeper than {MAX_CONTEXT_DEPTH} levels"
        if isinstance(value, Mapping):
            if len(value) > MAX_LIST_ITEMS:
                return f"a map in the context has {len(value)} keys; at most {MAX_LIST_ITEMS}"
            for k, v in value.items():
                if not isinstance(k, str) or len(k) > MAX_STRING_CHARS:
                    return "context keys must be strings of bounded length"
                stack.append((v, depth + 1))
        elif isinstance(value, list | tuple):
            if len(value) > MAX_LIST_ITEMS:
                return f"a list in the context has {len(value)} items; at most {MAX_LIST_ITEMS}"
            stack.extend((v, depth + 1) for v in value)
        elif isinstance(value, str):
            if len(value) > MAX_STRING_CHARS:
                return f"a string in the context has {len(value)} characters; at most {MAX_STRING_CHARS}"
        elif isinstance(value, bool) or value is None:
            continue
        elif isinstance(value, int):
            if not -(2**63) <= value < 2**63:
                return "an integer in the context does not fit in 64 bits"
        elif not isinstance(value, float):
            return f"the context holds a {type(value).__name__}, which is not JSON"
    return None


def evaluate(signal: Signal, context: Mapping[str, Any]) -> Result[Any]:
    """The expression's value over `context` (JSON), or an Err the caller must deny on."""
    problem = check_context(context)
    if problem:
        return _deny(signal, problem)
    try:
        activation = {k: celpy.json_to_cel(_plain(v)) for k, v in context.items()}
        value = signal.program.evaluate(activation)
    except celpy.CELEvalError as exc:
        return _deny(signal, _first_line(exc))
    except Exception as exc:  # any failure inside the evaluator is a deny, never a crash
        return _deny(signal, f"{type(exc).__name__}: {_first_line(exc)}")
    if isinstance(value, celpy.CELEvalError):
        return _deny(signal, _first_line(value))
    return Ok(_to_json(value))


def evaluate_bool(signal: Signal, context: Mapping[str, Any]) -> Result[bool]:
    """Like `evaluate`, and the value must be a boolean."""
    got = evaluate(signal, context)
    if isinstance(got, Err) or isinstance(got.value, bool):
        return got
    return _deny(signal, f"evaluated to {type(got.value).__name__} {got.value!r}, not a boolean")


def _deny(signal: Signal, why: str) -> Err:
    return Err(DomainError("gate", ErrorCode.GATE_DENIED,
                           f"{signal.where}: {signal.source!r} cannot be evaluated ({why}); "
                           "denied (fail-closed)"))


def _plain(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


def _to_json(value: Any) -> Any:
    """A celpy value as plain Python (bool before int: BoolType is an int)."""
    if isinstance(value, celtypes.BoolType | bool):
        return bool(value)
    if isinstance(value, celtypes.IntType | celtypes.UintType | int):
        return int(value)
    if isinstance(value, celtypes.DoubleType | float):
        return float(value)
    if isinstance(value, celtypes.StringType | str):
        return str(value)
    if isinstance(value, Mapping):
        return {str(k): _to_json(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_to_json(v) for v in value]
    if value is None:
        return None
    return str(value)

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
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache
from typing import Any

import celpy
import lark

from ..errors import Problem
from .activation import (
    MAX_CONTEXT_DEPTH,
    MAX_CONTEXT_NODES,
    MAX_LIST_ITEMS,
    MAX_STRING_CHARS,
    Activation,
    check_context,
    evaluate,
    evaluate_bool,
    prepare,
)
from .activation import first_line as _first_line

# Size bounds: expression length, parse-tree depth (celpy recurses per level), macros per
# expression; values, nesting, items per list or map and characters per string of a context.
# (The context's bounds live in activation.py, where contexts are checked.)
MAX_EXPR_CHARS, MAX_EXPR_DEPTH, MAX_MACROS = 1000, 200, 8

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


__all__ = ["MAX_CONTEXT_DEPTH", "MAX_CONTEXT_NODES", "MAX_LIST_ITEMS", "MAX_STRING_CHARS",
           "Activation", "Signal", "check_context", "compile_signal", "evaluate", "evaluate_bool",
           "prepare"]

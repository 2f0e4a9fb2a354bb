"""Evaluating L8 signals: a context is checked (plain JSON within size bounds) and converted
to CEL values once, in an `Activation`, and every rule that reads it shares that.

Converting the whole context for every rule made an L8 cycle quadratic in its personas: the
context holds every persona's output, and the fan-in decides on every finding with several
rules. A phase now prepares its context once (`prepare`) and gives each decision its
subject on top (`Activation.with_subject`: only the subject is checked and converted).
The bounds are the same as before, on the same whole (the context plus the subject);
anything that cannot be evaluated is an Err, which the caller denies (fail-closed).
`COUNTS` says how many contexts and subjects were converted (the regression guard's hook).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import celpy
from celpy import celtypes

from ..errors import DomainError, Err, ErrorCode, Ok, Result

if TYPE_CHECKING:
    from .signals import Signal

MAX_CONTEXT_NODES, MAX_CONTEXT_DEPTH, MAX_LIST_ITEMS, MAX_STRING_CHARS = 20_000, 16, 512, 16_384


@dataclass
class Counts:
    """Conversions done so far in this process."""

    contexts: int = 0
    """Whole contexts checked (`prepare`, and an `evaluate` given a plain mapping)."""
    subjects: int = 0
    """Subjects added on top of a prepared context."""
    names: int = 0
    """Top-level values converted to CEL (each once per context or subject)."""


COUNTS = Counts()
_MISSING = object()


class Activation:
    """A context checked once, each name converted to CEL the first time a signal reads it;
    `problem` says why it may not be evaluated."""

    __slots__ = ("base", "nodes", "plain", "problem", "values")

    def __init__(self, plain: dict[str, Any], values: dict[str, Any], nodes: int,
                 problem: str | None, base: Activation | None = None) -> None:
        self.base = base
        """The prepared context a subject was added to (None for a prepared one)."""
        self.plain = plain
        """Name -> JSON value, as given."""
        self.values = values
        """Name -> CEL value, for the names converted so far."""
        self.nodes = nodes
        """JSON values in the context (its own mapping counted once)."""
        self.problem = problem
        """None when it may be evaluated."""

    def with_subject(self, **subject: Any) -> Activation:
        """This context plus a rule's subject (finding, persona, ...), checking only the
        subject; the bounds hold for the whole, as if it had been one mapping."""
        if self.problem is not None:
            return self
        COUNTS.subjects += 1
        problem, nodes = _check(subject)
        total = self.nodes + nodes - 1  # one mapping: its root counted once
        if problem is None and total > MAX_CONTEXT_NODES:
            problem = f"the context holds more than {MAX_CONTEXT_NODES} values"
        keys = len(self.plain.keys() | subject.keys())
        if problem is None and keys > MAX_LIST_ITEMS:
            problem = f"a map in the context has {keys} keys; at most {MAX_LIST_ITEMS}"
        # A subject's own dict of conversions; the base's, filled as signals read them, is
        # read through `base` so each base name is converted once for all the subjects.
        return Activation({**self.plain, **subject}, {}, total, problem, base=self)

    def cel(self, names: frozenset[str]) -> dict[str, Any]:
        """The CEL values of the `names` this context has (a missing one is left out: celpy
        then reports it undeclared, which is a deny)."""
        return {name: self._value(name) for name in names if name in self.plain}

    def _value(self, name: str) -> Any:
        if name not in self.values:
            if self.base is not None and self.base.plain.get(name, _MISSING) is self.plain[name]:
                return self.base._value(name)  # converted once for every subject
            COUNTS.names += 1
            self.values[name] = celpy.json_to_cel(_plain(self.plain[name]))
        return self.values[name]


def prepare(context: Mapping[str, Any]) -> Activation:
    """Check a whole context once (per phase, not per rule); names convert on first read."""
    COUNTS.contexts += 1
    problem, nodes = _check(context)
    return Activation(dict(context) if problem is None else {}, {}, nodes, problem)


def check_context(context: Any) -> str | None:
    """Why `context` may not be evaluated (not plain JSON, or too big); None when it may."""
    return _check(context)[0]


def _check(context: Any) -> tuple[str | None, int]:
    """(why not, or None; how many JSON values it holds, its own mapping included)."""
    if not isinstance(context, Mapping):
        return "the context must be a mapping of names to JSON values", 0
    nodes = 0
    stack: list[tuple[Any, int]] = [(context, 0)]
    while stack:
        value, depth = stack.pop()
        nodes += 1
        if nodes > MAX_CONTEXT_NODES:
            return f"the context holds more than {MAX_CONTEXT_NODES} values", nodes
        if depth > MAX_CONTEXT_DEPTH:
            return f"the context is nested deeper than {MAX_CONTEXT_DEPTH} levels", nodes
        if isinstance(value, Mapping):
            if len(value) > MAX_LIST_ITEMS:
                return f"a map in the context has {len(value)} keys; at most {MAX_LIST_ITEMS}", nodes
            for k, v in value.items():
                if not isinstance(k, str) or len(k) > MAX_STRING_CHARS:
                    return "context keys must be strings of bounded length", nodes
                stack.append((v, depth + 1))
        elif isinstance(value, list | tuple):
            if len(value) > MAX_LIST_ITEMS:
                return f"a list in the context has {len(value)} items; at most {MAX_LIST_ITEMS}", nodes
            stack.extend((v, depth + 1) for v in value)
        elif isinstance(value, str):
            if len(value) > MAX_STRING_CHARS:
                return (f"a string in the context has {len(value)} characters; at most "
                        f"{MAX_STRING_CHARS}", nodes)
        elif isinstance(value, bool) or value is None:
            continue
        elif isinstance(value, int):
            if not -(2**63) <= value < 2**63:
                return "an integer in the context does not fit in 64 bits", nodes
        elif not isinstance(value, float):
            return f"the context holds a {type(value).__name__}, which is not JSON", nodes
    return None, nodes


def evaluate(signal: Signal, context: Mapping[str, Any] | Activation) -> Result[Any]:
    """The expression's value over `context` (JSON, or prepared), or an Err the caller must
    deny on."""
    act = context if isinstance(context, Activation) else prepare(context)
    if act.problem is not None:
        return _deny(signal, act.problem)
    try:
        value = signal.program.evaluate(act.cel(signal.names))
    except celpy.CELEvalError as exc:
        return _deny(signal, first_line(exc))
    except Exception as exc:  # any failure inside the evaluator is a deny, never a crash
        return _deny(signal, f"{type(exc).__name__}: {first_line(exc)}")
    if isinstance(value, celpy.CELEvalError):
        return _deny(signal, first_line(value))
    return Ok(_to_json(value))


def evaluate_bool(signal: Signal, context: Mapping[str, Any] | Activation) -> Result[bool]:
    """Like `evaluate`, and the value must be a boolean."""
    got = evaluate(signal, context)
    if isinstance(got, Err) or isinstance(got.value, bool):
        return got
    return _deny(signal, f"evaluated to {type(got.value).__name__} {got.value!r}, not a boolean")


def first_line(exc: BaseException) -> str:
    """The first line of an exception's message, at most 200 characters."""
    text = str(exc.args[0] if exc.args else exc).strip()
    return (text.splitlines() or ["?"])[0][:200]


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

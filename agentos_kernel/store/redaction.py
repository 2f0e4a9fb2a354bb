"""Redaction before anything is logged (spec L2: "request와 response는 event log에 남기기 전
redaction한다"). The session log applies it to every payload it appends, so a secret that
reaches a role's output or a tool's result is not written either; what leaves the runtime
without passing the log (a RunResult, a returned error, an MCP result, grader feedback) is
redacted by the same `Redactor` (kernel.py, recorder.py, mcp_serve.py, labs/rubric/grade.py).

Found by default: the secret shapes of `redaction_shapes.SECRETS` (card numbers, API keys,
tokens, private keys, passwords in URLs, secret-named fields), in dict keys as in values, at
any depth; plus the exact secret strings given (the profile's API key), the profile's
`redact_patterns`, and the PII categories the profile names (`redaction_shapes.PII`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from .redaction_shapes import PII, PII_BY_NAME, SECRET, SECRETS, SENSITIVE_NAME, Shape, luhn_ok

CUSTOM = "[REDACTED]"
"""What a profile's `redact_patterns` match is replaced with."""
PII_CATEGORIES: tuple[str, ...] = tuple(s.name for s in PII)
"""The names a profile's `redact_pii` may list."""


_OTHER_DIGIT = re.compile(r"[^\D0-9]").search
"""A digit outside ASCII (fullwidth, Arabic-Indic, ...): `\\d` in a shape matches it, the
hints' literal digits do not."""


def _prefilter(shapes: Iterable[Shape]) -> Callable[[str], bool]:
    search = re.compile("|".join(s.hint for s in shapes)).search

    def maybe(value: str) -> bool:
        if search(value.lower()) is not None:
            return True
        return not value.isascii() and _OTHER_DIGIT(value) is not None
    return maybe


_MAYBE_SECRET = re.compile("|".join(s.hint for s in SECRETS))
"""Over the lowered text: matches wherever a secret shape could; nothing found means none."""
maybe_secret = _prefilter(SECRETS)
"""The one cheap scan: False only when no secret shape can match the string."""


class _CleanStrings:
    """Strings in which the shapes in force change nothing: found so by the prefilter, or by a
    full pass of the table. A session's payloads repeat the same strings (each model request
    carries the system prompt and the turns before it), so most strings are looked up here
    instead of scanned again. A string is immutable and equality is exact, so a hit is the
    same answer the scan would give. Bounded: emptied when it holds more than `budget`
    characters. `keys` likewise holds dict keys found clean (no shape, no secret name)."""

    def __init__(self, budget: int = 2_000_000, shapes: tuple[Shape, ...] = SECRETS) -> None:
        self.budget = budget
        self.shapes = shapes
        self.maybe = maybe_secret if shapes is SECRETS else _prefilter(shapes)
        self.known: dict[str, None] = {}
        self.keys: set[str] = set()
        self.size = 0
        self.scans = 0
        """Strings scanned with the prefilter since made (a regression guard counts them)."""

    def may_hold_secret(self, value: str) -> bool:
        if value in self.known:
            return False
        self.scans += 1
        if self.maybe(value):
            return True
        self.add(value)
        return False

    def add(self, value: str) -> None:
        """Remember `value` as one the shapes leave as it is."""
        if len(value) <= self.budget:
            if self.size + len(value) > self.budget:
                self.known.clear()
                self.keys.clear()
                self.size = 0
            self.known[value] = None
            self.size += len(value)


CLEAN = _CleanStrings()
_PII_CLEAN: dict[tuple[str, ...], _CleanStrings] = {}


def _clean_for(pii: tuple[str, ...]) -> _CleanStrings:
    """The clean strings of the secret shapes plus these PII categories (one set per choice)."""
    if not pii:
        return CLEAN
    found = _PII_CLEAN.get(pii)
    if found is None:
        found = _PII_CLEAN[pii] = _CleanStrings(shapes=SECRETS + tuple(PII_BY_NAME[n] for n in pii))
    return found


def _text(value: str, secrets: tuple[str, ...], patterns: tuple[re.Pattern[str], ...],
          clean: _CleanStrings) -> str:
    if patterns or clean.may_hold_secret(value):
        out = value
        for s in secrets:
            if s:
                out = out.replace(s, SECRET)
        before = out
        for shape in clean.shapes:
            out = shape.sub(out)
        if out == before == value:
            clean.add(value)  # the table changes nothing: the next time is a lookup
        for p in patterns:
            out = p.sub(CUSTOM, out)
        return out
    # Nothing the shapes match: only the exact secrets can be in it (what replaces one,
    # "[REDACTED-SECRET]", cannot make the prefilter match).
    for s in secrets:
        if s and s in value:
            value = value.replace(s, SECRET)
    return value


def _dict(value: dict[Any, Any], secrets: tuple[str, ...], patterns: tuple[re.Pattern[str], ...],
          clean: _CleanStrings) -> dict[Any, Any]:
    """Keys redacted like values; a secret-named key's text value replaced whole. A key that
    redaction turns into one the dict already has is suffixed `#2`, `#3`, ... (in order), so no
    value is lost."""
    pairs: list[tuple[Any, Any, bool]] = []
    for k, v in value.items():
        changed = False
        if type(k) is str and (secrets or patterns or k not in clean.keys):
            sensitive = SENSITIVE_NAME.fullmatch(k) is not None
            new = _text(k, secrets, patterns, clean)
            if not sensitive and new == k and not (secrets or patterns):
                clean.keys.add(k)
            if sensitive and type(v) in _SCALARS and v != "":
                v = SECRET
            changed, k = new != k, new
        pairs.append((k, redact_with(v, secrets, patterns, clean), changed))
    if not any(c for _, _, c in pairs):
        return {k: v for k, v, _ in pairs}
    kept = {k for k, _, c in pairs if not c}
    out: dict[Any, Any] = {}
    for k, v, c in pairs:
        name, n = k, 1
        while c and (name in out or name in kept):
            n += 1
            name = f"{k}#{n}"
        out[name] = v
    return out


def redact_with(value: Any, secrets: tuple[str, ...], patterns: tuple[re.Pattern[str], ...],
                clean: _CleanStrings) -> Any:
    """`redact` with the clean strings of the shapes in force given."""
    if not (secrets or patterns):
        return _plain(value, clean)
    if isinstance(value, str):
        return _text(value, secrets, patterns, clean)
    if isinstance(value, dict):
        return _dict(value, secrets, patterns, clean)
    if isinstance(value, list | tuple):
        return [redact_with(v, secrets, patterns, clean) for v in value]
    return value


def _plain(value: Any, clean: _CleanStrings) -> Any:
    """`redact_with` without exact secrets or patterns, the common case: leaves known to stay
    as they are are kept without a call (a number; a str already found clean)."""
    known = clean.known
    if type(value) is dict:
        if clean.keys.issuperset(value):  # every key known clean: one C-level check
            return {k: v if (type(v) is str and v in known) or type(v) in _LEAVES
                    else _plain(v, clean) for k, v in value.items()}
        return _dict(value, (), (), clean)
    if type(value) is list or type(value) is tuple:
        return [v if (type(v) is str and v in known) or type(v) in _LEAVES
                else _plain(v, clean) for v in value]
    if isinstance(value, str):
        return _text(value, (), (), clean)
    if isinstance(value, dict):
        return _dict(value, (), (), clean)
    if isinstance(value, list | tuple):
        return [_plain(v, clean) for v in value]
    return value


def redact(value: Any, secrets: tuple[str, ...] = (),
           patterns: tuple[re.Pattern[str], ...] = (), pii: tuple[str, ...] = ()) -> Any:
    """A copy of `value` (JSON-like) with every secret shape, the given secret strings, the
    given patterns and the named PII categories replaced, in keys as in values; applied to
    every request and response before it is logged."""
    return redact_with(value, secrets, patterns, CLEAN if not pii else _clean_for(pii))


@dataclass(frozen=True, repr=False)
class Redactor:
    """The redaction one session applies: the secret shapes, its exact secrets, its profile's
    patterns and PII categories. Its repr never shows them (a repr is a sink too)."""

    secrets: tuple[str, ...] = ()
    """Exact strings to remove (the API key read from the profile's api_key_env)."""
    patterns: tuple[re.Pattern[str], ...] = ()
    """Compiled `redact_patterns` of the profile."""
    pii: tuple[str, ...] = ()
    """PII categories redacted too (names of `PII_CATEGORIES`)."""

    @classmethod
    def of(cls, secrets: Iterable[str] = (), patterns: Iterable[str | re.Pattern[str]] = (),
           pii: Iterable[str] = ()) -> Redactor:
        """A redactor from secret strings (empty ones are ignored), regexes and PII category
        names (KeyError for an unknown one: the profile's loader names it first)."""
        names = tuple(dict.fromkeys(pii))
        for name in names:
            if name not in PII_BY_NAME:
                raise KeyError(f"unknown PII category {name!r}; known: {', '.join(PII_CATEGORIES)}")
        return cls(tuple(s for s in secrets if s),
                   tuple(re.compile(p) if isinstance(p, str) else p for p in patterns),
                   tuple(n for n in PII_CATEGORIES if n in names))

    def __call__(self, value: Any) -> Any:
        """A copy of `value` (JSON-like) with every secret replaced."""
        return redact_with(value, self.secrets, self.patterns, _clean_for(self.pii))

    def bound(self) -> Callable[[Any], Any]:
        """`self` as one plain function, for a caller that redacts many values (a session
        log: every payload): the same copy, without finding the clean strings again and
        dispatching on secrets and patterns per call. Binds the clean strings in force now."""
        secrets, patterns, clean = self.secrets, self.patterns, _clean_for(self.pii)
        if secrets or patterns:
            return lambda value: redact_with(value, secrets, patterns, clean)
        return lambda value: _plain(value, clean)

    def with_pii(self, pii: Iterable[str]) -> Redactor:
        """The same redaction with these PII categories too."""
        return Redactor.of(self.secrets, self.patterns, (*self.pii, *pii))

    def __repr__(self) -> str:
        return (f"Redactor({len(self.secrets)} secret(s), {len(self.patterns)} pattern(s), "
                f"pii={list(self.pii)})")


_LEAVES = frozenset({int, float, bool, type(None)})
"""Exact types that redaction returns as they are (a subclass takes the long way)."""
_SCALARS = frozenset({str, int, float})
"""Values a secret-named field holds that are replaced whole."""

__all__ = ["CLEAN", "CUSTOM", "PII_CATEGORIES", "Redactor", "luhn_ok", "maybe_secret", "redact"]

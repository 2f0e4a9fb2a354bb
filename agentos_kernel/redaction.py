"""Redaction before anything is logged (spec L2: "request와 response는 event log에 남기기 전
redaction한다"). The session log applies it to every payload it appends, so a secret that
reaches a role's output or a tool's result is not written either; what leaves the runtime
without passing the log (a RunResult, a returned error) is redacted by the same
`Redactor` (kernel.py, recorder.py).

Found by default: card numbers (16 digits in a row, or 4-4-4-4 / 4-6-5 groups and 15-digit
Amex numbers that pass the Luhn check), API keys (OpenAI/Anthropic `sk-…`, AWS `AKIA…`,
GitHub `ghp_…`/`github_pat_…`, Google `AIza…`, Slack `xox?-…`), bearer tokens; plus the
exact secret strings given (the profile's API key) and the profile's `redact_patterns`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

_KEY = "[REDACTED-KEY]"
_SECRETS = (
    (re.compile(r"\b\d{16}\b"), "[REDACTED-CC]"),
    (re.compile(r"\bsk-[A-Za-z0-9_-]{16,}"), _KEY),
    (re.compile(r"\b(AKIA|ASIA)[A-Z0-9]{16}\b"), _KEY),
    (re.compile(r"\b(ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{30,}\b|\bgithub_pat_[A-Za-z0-9_]{30,}"), _KEY),
    (re.compile(r"\bAIza[0-9A-Za-z_-]{35}"), _KEY),
    (re.compile(r"\bxox[abprs]-[A-Za-z0-9-]{10,}"), _KEY),
    (re.compile(r"(?i)\b(bearer)\s+[A-Za-z0-9._~+/=-]{16,}"), r"\1 [REDACTED-TOKEN]"),
)
# Grouped and 15-digit card numbers are only redacted when they pass the Luhn check: dates,
# phone numbers and ids have the same shapes far more often than cards do.
_CARD_LIKE = re.compile(r"\b(?:\d{4}(?:[ -]\d{4}){3}|\d{4}[ -]\d{6}[ -]\d{5}|3[47]\d{13})\b")
_MAYBE_SECRET = re.compile(
    r"\d{4}[ -]?\d{4}|sk-|AKIA|ASIA|gh[pousr]_|github_pat_|AIza|xox|(?i:bearer)")
CUSTOM = "[REDACTED]"
"""What a profile's `redact_patterns` match is replaced with."""


def luhn_ok(digits: str) -> bool:
    """The Luhn checksum every payment card number satisfies."""
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = int(ch)
        if i % 2:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
    return total % 10 == 0


def _card(match: re.Match[str]) -> str:
    digits = re.sub(r"[ -]", "", match.group(0))
    return "[REDACTED-CC]" if luhn_ok(digits) else match.group(0)


@dataclass(frozen=True, repr=False)
class Redactor:
    """The redaction one session applies: the default patterns, its exact secrets, and its
    profile's patterns. Its repr never shows them (a repr is a sink too)."""

    secrets: tuple[str, ...] = ()
    """Exact strings to remove (the API key read from the profile's api_key_env)."""
    patterns: tuple[re.Pattern[str], ...] = ()
    """Compiled `redact_patterns` of the profile."""

    @classmethod
    def of(cls, secrets: Iterable[str] = (), patterns: Iterable[str | re.Pattern[str]] = ()
           ) -> Redactor:
        """A redactor from secret strings (empty ones are ignored) and regexes."""
        return cls(tuple(s for s in secrets if s),
                   tuple(re.compile(p) if isinstance(p, str) else p for p in patterns))

    def __call__(self, value: Any) -> Any:
        """A copy of `value` (JSON-like) with every secret replaced."""
        return redact(value, self.secrets, self.patterns)

    def __repr__(self) -> str:
        return f"Redactor({len(self.secrets)} secret(s), {len(self.patterns)} pattern(s))"


class _CleanStrings:
    """Strings already scanned in which `_MAYBE_SECRET` found nothing. A session's payloads
    repeat the same strings (each model request carries the system prompt and the turns
    before it), so most strings are looked up here instead of scanned again. A string is
    immutable and equality is exact, so a hit is the same answer the scan would give.
    Bounded: emptied when it holds more than `budget` characters."""

    def __init__(self, budget: int = 2_000_000) -> None:
        self.budget = budget
        self.known: dict[str, None] = {}
        self.size = 0
        self.scans = 0
        """Strings scanned with the prefilter since import (a regression guard counts them)."""

    def may_hold_secret(self, value: str) -> bool:
        if value in self.known:
            return False
        self.scans += 1
        if _MAYBE_SECRET.search(value):
            return True
        if len(value) <= self.budget:
            if self.size + len(value) > self.budget:
                self.known.clear()
                self.size = 0
            self.known[value] = None
            self.size += len(value)
        return False


CLEAN = _CleanStrings()


def redact(value: Any, secrets: tuple[str, ...] = (),
           patterns: tuple[re.Pattern[str], ...] = ()) -> Any:
    """A copy of `value` with card numbers, API keys, bearer tokens, the given secret strings
    and the given patterns replaced; applied to every request and response before it is
    logged."""
    if isinstance(value, str):
        if patterns or CLEAN.may_hold_secret(value):
            for s in secrets:
                if s:
                    value = value.replace(s, "[REDACTED-SECRET]")
            for pattern, repl in _SECRETS:
                value = pattern.sub(repl, value)
            value = _CARD_LIKE.sub(_card, value)
            for p in patterns:
                value = p.sub(CUSTOM, value)
        else:
            # Nothing the default patterns match: only the exact secrets can be in it (what
            # replaces one, "[REDACTED-SECRET]", cannot make the prefilter match).
            for s in secrets:
                if s and s in value:
                    value = value.replace(s, "[REDACTED-SECRET]")
        return value
    if not (secrets or patterns):  # the common case: leaves known to stay as they are are
        known = CLEAN.known  # kept without a call (a number; a str already found clean)
        if isinstance(value, dict):
            return {k: v if type(v) in _LEAVES or (type(v) is str and v in known) else redact(v)
                    for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [v if type(v) in _LEAVES or (type(v) is str and v in known) else redact(v)
                    for v in value]
        return value
    if isinstance(value, dict):
        return {k: redact(v, secrets, patterns) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [redact(v, secrets, patterns) for v in value]
    return value


_LEAVES = frozenset({int, float, bool, type(None)})
"""Exact types that redaction returns as they are (a subclass takes the long way)."""

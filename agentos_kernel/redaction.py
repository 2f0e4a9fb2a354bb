"""Redaction before anything is logged (spec L2: "request와 response는 event log에 남기기 전
redaction한다"). The session log applies it to every payload it appends, so a secret that
reaches a role's output or a tool's result is not written either."""

from __future__ import annotations

import re
from typing import Any

_SECRETS = (
    (re.compile(r"\b\d{16}\b"), "[REDACTED-CC]"),
    (re.compile(r"\bsk-[A-Za-z0-9_-]{16,}"), "[REDACTED-KEY]"),
    (re.compile(r"\b(AKIA|ASIA)[A-Z0-9]{16}\b"), "[REDACTED-KEY]"),
    (re.compile(r"(?i)\b(bearer)\s+[A-Za-z0-9._~+/=-]{16,}"), r"\1 [REDACTED-TOKEN]"),
)

_MAYBE_SECRET = re.compile(r"\d{16}|sk-|AKIA|ASIA|(?i:bearer)")


def redact(value: Any, secrets: tuple[str, ...] = ()) -> Any:
    """A copy of `value` with card numbers, API keys, bearer tokens and the given secret
    strings replaced; applied to every request and response before it is logged."""
    if isinstance(value, str):
        if not secrets and not _MAYBE_SECRET.search(value):
            return value  # most strings hold nothing to redact: one scan instead of four
        for pattern, repl in _SECRETS:
            value = pattern.sub(repl, value)
        for s in secrets:
            if s:
                value = value.replace(s, "[REDACTED-SECRET]")
        return value
    if isinstance(value, dict):
        return {k: redact(v, secrets) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [redact(v, secrets) for v in value]
    return value

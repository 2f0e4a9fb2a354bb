"""`json.dumps` without its per-call set-up, and `json.loads` by orjson wherever it reads
the same, for the request's hot path.

A role's input goes to the model as `json.dumps(payload, ensure_ascii=False,
sort_keys=True)`, and that text is in the log (the canonical trace is byte-identical across
versions), so it must stay the stdlib encoder's. `json.dumps` with any argument builds a new
`JSONEncoder` per call; an encoder holds no state between calls (`encode` makes its own
circular-reference markers each time), so one made once per option set gives the same text,
or raises the same exception, in less time. (orjson's text differs: no space after `,` and
`:`, and its own float forms; mapped back to `json`'s, it was no faster: measured in
bench/RESULTS.md, "Request hot path".)
"""

from __future__ import annotations

import json
from typing import Any

import orjson

_ENCODERS = {(ascii_, sort): json.JSONEncoder(ensure_ascii=ascii_, sort_keys=sort)
             for ascii_ in (True, False) for sort in (True, False)}


def dumps(value: Any, *, ensure_ascii: bool = True, sort_keys: bool = False) -> str:
    """`json.dumps(value, ensure_ascii=ensure_ascii, sort_keys=sort_keys)`: the same text
    (or the same exception)."""
    return _ENCODERS[ensure_ascii, sort_keys].encode(value)


_DIGITS = bytes(0x30 if 0x30 <= b <= 0x39 else 0x2E for b in range(256))
"""A translation table: each ASCII digit to "0", every other byte to ".": a run of digits in
the text is a run of "0"s after it (found by one C-level search)."""
_LONG_RUN = b"0" * 19


def loads(text: str) -> Any:
    """`json.loads(text)`: the same value, or the same exception. orjson reads JSON as `json`
    does but in two ways: it refuses NaN, the infinities, lone surrogates and nesting past
    1024 levels (`json` reads them, or raises its own error, here too), and it reads an
    integer past 64 bits as a float (`json`: the int), so text with 19 digits in a row is
    read by `json`. 2-3x faster on a role's input and answer (the canonical request reads
    ten). tests/test_hot_path.py compares the two on generated text."""
    if _LONG_RUN not in text.encode("utf-8", "surrogatepass").translate(_DIGITS):
        try:
            return orjson.loads(text)
        except orjson.JSONDecodeError:
            pass
    return json.loads(text)


JSONDecodeError = json.JSONDecodeError
"""What `loads` raises on text that is not JSON: `json`'s own, with its message and pos."""

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
import threading
from json.encoder import c_make_encoder, encode_basestring, encode_basestring_ascii  # type: ignore[attr-defined]
from typing import Any

import orjson

_ENCODERS = {(ascii_, sort): json.JSONEncoder(ensure_ascii=ascii_, sort_keys=sort)
             for ascii_ in (True, False) for sort in (True, False)}


class _Held:
    """The C encoder `JSONEncoder.encode` makes on every call (`iterencode(o, _one_shot=True)`
    builds it, and a `floatstr` closure the C encoder never calls), made once per option set
    with its own circular-reference markers: the same C code with the same arguments, so the
    same text or the same exception, without ~9,000 instructions of Python set-up per call
    (callgrind). Its markers are empty between calls, as a fresh dict is; a call that raised
    may leave some behind, so they are emptied then. One caller at a time (a lock taken
    without waiting): another thread, or a call made while one is under way, gets
    `JSONEncoder.encode`'s own fresh encoder instead."""

    def __init__(self, ascii_: bool, sort: bool) -> None:
        self.encoder = _ENCODERS[ascii_, sort]
        self.markers: dict[int, Any] = {}
        e = self.encoder
        self.c_encode = None if c_make_encoder is None else c_make_encoder(
            self.markers, e.default, encode_basestring_ascii if ascii_ else encode_basestring,
            e.indent, e.key_separator, e.item_separator, e.sort_keys, e.skipkeys, e.allow_nan)
        self.busy = threading.Lock()


_HELD = {key: _Held(*key) for key in _ENCODERS}


def dumps(value: Any, *, ensure_ascii: bool = True, sort_keys: bool = False) -> str:
    """`json.dumps(value, ensure_ascii=ensure_ascii, sort_keys=sort_keys)`: the same text
    (or the same exception)."""
    held = _HELD[ensure_ascii, sort_keys]
    if type(value) is str or held.c_encode is None or not held.busy.acquire(False):
        return held.encoder.encode(value)
    try:
        return "".join(held.c_encode(value, 0))
    except BaseException:
        held.markers.clear()  # what the failed call marked: a fresh dict's state again
        raise
    finally:
        held.busy.release()


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

"""A JSON line that holds one key twice in one object (`{"ok":false,"ok":true}`) has two
readings: orjson, Python's json and Go keep the last value, other readers the first. Our
writer never writes one (it encodes a dict), so such a line was written by hand.

orjson does not report duplicates, so `duplicate_key` reads the line again with the
standard library's parser, which hands every object's (key, value) pairs to a hook in
order. That costs about as much as a second parse: callers run it only on a line whose
bytes are not the canonical encoding of what orjson read (events.canonical), which a
duplicate key always makes them (the encoding of a dict holds each key once).
"""

from __future__ import annotations

import json
from typing import Any


class _Repeated(dict[str, Any]):
    """An object that holds a repeated key, or holds (at any depth) one that does."""

    path = ""


def duplicate_key(text: bytes | str) -> str | None:
    """Where a key appears twice in one object of the JSON text, as a path from the top
    (`payload.ok`, `payload.items[2].x`), else None. The text must be valid JSON."""
    found = _inner(json.loads(text, object_pairs_hook=_pairs))
    return found.lstrip(".") if found is not None else None


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj: dict[str, Any] = {}
    for key, value in pairs:
        if key in obj:
            return _marked(_step(key))
        obj[key] = value
    for key, value in pairs:  # an inner object (already built, bottom-up) may hold one
        found = _inner(value)
        if found is not None:
            return _marked(_step(key) + found)
    return obj


def _marked(path: str) -> _Repeated:
    marked = _Repeated()
    marked.path = path
    return marked


def _inner(value: Any) -> str | None:
    if type(value) is _Repeated:
        return value.path
    if type(value) is list:
        for i, item in enumerate(value):
            found = _inner(item)
            if found is not None:
                return f"[{i}]{found}"
    return None


def _step(key: str) -> str:
    return f".{key}" if key.isidentifier() else f"[{json.dumps(key, ensure_ascii=False)}]"

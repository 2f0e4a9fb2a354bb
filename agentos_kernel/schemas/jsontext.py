"""`json.dumps` without its per-call set-up, for the request's hot path.

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

_ENCODERS = {(ascii_, sort): json.JSONEncoder(ensure_ascii=ascii_, sort_keys=sort)
             for ascii_ in (True, False) for sort in (True, False)}


def dumps(value: Any, *, ensure_ascii: bool = True, sort_keys: bool = False) -> str:
    """`json.dumps(value, ensure_ascii=ensure_ascii, sort_keys=sort_keys)`: the same text
    (or the same exception)."""
    return _ENCODERS[ensure_ascii, sort_keys].encode(value)

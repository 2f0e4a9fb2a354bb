"""Reading one line of a log as an event: JSON, the event_v1 envelope, its canonical bytes
(which a duplicate key, or any other line our writer did not write, differs from)."""

from __future__ import annotations

from typing import Any

import orjson

from ...store.dupkeys import duplicate_key
from ...store.events import FIELD_NAMES, REQUIRED_FIELDS, Event, LogError
from .model import Gap

_KEYSETS = ({*REQUIRED_FIELDS}, {*FIELD_NAMES})
_HEX = "0123456789abcdef"
_loads, _dumps, _SORT = orjson.loads, orjson.dumps, orjson.OPT_SORT_KEYS


def _fast_ok(obj: Any) -> bool:
    """True when log.envelope_problem would find nothing (the common line, checked inline)."""
    if type(obj) is not dict or obj.keys() not in _KEYSETS:
        return False
    eid, typ, parent = obj["id"], obj["type"], obj["parent_id"]
    if not (type(eid) is str and eid and type(typ) is str and typ and type(obj["ts"]) is str
            and type(obj["actor"]) is str and type(obj["session_id"]) is str
            and obj["schema_version"] == "v1" and (parent is None or type(parent) is str)):
        return False
    if "seq" in obj:
        seq = obj["seq"]
        if type(seq) is not int or seq < 1:
            return False
    if "chain" in obj:
        chain = obj["chain"]
        if type(chain) is not str or len(chain) != 64 or chain.strip(_HEX):
            return False
    return True


def read_line(n: int, line: bytes, gaps: list[Gap]) -> tuple[dict[str, Any], bytes] | None:
    """Line `n` as an event object and its canonical bytes, or None (a blank line; or not an
    event, with its `envelope` gap added to `gaps`)."""
    if not line or line.isspace():
        return None
    try:
        obj = _loads(line)
    except orjson.JSONDecodeError as exc:
        gaps.append(Gap("envelope", None, n, f"line {n} is not JSON ({exc}); every line must "
                                             "be one event object"))
        return None
    problem = None if _fast_ok(obj) else envelope_problem(obj, f"line {n}")
    try:
        enc = _dumps(obj, option=_SORT)
    except (TypeError, orjson.JSONEncodeError):  # orjson writes 254 levels, reads 1024
        problem = problem or f"line {n}: nested over 254 levels deep: it has no canonical bytes"
        enc = b""
    if problem:
        gaps.append(Gap("envelope", None, n, problem))
        return None
    if not (len(line) - len(enc) <= 1 and line.startswith(enc)) and (key := duplicate_key(line)):
        # not our writer's bytes, and ambiguous: audited as orjson reads it (the last value)
        gaps.append(Gap("envelope", None, n, f"line {n}: holds the key {key} twice in one object: "
                                             "readers that keep the first value read another event"))
    return obj, enc


def envelope_problem(obj: Any, where: str) -> str | None:
    """Why `obj` is not an event_v1 envelope (the eight fields, optional seq and chain),
    else None."""
    try:
        Event.from_dict(obj, where=where)
    except LogError as exc:
        return f"{exc}; an event has id, session_id, ts, type, actor, payload, schema_version, parent_id"
    except TypeError as exc:  # a field of the wrong type reaching the dataclass
        return f"{where}: {exc}"
    if obj["schema_version"] != "v1":
        return f"{where}: schema_version: is {obj['schema_version']!r}; the envelope is 'v1'"
    for name in ("id", "session_id", "type", "actor"):  # another runtime's log may hold anything
        if not isinstance(obj[name], str):
            return f"{where}: {name}: must be a string, not {type(obj[name]).__name__}"
    if obj["parent_id"] is not None and not isinstance(obj["parent_id"], str):
        return f"{where}: parent_id: must be a string or null"
    if not obj["id"] or not obj["type"]:
        return f"{where}: {'id' if not obj['id'] else 'type'}: must not be empty"
    seq = obj.get("seq")
    if "seq" in obj and (not isinstance(seq, int) or isinstance(seq, bool) or seq < 1):
        return f"{where}: seq: must be an integer from 1"
    chain = obj.get("chain")
    if "chain" in obj and not (isinstance(chain, str) and len(chain) == 64
                               and all(c in "0123456789abcdef" for c in chain)):
        return f"{where}: chain: must be 64 lowercase hex digits (a sha256)"
    return None



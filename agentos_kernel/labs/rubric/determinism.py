"""When are two runs' event logs "identical"? After normalising what a correct runtime may
not reproduce, and nothing else.

A runtime that follows the spec's EventStore gives each event `id=str(uuid4())` and
`ts=time.time()`, so byte-identical logs are impossible for a correct submission. What must
repeat is every decision: each event's type, actor, payload and causal link, in order. So
each log line is compared after:

- dropping the envelope's `ts` and `chain` (wall time; a hash over it);
- replacing each event `id` by its position (`#3`) wherever it appears (`parent_id`, payload);
- replacing session ids by `<session1>` ... and any other UUID by `<uuid1>` ... in order of
  first appearance (so a uuid4 tool-call id still has to be used consistently);
- dropping payload keys that are timings: `ms`, `ts`, `timestamp`, `elapsed`, `duration` and
  any key ending in `_ms`, `_ts`, `_at`, `_seconds`.

Log files are matched by path with UUIDs, long hex and long digit runs replaced. The two runs
use different PYTHONHASHSEED values, so an order that depends on hashing is a difference.
"""

from __future__ import annotations

import re
from typing import Any

import orjson

UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
_PATH_NOISE = ((UUID, "<uuid>"), (re.compile(r"[0-9a-f]{16,}"), "<hex>"), (re.compile(r"\d{6,}"), "<n>"))
TIMING_KEYS = frozenset({"ms", "ts", "timestamp", "elapsed", "duration"})
TIMING_SUFFIXES = ("_ms", "_ts", "_at", "_seconds")
DROPPED_ENVELOPE = ("ts", "chain")


def _is_timing(key: str) -> bool:
    return key in TIMING_KEYS or key.endswith(TIMING_SUFFIXES)


def normalise(data: bytes) -> list[Any]:
    """One normalised value per non-empty line (a line that is not JSON stays as its text)."""
    lines = [ln for ln in data.splitlines() if ln.strip()]
    parsed: list[Any] = []
    for ln in lines:
        try:
            parsed.append(orjson.loads(ln))
        except orjson.JSONDecodeError:
            parsed.append(ln.decode("utf-8", "replace"))
    names: dict[str, str] = {}
    for i, ev in enumerate(parsed, 1):
        if isinstance(ev, dict) and isinstance(ev.get("id"), str):
            names.setdefault(ev["id"], f"#{i}")
    sessions = [ev["session_id"] for ev in parsed
                if isinstance(ev, dict) and isinstance(ev.get("session_id"), str)]
    for n, sid in enumerate(dict.fromkeys(sessions), 1):
        names.setdefault(sid, f"<session{n}>")
    uuids: dict[str, str] = {}

    def rename(s: str) -> str:
        if s in names:
            return names[s]
        return UUID.sub(lambda m: uuids.setdefault(m.group(0), f"<uuid{len(uuids) + 1}>"), s)

    def walk(v: Any) -> Any:
        if isinstance(v, str):
            return rename(v)
        if isinstance(v, list):
            return [walk(x) for x in v]
        if isinstance(v, dict):
            return {k: walk(x) for k, x in v.items() if not _is_timing(k)}
        return v

    out = []
    for ev in parsed:
        if isinstance(ev, dict):
            ev = {k: (walk(v) if k == "payload" else rename(v) if isinstance(v, str) else v)
                  for k, v in ev.items() if k not in DROPPED_ENVELOPE}
        out.append(ev)
    return out


def log_key(path: str) -> str:
    """A log's path with the parts that differ between correct runs replaced."""
    for pattern, token in _PATH_NOISE:
        path = pattern.sub(token, path)
    return path


def normalised_logs(logs: dict[str, bytes]) -> dict[str, list[list[Any]]]:
    """Path key -> the normalised logs at that key, in a stable order."""
    out: dict[str, list[list[Any]]] = {}
    for path, data in logs.items():
        out.setdefault(log_key(path), []).append(normalise(data))
    return {k: sorted(v, key=orjson.dumps) for k, v in sorted(out.items())}


def first_difference(a: dict[str, list[list[Any]]], b: dict[str, list[list[Any]]]) -> str | None:
    """Where run 1's logs and run 2's first differ (None when identical)."""
    if set(a) != set(b):
        only1, only2 = sorted(set(a) - set(b)), sorted(set(b) - set(a))
        return (f"the runs wrote different logs: only run 1 wrote {only1[:3]}, only run 2 wrote "
                f"{only2[:3]}")
    for key in a:
        if len(a[key]) != len(b[key]):
            return f"{key}: run 1 wrote {len(a[key])} such logs, run 2 wrote {len(b[key])}"
        for log1, log2 in zip(a[key], b[key], strict=True):
            for n, (e1, e2) in enumerate(zip(log1, log2, strict=False), 1):
                if e1 != e2:
                    field, v1, v2 = _field_diff(e1, e2, "")
                    kind = e1.get("type") if isinstance(e1, dict) else None
                    return (f"{key} line {n}{f' ({kind})' if kind else ''}: {field or 'the line'} is "
                            f"{_short(v1)} in run 1 but {_short(v2)} in run 2")
            if len(log1) != len(log2):
                return f"{key}: run 1 wrote {len(log1)} events, run 2 wrote {len(log2)}"
    return None


def _field_diff(x: Any, y: Any, path: str) -> tuple[str, Any, Any]:
    if isinstance(x, dict) and isinstance(y, dict):
        for k in sorted(set(x) | set(y), key=str):
            if x.get(k, _MISSING) != y.get(k, _MISSING):
                return _field_diff(x.get(k, _MISSING), y.get(k, _MISSING), f"{path}.{k}" if path else k)
    if isinstance(x, list) and isinstance(y, list) and len(x) == len(y):
        for i, (p, q) in enumerate(zip(x, y, strict=True)):
            if p != q:
                return _field_diff(p, q, f"{path}[{i}]")
    return path, x, y


class _Missing:
    def __repr__(self) -> str:
        return "(absent)"


_MISSING = _Missing()


def _short(v: Any) -> str:
    text = repr(v)
    return text if len(text) <= 60 else text[:57] + "..."

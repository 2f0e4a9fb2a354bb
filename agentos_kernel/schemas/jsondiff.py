"""Comparing JSON values: the first difference between two (depth first, a readable path), a
session id renamed in every string, a one-line rendering for messages. The diff of logs
(`runs/diff.py`), rerun's recorded tools and the cassette provider all compare this way.
"""

from __future__ import annotations

import re
from typing import Any

MISSING = "<missing>"
"""Shown for a key or list item that one side does not have."""


def first_difference(recorded: Any, new: Any, path: str = "") -> tuple[str, Any, Any] | None:
    """(path, recorded value, new value) of the first difference, depth first in key order;
    None when equal. Paths read `payload.messages[1].content`."""
    if isinstance(recorded, dict) and isinstance(new, dict):
        for key in sorted(set(recorded) | set(new), key=str):
            where = f"{path}.{key}" if path else str(key)
            if key not in recorded or key not in new:
                return where, recorded.get(key, MISSING), new.get(key, MISSING)
            found = first_difference(recorded[key], new[key], where)
            if found:
                return found
        return None
    if isinstance(recorded, list | tuple) and isinstance(new, list | tuple):
        for i in range(max(len(recorded), len(new))):
            where = f"{path}[{i}]"
            if i >= len(recorded) or i >= len(new):
                return (where, recorded[i] if i < len(recorded) else MISSING,
                        new[i] if i < len(new) else MISSING)
            found = first_difference(recorded[i], new[i], where)
            if found:
                return found
        return None
    # type() too: JSON true and 1 are different answers even though Python calls them equal
    if type(recorded) is not type(new) or recorded != new:
        return path or "(value)", recorded, new
    return None


def rename_session(value: Any, old: str, new: str) -> Any:
    """A copy of `value` with the whole word `old` replaced by `new` in every string."""
    if old == new:
        return value
    word = re.compile(rf"(?<![A-Za-z0-9]){re.escape(old)}(?![A-Za-z0-9])")

    def walk(v: Any) -> Any:
        if isinstance(v, str):
            return word.sub(new, v) if old in v else v
        if isinstance(v, dict):
            return {k: walk(x) for k, x in v.items()}
        if isinstance(v, list | tuple):
            return [walk(x) for x in v]
        return v

    return walk(value)


def short(value: Any, limit: int = 80) -> str:
    """A one-line rendering of a value for messages."""
    text = repr(value)  # repr keeps newlines escaped: the result is one line
    return text[:limit] + "…" if len(text) > limit else text

"""Is a Python value plain JSON within bounds? Checked before a value that came from YAML or
a caller is described by the schema validator or written to a log.

YAML builds aliases as shared references, so "9 aliases of 9 aliases ..." is a small graph
that expands to a billion values (and `&a [*a]` is a cycle). The walk visits each shared
container once and keeps, per container, the number of values and the levels below it once
expanded: a bomb or a cycle is named in time linear in the YAML, never expanded.
"""

from __future__ import annotations

import reprlib
from collections.abc import Iterable
from typing import Any

from .textcheck import shown, text_problem

_SCALARS = (str, int, float, bool, type(None))
_Link = tuple[Any, Any] | None  # (parent link, key): a path built only when one is reported


def shape_problem(value: Any, *, max_values: int, max_depth: int) -> tuple[str, str] | None:
    """(JSON pointer, why) for the first place where `value` is not a plain JSON value
    (objects with string keys, lists, strings that are UTF-8 text (textcheck), numbers, booleans,
    null) or where it exceeds `max_values` values (counting each use of a shared container)
    or `max_depth` levels; None when it is plain JSON within the bounds."""
    memo: dict[int, tuple[int, int]] = {}  # id -> (values, levels) once expanded
    open_: set[int] = set()  # containers whose children are being walked: a repeat is a cycle
    stack: list[tuple[Any, _Link, int, bool]] = [(value, None, 0, False)]
    while stack:
        node, link, depth, done = stack.pop()
        if not isinstance(node, dict | list | tuple):
            why = _scalar_problem(node)
            if why:
                return pointer(link), why
            continue
        key = id(node)
        if done:
            open_.discard(key)
            kids = [memo.get(id(c), (1, 0)) for c in _children(node)]
            memo[key] = (1 + sum(n for n, _ in kids), 1 + max((h for _, h in kids), default=0))
            if memo[key][0] > max_values:
                return pointer(link), (f"holds more than {max_values} values once expanded (counting "
                                       "each use of a YAML alias); it is not checked")
            continue
        if key in open_:
            return pointer(link), "contains itself (a recursive YAML alias)"
        if key in memo:
            if depth + memo[key][1] > max_depth:
                return pointer(link), f"nested deeper than {max_depth} levels"
            continue
        if depth >= max_depth:
            return pointer(link), f"nested deeper than {max_depth} levels"
        open_.add(key)
        stack.append((node, link, depth, True))
        if isinstance(node, dict):
            for k, item in node.items():
                if not isinstance(k, str):
                    return pointer(link), (f"key {reprlib.repr(k)} ({type(k).__name__}) is not a "
                                           "string; JSON object keys are strings (quote it)")
                if (problem := text_problem(k)) is not None:
                    return pointer(link), f"key {shown(k)} is not valid UTF-8 text: {problem}"
                stack.append((item, (link, k), depth + 1, False))
        else:
            stack.extend((item, (link, i), depth + 1, False) for i, item in enumerate(node))
    return None


def _children(node: dict[str, Any] | list[Any] | tuple[Any, ...]) -> Iterable[Any]:
    return node.values() if isinstance(node, dict) else node


def _scalar_problem(node: Any) -> str | None:
    if isinstance(node, str):
        problem = text_problem(node)
        return None if problem is None else f"not valid UTF-8 text: {problem}"
    if isinstance(node, _SCALARS):
        return None
    return (f"{reprlib.repr(node)} ({type(node).__name__}) is not a JSON value (quote it to make "
            "it a string)")


def pointer(link: _Link, limit: int = 12) -> str:
    """The JSON pointer of a link, each part printable, shortened past `limit` levels."""
    parts: list[str] = []
    while link is not None:
        link, key = link
        parts.append(printable(str(key)))
    parts.reverse()
    shown = "/" + "/".join(parts[:limit])
    return shown + "/..." if len(parts) > limit else shown


def printable(text: str) -> str:
    """`text` with each character a terminal would not show escaped (`\\n`, `\\x00`), so a
    key or value quoted in a message keeps it one line."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)

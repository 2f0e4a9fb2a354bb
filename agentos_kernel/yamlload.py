"""YAML reading for every contract file: PyYAML's safe loader, parsed by libyaml, and the
bounded loader for YAML that may come from anyone (frontmatter, agentos.yaml).

`yaml.safe_load` scans and parses in pure Python: half of loading a workspace. PyYAML's
`CSafeLoader` does the same safe construction over libyaml's parser, several times faster.
A document libyaml refuses is read again by the pure-Python loader, so the error a user
sees (its message and line) is the one they saw before, with or without libyaml. PyYAML
itself is imported on the first call: `import agentos_kernel` does not load it.
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from functools import cache
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # imported on first use: `import agentos_kernel` loads neither
    import yaml

MAX_YAML_CHARS, MAX_YAML_DEPTH, MAX_YAML_VALUES = 64 * 1024, 64, 10_000
"""Bounds of a contract's YAML: characters read, nesting, values once aliases expand."""


def safe_load(text: str) -> Any:
    """`yaml.safe_load(text)`, through CSafeLoader where this PyYAML has libyaml."""
    import yaml

    fast = getattr(yaml, "CSafeLoader", None)
    if fast is not None:
        try:
            return yaml.load(text, Loader=fast)  # CSafeLoader: the safe loader, in C
        except yaml.YAMLError:
            pass  # read again below: the pure loader's error names the line the same way
    return yaml.safe_load(text)


def yaml_error() -> type[yaml.YAMLError]:
    """`yaml.YAMLError`, for an `except` clause in a module that does not import yaml."""
    import yaml

    return yaml.YAMLError


class FrontmatterError(ValueError):
    """Frontmatter that cannot be used; `field` names where (`frontmatter` for the whole)."""

    def __init__(self, message: str, field: str = "frontmatter") -> None:
        super().__init__(message)
        self.field = field


@cache
def _bounded_loader() -> type:
    """SafeLoader that refuses nesting past MAX_YAML_DEPTH (a YAMLError with its line). The
    pure-Python loader, not libyaml's: only its composer can be stopped as it recurses. Plain
    YAML goes to libyaml first (`_plain_load`, its depth checked from the events); this
    loader reads the rest, and raises every error a user sees."""
    import yaml

    class BoundedLoader(yaml.SafeLoader):
        depth = 0

        def compose_node(self, parent: Any, index: Any) -> Any:
            self.depth += 1
            try:
                if self.depth > MAX_YAML_DEPTH:
                    raise yaml.composer.ComposerError(
                        None, None, f"nested deeper than {MAX_YAML_DEPTH} levels",
                        self.peek_event().start_mark)
                return super().compose_node(parent, index)
            finally:
                self.depth -= 1

    return BoundedLoader


_PURE = object()
_NOT_PLAIN = re.compile(r"[^\x20-\x7e\n]|[!&*|>%@\\?]|^(?:---|\.\.\.)", re.M)
# What plain YAML never holds: anything but printable ASCII and newlines, tags, anchors and
# aliases, block scalars, directives, escapes, complex keys, document markers. libyaml and
# PyYAML's own parser read some of these differently (a lone `!`, `>#`, a trailing tab), so
# only the rest goes to libyaml (flow collections, as agentos.yaml's hooks, included).
_PLAIN_BYTES = bytes(c for c in range(0x20, 0x7F) if chr(c) not in "!&*|>%@\\?") + b"\n"


def _not_plain(text: str) -> bool:
    """`_NOT_PLAIN.search(text)` is not None, in C-level passes (the regex tries three
    branches at every character: 0.05-0.1 ms on agentos.yaml). tests/test_yaml_plain.py
    compares the two."""
    if not text.isascii() or text.encode("ascii").translate(None, _PLAIN_BYTES):
        return True
    return text.startswith(("---", "...")) or "\n---" in text or "\n..." in text


def _plain_load(text: str) -> Any:
    """What the bounded loader reads from `text`, read by libyaml when `text` is plain YAML
    no deeper than the bound; else _PURE (no libyaml, not plain, too deep, or any
    error: the bounded loader reads it again and raises its own error, with its line).
    A workspace's frontmatter and agentos.yaml are (tests/test_yaml_plain.py compares them)."""
    return _plain_read(text)[0]


def _plain_read(text: str) -> tuple[Any, bool]:
    """(`_plain_load(text)`, whether that document is proven plain JSON within the bounds
    as it was built: `not_json` would find nothing; False leaves it to `not_json`)."""
    import yaml

    fast = getattr(yaml, "CSafeLoader", None)
    if fast is None or _not_plain(text):
        return _PURE, False
    try:
        if _collections_at_most(text) < MAX_YAML_DEPTH:  # cannot nest too deep: one parse
            return _libyaml_load(text, fast)
        level = 0
        for event in yaml.parse(text, Loader=fast):
            if isinstance(event, yaml.MappingStartEvent | yaml.SequenceStartEvent):
                level += 1
                if level > MAX_YAML_DEPTH:
                    return _PURE, False
            elif isinstance(event, yaml.MappingEndEvent | yaml.SequenceEndEvent):
                level -= 1
            elif isinstance(event, yaml.ScalarEvent) and level + 1 > MAX_YAML_DEPTH:
                return _PURE, False
        return _libyaml_load(text, fast)[0], False  # deep enough to leave to not_json
    except yaml.YAMLError:
        return _PURE, False


_STR, _SEQ, _MAP = "tag:yaml.org,2002:str", "tag:yaml.org,2002:seq", "tag:yaml.org,2002:map"
_SCALARS = frozenset(f"tag:yaml.org,2002:{t}" for t in ("null", "bool", "int", "float", "timestamp"))
_TIMESTAMP = "tag:yaml.org,2002:timestamp"


class _Unsure(Exception):
    """A node `_build` leaves to PyYAML's constructor."""


def _libyaml_load(text: str, fast: Any) -> tuple[Any, bool]:
    """(`yaml.load(text, Loader=fast)`, whether it is proven plain JSON within the bounds)
    for plain YAML: libyaml composes the nodes, and the document is built from them
    directly (strings, mappings, sequences; other scalars by the
    SafeConstructor's own functions) instead of through PyYAML's generic constructor, its
    generators and its per-node bookkeeping (the most of reading a frontmatter). A node it
    does not know (a merge key, a collection as a key) or any error reads the text again
    with `yaml.load`, for its document or its error. tests/test_yaml_plain.py compares them.
    Proven plain: every key a string, no timestamp, at most MAX_YAML_VALUES values, the
    text printable ASCII (every string UTF-8 text) without alias (nothing shared); depth is
    the caller's (`_plain_read` trusts it only under the collection count's bound)."""
    import yaml

    loader = fast(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None, True
        tally = [1, 0]  # values built (the root, then each container's items), any odd one
        try:
            doc = _build(node, loader, yaml.ScalarNode, yaml.MappingNode, tally)
            return doc, not tally[1] and tally[0] <= MAX_YAML_VALUES
        except Exception:  # PyYAML reads it again: its document, or its own error
            pass
    finally:
        loader.dispose()
    return yaml.load(text, Loader=fast), False


def _build(node: Any, loader: Any, scalar: type, mapping: type, tally: list[int]) -> Any:
    tag, kind = node.tag, type(node)
    if kind is scalar:
        if tag == _STR:
            return node.value
        if tag in _SCALARS:
            if tag == _TIMESTAMP:
                tally[1] = 1  # a date: not JSON (not_json names it)
            return loader.yaml_constructors[tag](loader, node)
    elif kind is mapping:
        if tag == _MAP:
            out = {}
            tally[0] += len(node.value)
            for key, value in node.value:
                if type(key) is not scalar:
                    raise _Unsure  # a collection as a key: PyYAML's "found unhashable key"
                name = _build(key, loader, scalar, mapping, tally)
                if type(name) is not str:
                    tally[1] = 1  # a key that is not a string (not_json names it)
                out[name] = _build(value, loader, scalar, mapping, tally)
            return out
    elif tag == _SEQ:
        tally[0] += len(node.value)
        return [_build(item, loader, scalar, mapping, tally) for item in node.value]
    raise _Unsure  # a merge key, `=`, any tag not plain


def _collections_at_most(text: str) -> int:
    """A bound on the collections plain YAML `text` holds, so on how deep they nest: each
    starts at an indicator of its own (a mapping at its first `:` or `{`, a sequence at its
    first `- ` entry or `[`), and every one of those is counted, except on a comment line
    (only spaces before its `#`: a comment, or text inside a quoted scalar, never a
    collection; agentos.yaml's comments would otherwise cost it the walk). Most frontmatter
    counts a dozen: its depth needs no walk over libyaml's events (half of reading it)."""
    if "#" in text:
        text = _COMMENT_LINE.sub("", text)
    return (text.count(":") + text.count("- ") + text.count("-\n") + text.endswith("-")
            + text.count("[") + text.count("{"))


_COMMENT_LINE = re.compile(r"^ *#.*", re.M)


KEEP_READ, KEEP_READ_CHARS = 256, 2_000_000
"""Documents `load_yaml` keeps by their text, and their texts' characters in all (least
recently used dropped first): every contract file of a few workspaces."""
_READ: OrderedDict[tuple[str, int], Any] = OrderedDict()
_kept_chars = 0
_READ_LOCK = threading.Lock()


def load_yaml(text: str, max_chars: int = MAX_YAML_CHARS) -> Any:
    """`yaml.safe_load` within the bounds above (a config file may pass a larger
    `max_chars`): FrontmatterError (a ValueError) names the field at fault, yaml.YAMLError
    the line (`yaml_problem` gives it with a one-line reason). A text read before in this
    process gives a copy of the same document without parsing it again (a Runtime rebuilt
    after one contract edit reads the others' unchanged text): the text is the key, so an
    edited file is parsed afresh; errors are never kept, each is raised again."""
    key = (text, max_chars)
    with _READ_LOCK:  # workspaces may load on several threads (a live stepper's worker)
        kept = _READ.get(key, _PURE)
        if kept is not _PURE:
            _READ.move_to_end(key)
    if kept is not _PURE:
        return _copy(kept)
    doc = _load_yaml(text, max_chars)
    global _kept_chars
    with _READ_LOCK:
        if key not in _READ:
            _READ[key] = _copy(doc)  # a copy: the caller may change the document it is given
            _kept_chars += len(text)
        while len(_READ) > KEEP_READ or _kept_chars > KEEP_READ_CHARS:
            (dropped, _), _ = _READ.popitem(last=False)
            _kept_chars -= len(dropped)
    return doc


def forget_read() -> None:
    """Drop the documents `load_yaml` keeps (a new process starts without them)."""
    global _kept_chars
    with _READ_LOCK:
        _READ.clear()
        _kept_chars = 0


def _copy(doc: Any) -> Any:
    """A copy of a plain JSON document (`not_json` has checked it is one): its dicts and lists
    new, its scalars shared (they are immutable)."""
    if isinstance(doc, dict):
        return {k: _copy(v) for k, v in doc.items()}
    if isinstance(doc, list):
        return [_copy(v) for v in doc]
    return doc


def _load_yaml(text: str, max_chars: int) -> Any:
    if len(text) > max_chars:
        raise FrontmatterError(f"the YAML is {len(text)} characters; at most {max_chars} "
                               "are read (put long text in the Markdown body)")
    from .schemas.registry import not_json

    doc, plain = _plain_read(text)
    if plain:
        return doc  # proven plain JSON within the bounds as libyaml's nodes were built
    if doc is _PURE:
        loader = _bounded_loader()(text)
        try:
            doc = loader.get_single_data()
        finally:
            loader.dispose()
    odd = not_json(doc, max_values=MAX_YAML_VALUES, max_depth=MAX_YAML_DEPTH)
    if odd is not None:
        raise FrontmatterError(odd.message, odd.path.strip("/").replace("/", ".") or "frontmatter")
    return doc


def yaml_problem(exc: yaml.YAMLError, text: str) -> tuple[int | None, str]:
    """(0-based line in `text` or None, one-line reason) of a PyYAML error."""
    mark = getattr(exc, "problem_mark", None)
    if mark is not None:
        return mark.line, str(getattr(exc, "problem", None) or exc).splitlines()[0]
    position = getattr(exc, "position", None)  # a ReaderError (a NUL, a control character)
    line = text.count("\n", 0, position) if isinstance(position, int) else None
    return line, (str(exc).splitlines() or ["?"])[0]


def field_of(pointer: str, message: str) -> str:
    """A readable field name for a violation: the pointer, or the missing property."""
    name = pointer.strip("/").replace("/", ".")
    if not name and "is a required property" in message:
        return message.split('"')[1] if '"' in message else "-"
    return name or "-"

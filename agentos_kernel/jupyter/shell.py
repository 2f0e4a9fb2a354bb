"""What a cell running `%agent` asks of IPython, done as IPython does it minus its per-call
overhead (issue 24: the displayed line magic within 15 % of the request): a view's text/plain
exactly as the shell's PlainTextFormatter would make it, so `_repr_mimebundle_` can hand over
text and HTML at once; a magic line's `$var`/`{expr}` expansion only when the line holds
something to expand. IPython's own code is the reference (tests/jupyter/test_display_path.py
compares the two on generated lines and runs)."""

from __future__ import annotations

import sys
from collections.abc import Callable, Collection
from typing import Any

from IPython.core.formatters import HTMLFormatter, PlainTextFormatter
from IPython.core.getipython import get_ipython
from IPython.core.interactiveshell import InteractiveShell

EXPANDS = frozenset("${}")
"""The characters IPython's DollarFormatter acts on: a line with none of them expands to itself."""


STOCK = {"text/plain": PlainTextFormatter, "text/html": HTMLFormatter}
"""The formatters whose output `bundle` can stand in for, each IPython's own class."""


def plain_text(obj: object, formatter: PlainTextFormatter) -> str:
    """`obj`'s text/plain as a stock PlainTextFormatter makes it for an object whose class
    defines `__repr__` (and no `_repr_pretty_`): `repr` with `%pprint` off; with it on,
    `pretty`'s `_repr_pprint`, which writes the repr's lines joined by the formatter's
    newline (at indentation 0, nothing to wrap). A printer registered for the type still
    wins: DisplayFormatter.format looks for one before it takes a bundle's text."""
    text = repr(obj)
    return formatter.newline.join(text.splitlines()) if formatter.pprint else text


def bundle(include: Collection[str] | None, exclude: Collection[str] | None,
           makers: dict[str, Callable[[Any], str]]) -> dict[str, str] | None:
    """A `_repr_mimebundle_`: for each mime type the running shell's DisplayFormatter would
    ask its stock formatter for (switched on, e.g. not text/html in a terminal; and wanted
    by `include`/`exclude`), the text that formatter would give, from its maker (called with
    the formatter). None when no shell runs, or a maker raises: IPython then asks each
    formatter as it would without the bundle, and shows any error as it always did."""
    shell = get_ipython()
    display = shell.display_formatter if shell is not None else None
    if display is None:
        return None
    formatters = display.formatters
    out = {}
    try:
        for mime, make in makers.items():
            formatter = formatters.get(mime)
            if (type(formatter) is not STOCK[mime] or not formatter.enabled
                    or (include and mime not in include) or (exclude and mime in exclude)):
                continue
            out[mime] = make(formatter)
    except Exception:  # not swallowed: the same call is made again by IPython's formatter
        return None
    return out


def expand(shell: Any, line: str, above: int) -> str:
    """`line` as `run_line_magic` would have handed it to a magic that expands variables,
    for a magic marked `no_var_expand` that calls this first thing (`above`: how many frames
    above that magic's frame `run_line_magic` calls it from; its wrappers and one).
    Unchanged when it holds no `$`, `{` or `}` (DollarFormatter leaves such text as it is;
    that skips a copy of the user namespace and a regex pass on every call); else
    `shell.var_expand` on the frame `run_line_magic` would have used (its caller,
    `_stack_depth` frames up). When `run_line_magic` did not call the magic itself (its
    method called directly, from anywhere), nothing was ever expanded: nor is it now."""
    if EXPANDS.isdisjoint(line):
        return line
    try:
        frame = sys._getframe(1 + above)
    except ValueError:  # a shallower stack: not called by run_line_magic
        return line
    if frame.f_code is not InteractiveShell.run_line_magic.__code__:
        return line
    # var_expand(line, d) reads sys._getframe(d + 1) from inside itself, where frame 1 is
    # this function's: run_line_magic is at 1 + above, the line's frame _stack_depth above.
    return shell.var_expand(line, 1 + above + frame.f_locals["_stack_depth"])

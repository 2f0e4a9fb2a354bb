"""A frozen dataclass's `__init__` without an `object.__setattr__` call per field.

For a frozen class, dataclasses makes an `__init__` that sets each field through
`object.__setattr__` (the class's own `__setattr__` refuses): about 1,500 instructions a field
in CPython 3.11, 13,000-15,000 for a CompletionRequest or a CompletionResponse, ten of them
per request (callgrind). `quick_init` gives the class an `__init__` of the same signature
that stores the fields in the new instance's `__dict__`: the same value (equal, same hash and
repr, still frozen). Only for a class whose fields all have plain defaults or none (no
default_factory, no field left out of `__init__`, no `__post_init__`, no slots): TypeError
otherwise. tests/test_hot_path.py compares each class's two `__init__`s.
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")

GENERATED: dict[type, Callable[..., None]] = {}
"""Each class's `__init__` as dataclasses made it (what the differential test compares)."""


def quick_init(cls: type[T]) -> type[T]:
    """Give the frozen dataclass `cls` the quicker `__init__` (see the module docstring)."""
    fields = dataclasses.fields(cls)  # type: ignore[arg-type]
    generated = cls.__init__
    params = list(inspect.signature(generated).parameters.values())[1:]
    if (hasattr(cls, "__post_init__") or "__slots__" in cls.__dict__
            or [p.name for p in params] != [f.name for f in fields]
            or any(p.kind is not p.POSITIONAL_OR_KEYWORD for p in params)
            or any(f.default_factory is not dataclasses.MISSING for f in fields)):
        raise TypeError(f"quick_init: {cls.__qualname__} needs the __init__ dataclasses makes")
    defaults: dict[str, Any] = {f"_default_{f.name}": f.default for f in fields
                                if f.default is not dataclasses.MISSING}
    args = ", ".join(f.name if f.default is dataclasses.MISSING else f"{f.name}=_default_{f.name}"
                     for f in fields)
    stores = "".join(f"    d[{f.name!r}] = {f.name}\n" for f in fields)
    made: dict[str, Any] = {}  # made from source, as dataclasses makes the one it replaces
    exec(f"def __init__(self, {args}):\n    d = self.__dict__\n{stores}", defaults, made)
    init = made["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    init.__annotations__ = dict(generated.__annotations__)
    GENERATED[cls] = generated
    cls.__init__ = init  # type: ignore[method-assign]
    return cls

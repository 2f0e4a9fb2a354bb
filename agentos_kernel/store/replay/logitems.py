"""A snapshot's append-only list read from its log when asked for (ReplayIndex.view): what
the widgets show of a list (its first items, the items an event appended) without the
fold's copy of every item."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any, overload

if TYPE_CHECKING:
    from .index import ReplayIndex


class LogItems(Sequence[dict[str, Any]]):
    """One append-only list of a snapshot (tools_invoked, ...), its items read from the log
    when asked for: equal to the fold's tuple, item for item."""

    def __init__(self, source: ReplayIndex, name: str, n: int) -> None:
        self.source, self.name, self.n = source, name, n

    def __len__(self) -> int:
        return self.n

    @overload
    def __getitem__(self, i: int) -> dict[str, Any]: ...

    @overload
    def __getitem__(self, i: slice) -> tuple[dict[str, Any], ...]: ...

    def __getitem__(self, i: int | slice) -> dict[str, Any] | tuple[dict[str, Any], ...]:
        if isinstance(i, slice):
            return tuple(self.source.item(self.name, j) for j in range(*i.indices(self.n)))
        if i < 0:
            i += self.n
        if not 0 <= i < self.n:
            raise IndexError(f"item {i} of {self.n}")
        return self.source.item(self.name, i)

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return (self.source.item(self.name, j) for j in range(self.n))

    def same_list(self, other: object) -> bool:
        """`other` is this list of the same index (one a prefix of the other)."""
        return isinstance(other, LogItems) and other.source is self.source and other.name == self.name

    def __eq__(self, other: object) -> bool:
        if self.same_list(other):
            return self.n == len(other)  # type: ignore[arg-type]
        return isinstance(other, Sequence) and len(other) == self.n and tuple(self) == tuple(other)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"LogItems({self.name}, {self.n} item(s))"

"""The snapshot after any prefix of a log, in time bounded by a constant (for the widgets).

Handing out one snapshot per event (`replay_steps` kept in a list) costs O(N²) time and
memory: at 100k events, 90 s and 10 GB. `ReplayIndex` folds the log once, keeping a
`Mark` every `every` events (scalars and list lengths, never the lists: they only grow),
then answers `snapshot(k)` by resuming the nearest mark at or before k, or the fold it
left at its last answer when that is nearer, and folding at most `every - 1` events.
The same pass records each event's type and layer and where each hook fired, so a
stepper can find an event's layer counts and gating hook decisions without a scan.
`folded` and `built` count the work done after the pass (the regression guard's hook).
"""

from __future__ import annotations

from array import array
from bisect import bisect_left
from collections.abc import Sequence

from agentos_kernel.store.events import Event
from agentos_kernel.store.recorder import layer_for
from agentos_kernel.store.replay.fold import Mark, Snapshot, _Fold
from agentos_kernel.store.replay.index import latest_run

from .logview import rows_of

CHECKPOINT_EVERY = 256
"""Events between two marks: a step folds fewer than this; memory is a few kB per mark."""


class _Codes:
    """Strings stored as small ints (a type or layer per event costs 2 bytes, not a pointer)."""

    def __init__(self) -> None:
        self.names: list[str] = []
        self.code: dict[str, int] = {}

    def __call__(self, name: str) -> int:
        c = self.code.get(name)
        if c is None:
            c = self.code[name] = len(self.names)
            self.names.append(name)
        return c


class ReplayIndex:
    """Snapshots, layers and hook decisions at any position of one session's events."""

    def __init__(self, events: Sequence[Event], every: int = CHECKPOINT_EVERY) -> None:
        self.events, self.every, self.folded, self.built = events, every, 0, 0
        self._types, self._layers = _Codes(), _Codes()
        types, layers = array("H"), array("H")
        by_type: dict[str, array[int]] = {}
        by_hook: dict[str, array[int]] = {}
        fold = _Fold()
        marks: list[Mark] = [fold.mark()]
        counts: dict[int, int] = {}
        layer_marks: list[dict[int, int]] = [{}]
        for i, (eid, sid, t, actor, payload) in enumerate(rows_of(events)):
            fold.fold(eid, sid, t, actor, payload)
            types.append(self._types(t))
            lc = self._layers(layer_for(t, payload))
            layers.append(lc)
            counts[lc] = counts.get(lc, 0) + 1
            by_type.setdefault(t, array("q")).append(i)
            if t == "hook.fired" and isinstance(payload, dict):
                by_hook.setdefault(str(payload.get("hook")), array("q")).append(i)
            if (i + 1) % every == 0:
                marks.append(fold.mark())
                layer_marks.append(dict(counts))
        self._ahead = fold  # the fold after every event: its lists hold every mark's lists
        self._marks, self._layer_marks = marks, layer_marks
        self._type_codes, self._layer_codes = types, layers
        self._by_type, self._by_hook = by_type, by_hook
        self._cursor: tuple[int, _Fold] | None = None
        self._recent: dict[int, Snapshot] = {}

    def __len__(self) -> int:
        return len(self._type_codes)

    def type(self, i: int) -> str:
        """The type of event i (0-based)."""
        return self._types.names[self._type_codes[i]]

    def layer(self, i: int) -> str:
        """The layer of event i (0-based), as recorder.layer_of says."""
        return self._layers.names[self._layer_codes[i]]

    def snapshot(self, k: int) -> Snapshot:
        """The snapshot after the first k events (0 <= k <= len)."""
        if not 0 <= k <= len(self):
            raise IndexError(f"position {k} is outside 0..{len(self)}")
        if k in self._recent:
            return self._recent[k]
        if k == len(self):
            fold = self._ahead
        else:
            base = k // self.every * self.every
            if self._cursor is not None and base <= self._cursor[0] <= k:
                pos, fold = self._cursor
            else:
                pos, fold = base, _Fold.resume(self._marks[k // self.every], self._ahead)
            for row in rows_of(self.events, pos, k):
                fold.fold(*row)
                self.folded += 1
            self._cursor = (k, fold)
        self.built += 1
        snap = fold.snapshot()
        if len(self._recent) >= 4:  # a scrubber's diff asks for k-1 and k: keep the last few
            del self._recent[next(iter(self._recent))]
        self._recent[k] = snap
        return snap

    def layer_counts(self, k: int) -> dict[str, int]:
        """Events per layer among the first k (layers with none left out)."""
        j = k // self.every
        counts = dict(self._layer_marks[j])
        for c in self._layer_codes[j * self.every:k]:
            counts[c] = counts.get(c, 0) + 1
        return {self._layers.names[c]: n for c, n in counts.items()}

    def hook_run(self, i: int, hook: str) -> list[int]:
        """Positions of the hook.fired events of `hook` that decided on event i: the latest
        unbroken run of them before i and after the previous event of i's type
        (jupyter.layers.hook_decisions_for, answered by bisection instead of a scan)."""
        same = self._by_type.get(self.type(i), array("q"))
        j = bisect_left(same, i) - 1
        floor = same[j] if j >= 0 else -1
        return latest_run(self._by_hook.get(hook, array("q")), i, floor)  # (unchanged)

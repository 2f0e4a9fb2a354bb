"""What the magics return: small frozen values with a plain repr and a rich `_repr_html_`.

Both reprs are built only from the log's contents, so in deterministic mode they are the
same on every run (nbval compares `text/plain` and `text/html` byte for byte): no paths,
no wall-clock times, no memory addresses.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from ..errors import DomainError
from ..store.events import Event
from ..store.recorder import layer_of
from ..store.replay.fold import Snapshot, replay
from ..store.replay.summary import SnapshotSummary
from ..telemetry.trace import summary
from ..workspace import Workspace
from .layers import FAILURE_TYPES, LAYER_COLORS, LAYER_NAMES, esc, pretty, schema_of, text_on
from .runfacts import RunFacts, of_events
from .shell import bundle, plain_text

_BOX = "border:1px solid #bbb;border-radius:4px;padding:6px 10px;margin:2px 0;font-family:monospace"


def _badge(ok: bool, text: str) -> str:
    color = "#1a7f37" if ok else "#cf222e"
    return (f'<span style="background:{color};color:#fff;padding:1px 6px;border-radius:3px">'
            f"{esc(text)}</span>")


def _cell(layer: str, style: str) -> str:
    return (f'<span title="{esc(LAYER_NAMES[layer])}" style="{style};padding:1px 5px;'
            f'margin-right:2px;border-radius:3px">{layer} ')


_CELLS = {layer: (_cell(layer, "color:#888"),
                  _cell(layer, f"background:{LAYER_COLORS[layer]};color:{text_on(layer)}"))
          for layer in LAYER_NAMES}
"""Each layer's strip cell up to its count, (none, some): made once, not per run shown."""


def _layer_strip(counts: dict[str, int]) -> str:
    # A layer outside L1..L8 (a domain.error's payload can name any) raises KeyError, as it did.
    return "".join(f"{_CELLS[layer][n != 0]}{n}</span>" for layer, n in counts.items())


_HEADS = {k: f'<tr><td style="text-align:left;padding-right:8px;vertical-align:top"><b>{esc(k)}</b></td>'
             '<td style="text-align:left">'
          for k in ("cycle", "phases", "output", "error", "failed", "path", "events", "usage", "next")}
"""A run's row up to its value, for each key AgentRun._rows makes (its only keys)."""


@dataclass(frozen=True)
class EventView:
    """One event with its layer and the schema that checked its payload."""

    event: Event
    """The event as logged."""

    @property
    def layer(self) -> str:
        return layer_of(self.event)

    def line(self) -> str:
        ev = self.event
        return f"#{ev.seq} {ev.type} ({self.layer}, {ev.actor}): {summary(ev)}"

    def __repr__(self) -> str:
        return self.line()

    def _repr_html_(self) -> str:
        ev = self.event
        checked = schema_of(ev)
        return (f'<div style="{_BOX}"><b>#{ev.seq} {esc(ev.type)}</b> · {self.layer} '
                f"{esc(LAYER_NAMES.get(self.layer, ''))} · actor {esc(ev.actor)}<br>{esc(summary(ev))}"
                f"<br>payload checked against <code>{esc(checked or '-')}</code>"
                f"<pre>{esc(pretty(ev.payload))}</pre></div>")


@dataclass(frozen=True)
class CycleInfo:
    """Where an L8 cycle ended (from Runtime.run_cycle)."""

    cycle_id: str
    """The cycle that ran (workflows/cycles/<id>.md)."""
    verdict: str
    """done | halted | abort."""
    reason: str
    """Why it ended there."""
    visited: tuple[str, ...]
    """Phases entered, in order."""
    generations: int
    """Phase runs."""


@dataclass(frozen=True)
class AgentRun:
    """What `%agent` returns: one request's verdict and its events, as the log holds them."""

    session_id: str
    """The session (its log is sessions/<id>/.events.jsonl)."""
    ok: bool
    """The session closed ok."""
    prompt: str
    """The request as logged in session.start (after redaction)."""
    profile: str
    """Runtime profile that ran it."""
    model: str
    """Model named by the profile."""
    output: str | None
    """The worker's output when ok."""
    error: DomainError | None
    """Why it failed closed, when it did."""
    events: tuple[Event, ...] = field(repr=False)
    """Every event of the session, in order."""
    workspace: Workspace = field(repr=False, compare=False)
    """Where the session lives."""
    cycle: CycleInfo | None = None
    """For `%agent --cycle`: the cycle's verdict and the phases it visited."""

    @classmethod
    def logged(cls, events: Callable[[], tuple[Event, ...]], facts: RunFacts, **fields: Any) -> AgentRun:
        """A run whose `events` are made by `events()` when first read (a notebook that only
        shows the run never needs them) and whose rows show `facts` (runfacts.of_logged:
        what `of_events` finds in those events). `fields`: the other fields."""
        run = cls(events=(), **fields)
        del run.__dict__["events"]  # read through _Made until made
        run.__dict__["_make_events"] = events
        run.__dict__["_facts"] = facts
        return run

    @cached_property
    def snapshot(self) -> Snapshot:
        """The snapshot recomputed from the log (I-1): folded from `events` when first asked
        for (a run that is never shown or read need not fold it)."""
        return replay(self.events)

    def event(self, seq: int) -> EventView:
        """The event with this 1-based position."""
        if not 1 <= seq <= len(self.events):
            raise IndexError(f"{self.session_id} has events 1..{len(self.events)}, not {seq}")
        return EventView(self.events[seq - 1])

    @property
    def failure(self) -> Event | None:
        """The event that recorded the failure (domain.error, schema.violation, ...), if any."""
        if self.ok:
            return None
        failures = [e for e in self.events if e.type in FAILURE_TYPES]
        code = self.error.code if self.error else None
        exact = [e for e in failures if isinstance(e.payload, dict) and e.payload.get("code") == code]
        return next(iter(exact or failures), None)

    @property
    def failures(self) -> list[Event]:
        """Every event that recorded something failing closed, in log order."""
        return [e for e in self.events if e.type in FAILURE_TYPES]

    @property
    def path(self) -> list[str]:
        """The Plan-Work-Review states the request went through."""
        return ["INTAKE"] + [e.payload.get("to") for e in self.events if e.type == "agent.transition"]

    @cached_property
    def _facts(self) -> RunFacts:
        # Taken once per run (a notebook formats it as text and as HTML): from `events` and
        # the snapshot, or set by `logged` from the events as appended.
        return of_events(self.events, lambda: self.snapshot, path=self.cycle is None)

    @property
    def _counts(self) -> dict[str, int]:
        return self._facts.counts

    def _lines(self) -> list[tuple[str, str]]:
        return self._rows

    @cached_property
    def _rows(self) -> list[tuple[str, str]]:
        facts = self._facts
        rows = []
        if self.cycle is not None:
            c = self.cycle
            rows.append(("cycle", f"{c.cycle_id}: verdict {c.verdict} after {c.generations} phase run(s): "
                                  f"{c.reason}"))
            rows.append(("phases", " → ".join(c.visited) or "(not started)"))
        if self.ok:
            rows.append(("output", str(self.output)))
        elif self.error is not None or self.cycle is None:
            fail = facts.failure(self.error.code if self.error else None)
            where = (f" at {fail.layer}, event {fail.seq} by {fail.actor}" if fail is not None else "")
            rows.append(("error", f"{self.error.code if self.error else '?'}{where}: "
                                  f"{self.error.message if self.error else ''}"))
        if facts.failures:
            shown = [f"#{f.seq} {f.layer} {f.name}" for f in facts.failures[:5]]
            more = len(facts.failures) - len(shown)
            rows.append(("failed", " · ".join(shown) + (f" (+{more} more)" if more else "")))
        if self.cycle is None:
            rows.append(("path", " → ".join(["INTAKE", *(facts.path or ())])))
        rows.append(("events", f"{facts.total} ("
                     + " · ".join(f"{k} {v}" for k, v in facts.counts.items()) + ")"))
        rows.append(("usage", f"{facts.llm_calls} LLM calls · {facts.input_tokens} in / "
                              f"{facts.output_tokens} out tokens · ${facts.cost_usd:.6f}"))
        rows.append(("next", f"%replay {self.session_id} · %events {self.session_id} · "
                             f"LayerStepper({self.session_id!r})"))
        return rows

    def _head(self) -> str:
        verdict = "ok" if self.ok else "NOT ok (fail-closed)"
        return f"{self.session_id} {verdict} — {self.prompt!r} (profile {self.profile}, model {self.model})"

    def __repr__(self) -> str:
        return "\n".join([f"AgentRun {self._head()}"] + [f"  {k + ':':<7} {v}" for k, v in self._lines()])

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, str] | None:
        """text/plain and text/html at once, each exactly what IPython's own formatter makes
        of this run (the notebook stores the same bytes), so a cell's display skips asking the
        two formatters one by one and pretty-printing the repr (shell.py)."""
        return bundle(include, exclude, {"text/plain": lambda f: plain_text(self, f),
                                         "text/html": lambda f: self._repr_html_()})

    def _repr_html_(self) -> str:
        verdict = _badge(self.ok, "ok" if self.ok else "NOT ok · fail-closed")
        strip = _layer_strip(self._counts)
        rows = "".join(f'{_HEADS[k]}{strip if k == "events" else esc(v)}</td></tr>' for k, v in self._lines())
        return (f'<div class="agentos-run" style="{_BOX}">{verdict} <b>{esc(self.session_id)}</b> '
                f"{esc(repr(self.prompt))} · profile {esc(self.profile)} ({esc(self.model)})"
                f"<table>{rows}</table></div>")


class _Made:
    """`AgentRun.events` of a run made by `AgentRun.logged` (a non-data descriptor: once made,
    the tuple is the instance's own field, read as any other, compared, copied and replaced as
    before)."""

    def __get__(self, run: AgentRun | None, owner: type | None = None) -> Any:
        if run is None:
            return self
        make = run.__dict__.get("_make_events")
        if make is None:  # made meanwhile by another thread
            return run.__dict__["events"]
        made = make()
        object.__setattr__(run, "events", made)
        run.__dict__.pop("_make_events", None)
        return made


AgentRun.events = _Made()  # type: ignore[assignment]  # after @dataclass: no default for the field


@dataclass(frozen=True)
class SnapshotView:
    """What `%replay` returns: a Snapshot recomputed from the log alone, and where it stops."""

    snapshot: Snapshot | SnapshotSummary
    """The recomputed state (a SnapshotSummary with `%replay --summary`)."""
    at: int | None
    """Events folded (None: all of them)."""
    total: int
    """Events in the log."""
    warning: str | None = None
    """Why the log does not verify (integrity.verify_log), shown above the snapshot."""

    def __getattr__(self, name: str) -> Any:
        # `%replay s0001`.state reads like the Snapshot itself.
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self.snapshot, name)

    def _title(self) -> str:
        upto = f"after event {self.at} of {self.total}" if self.at is not None else \
            f"after all {self.total} events"
        kind = "snapshot" if isinstance(self.snapshot, Snapshot) else \
            f"summary (snapshot_v2: counts and the last {self.snapshot.recent_limit} items)"
        return f"{kind} of {self.snapshot.session_id} {upto} (recomputed from the log alone)"

    def _rows(self) -> list[tuple[str, str]]:
        rows = []
        for key, value in self.snapshot.to_dict().items():
            if key != "schema_version":
                rows.append((key, json.dumps(value, ensure_ascii=False, sort_keys=True)))
        return rows

    def __repr__(self) -> str:
        warn = [f"WARNING: the log does not verify: {self.warning}"] if self.warning else []
        return "\n".join(warn + [self._title()] + [f"  {k}: {v}" for k, v in self._rows()])

    def _repr_html_(self) -> str:
        rows = "".join(f'<tr><td style="text-align:left"><b>{esc(k)}</b></td>'
                       f'<td style="text-align:left"><code>{esc(v)}</code></td></tr>'
                       for k, v in self._rows())
        warn = (f"{_badge(False, 'does not verify')} {esc(self.warning)}<br>" if self.warning else "")
        return f'<div style="{_BOX}">{warn}{esc(self._title())}<table>{rows}</table></div>'

"""Polyglot Parity made checkable: check one log per conformance scenario.

`LOG_DIR/<scenario-id>/.events.jsonl` is the log an implementation (ours, or a Go or
TypeScript one) wrote for that scenario. Each is audited (Audit Completeness) and checked
against the scenario's `expect`: the close's ok, event types, counted event matches,
order constraints, fail-closed codes and text that must not appear. A missing log fails,
except for an optional (L8) scenario, which is skipped.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...store.events import LOG_NAME
from .log import audit_log, outside, read_entries
from .model import Entry
from .scenarios import Scenario, load_scenarios


@dataclass(frozen=True)
class ScenarioResult:
    """How one scenario's log fared."""

    id: str
    """The scenario id."""
    status: str
    """pass, fail, or skip (an optional scenario without a log)."""
    failures: tuple[str, ...]
    """What the log does not show, one line each (empty when it passes)."""
    log: str | None
    """The log checked (None when there is none)."""

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "status": self.status, "failures": list(self.failures),
                "log": self.log}


@dataclass(frozen=True)
class ConformReport:
    """The parity table for one LOG_DIR."""

    log_dir: str
    """The directory checked."""
    results: tuple[ScenarioResult, ...]
    """One row per scenario, sorted by id."""

    @property
    def ok(self) -> bool:
        """No scenario failed (a skipped optional one is not a failure)."""
        return all(r.status != "fail" for r in self.results)

    def to_dict(self) -> dict[str, Any]:
        return {"log_dir": self.log_dir, "ok": self.ok,
                "results": [r.to_dict() for r in self.results]}


def conform(log_dir: Path | str, scenarios: list[Scenario] | None = None,
            only: list[str] | None = None) -> ConformReport:
    """Check `log_dir/<id>/.events.jsonl` for every scenario (or those named in `only`;
    KeyError names an unknown one). FileNotFoundError when `log_dir` is not a directory."""
    log_dir = Path(log_dir)
    if not log_dir.is_dir():
        raise FileNotFoundError(f"{log_dir}: not a directory; LOG_DIR holds <scenario-id>/{LOG_NAME}")
    scenarios = load_scenarios() if scenarios is None else scenarios
    if only:
        known = {s.id for s in scenarios}
        unknown = [i for i in only if i not in known]
        if unknown:
            raise KeyError(f"unknown scenario {unknown[0]!r}; scenarios: {', '.join(sorted(known))}")
        scenarios = [s for s in scenarios if s.id in only]
    return ConformReport(str(log_dir), tuple(check_scenario(s, log_dir / s.id / LOG_NAME)
                                             for s in sorted(scenarios, key=lambda s: s.id)))


def check_scenario(s: Scenario, log: Path) -> ScenarioResult:
    """One scenario's row: every expectation the log at `log` does not meet."""
    away = outside(log, log.parent.parent) if log.is_file() else None
    if away:  # a symlink planted in LOG_DIR would have the check read a file from elsewhere
        return ScenarioResult(s.id, "fail", (away,), None)
    if not log.is_file():
        if s.optional:
            return ScenarioResult(s.id, "skip", (f"no log ({s.plane} is optional)",), None)
        return ScenarioResult(s.id, "fail", (f"no log at {log}",), None)
    exp = s.expect
    failures: list[str] = []
    if exp.get("audit", True):
        report = audit_log(log)
        if report.gaps:
            g = report.gaps[0]
            failures.append(f"audit: {len(report.gaps)} gap(s), first: {g.check} at seq {g.seq}, "
                            f"line {g.line}: {g.what}")
    entries, _ = read_entries(log)
    close = next((e for e in entries if e.type == "session.close"), None)
    if close is None:
        failures.append("closed: no session.close")
    elif close.payload.get("ok") is not exp["ok"]:
        failures.append(f"ok: session.close ok is {close.payload.get('ok')!r}, expected {exp['ok']}")
    present = {e.type for e in entries}
    missing = [t for t in exp.get("types", []) if t not in present]
    if missing:
        failures.append(f"types: no {', '.join(missing)} event")
    for m in exp.get("events", []):
        n = sum(1 for e in entries if matches(e, m))
        hi = m.get("max")
        lo = m.get("min", 1 if hi is None else min(1, hi))
        if n < lo or (hi is not None and n > hi):
            want = f">= {lo}" if hi is None else f"{lo}" if lo == hi else f"{lo}..{hi}"
            failures.append(f"events: {shown(m)} appears {n} time(s), expected {want}")
    for o in exp.get("order", []):
        failures += _order(entries, o["first"], o["then"])
    codes = set().union(*(e.codes() for e in entries)) if entries else set()
    failures += [f"codes: {c} never appears (as a payload code, error.code or in the close reason)"
                 for c in exp.get("codes", []) if c not in codes]
    failures += _absent(log, exp.get("absent_text", []))
    return ScenarioResult(s.id, "fail" if failures else "pass", tuple(failures), str(log))


def matches(e: Entry, m: dict[str, Any]) -> bool:
    """The event has the matcher's type and each payload field it names."""
    return e.type == m["type"] and all(
        k in e.payload and e.payload[k] == v for k, v in m.get("payload", {}).items())


def shown(m: dict[str, Any]) -> str:
    """A matcher as text: `hook.fired{hook=PreToolUse, decision=deny}`."""
    fields = ", ".join(f"{k}={v}" for k, v in m.get("payload", {}).items())
    return f"{m['type']}{{{fields}}}" if fields else m["type"]


def _order(entries: list[Entry], first: dict[str, Any], then: dict[str, Any]) -> list[str]:
    a = next((e for e in entries if matches(e, first)), None)
    b = next((e for e in entries if matches(e, then)), None)
    if a is None or b is None:
        absent = " and ".join(shown(m) for m, e in ((first, a), (then, b)) if e is None)
        return [f"order: {shown(first)} before {shown(then)}, but there is no {absent}"]
    if a.pos >= b.pos:
        return [f"order: the first {shown(first)} (line {a.line}) must come before the first "
                f"{shown(then)} (line {b.line})"]
    return []


def _absent(log: Path, texts: list[str]) -> list[str]:
    if not texts:
        return []
    found = []
    with log.open("rb") as f:
        lines = f.read().split(b"\n")
    for text in texts:
        needle = text.encode()
        hit = next((n for n, line in enumerate(lines, 1) if needle in line), None)
        if hit is not None:
            found.append(f"absent_text: {text!r} appears in the log at line {hit}")
    return found


__all__ = ["ConformReport", "ScenarioResult", "check_scenario", "conform", "matches"]

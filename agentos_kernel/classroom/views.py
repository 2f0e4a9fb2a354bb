"""A whole class's sessions, for the instructor (issue 14; notebooks/12_class_dashboard).

A CLASS SOURCE is an iterable of (student, session_id, events): `workspaces_source(root)` reads
a folder of per-student workspaces (`<root>/<student>/sessions/<id>/.events.jsonl`),
`postgres_source(dsn)` reads every student's sessions the instructor role sees in the
PostgreSQL store. `class_frame(source)` folds each session into one row; the views
(`sessions_per_student`, `failures_by_code`, `cost_per_lab`, `class_timeline`) are tables
over that frame, and jupyter/figures/classroom.py draws them. `simulate_class` makes a class to
look at: scripted provider, deterministic, some sessions broken with the fault presets so
real fail-closed codes are in the logs. This module only reads logs, except
`simulate_class`, which runs requests through the Runtime like any student would.
pandas is imported inside the functions that need it.
"""

from __future__ import annotations

import random
import shutil
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..config import CONFIG_NAME
from ..store.events import Event
from ..store.jsonl import JsonlEventStore
from ..store.recorder import failure_code

if TYPE_CHECKING:
    import pandas as pd

ClassSource = Iterable[tuple[str, str, Sequence[Event]]]
"""(student, session_id, events), one item per session."""

LABS = ("lab-01-tools", "lab-02-hooks", "lab-03-skills", "lab-04-handoffs", "lab-05-cycles")
NO_LAB = "(no lab)"
# What students of each lab break, as fault presets (providers/faults.py): each gives the
# fail-closed code the spec names for it (TOOL_NOT_FOUND, GATE_DENIED, ...), from a real run.
LAB_FAULTS: dict[str, tuple[str, ...]] = {
    "lab-01-tools": ("unknown_tool", "tool_out_of_scope"),
    "lab-02-hooks": ("hook_deny", "hook_error", "prompt_denied"),
    "lab-03-skills": ("schema_violation",),
    "lab-04-handoffs": ("malformed_worker", "reviewer_fail"),
    "lab-05-cycles": ("provider_down", "malformed_planner"),
}
NAMES = ("Ada", "Grace", "Alan", "Edsger", "Barbara", "Donald", "Frances", "Ken")
_DAY_MS = 24 * 3600 * 1000
_SLOT_MS = 2 * 3600 * 1000  # each lab is a two-hour class meeting, from 09:00 UTC
_MEETS_MS = 9 * 3600 * 1000
COLUMNS = ("student", "session_id", "lab", "start", "events", "closed", "ok", "code",
           "tokens_in", "tokens_out", "cost_usd")


@dataclass(frozen=True)
class SimulatedClass:
    """What `simulate_class` wrote."""

    root: Path
    """The folder of per-student workspaces (a `workspaces_source` reads it)."""
    students: tuple[str, ...]
    """Student names, which are also their folder names (and valid database role names)."""
    faults: dict[tuple[str, str], str]
    """(student, session_id) -> the fault preset it ran with, for every broken session."""

    @property
    def sessions(self) -> int:
        return sum(len(JsonlEventStore(self.root / s / "sessions").sessions()) for s in self.students)


def lab_of(session_id: str) -> str:
    """The lab a session belongs to, by the course's naming rule `<lab>.<n>` (students run
    `%agent --session lab-02-hooks.3 ...`); NO_LAB for any other id (e.g. s0001)."""
    lab, dot, n = session_id.rpartition(".")
    return lab if dot and lab and n.isdigit() else NO_LAB


def simulate_class(root: Path | str, students: int = 100, sessions: int = 10, *, seed: int = 14,
                   fail_share: float = 0.12, labs: Sequence[str] = LABS,
                   lab_faults: dict[str, tuple[str, ...]] | None = None) -> SimulatedClass:
    """Write a class into `root`: `students` workspaces (`student000`, ...), each running
    `sessions` requests spread over the labs (ids `<lab>.<n>`), lab j meeting on day j; a
    share `fail_share` of them run under one of the lab's fault presets. Deterministic for a
    seed: the scripted profile's logical clock starts at each session's simulated minute."""
    from ..kernel import Runtime
    from ..providers.faults import load_fault_plan
    from ..workspace import find_workspace, reference_dir

    rng = random.Random(seed)
    presets = LAB_FAULTS if lab_faults is None else lab_faults
    base = Path(root)
    names = tuple(f"student{i:03d}" for i in range(students))
    broken: dict[tuple[str, str], str] = {}
    loaded: dict[str | None, Runtime] = {}

    def runtime(ws: Path, preset: str | None) -> Runtime:
        # Every student's workspace is the same agentos.yaml over the reference contracts, so
        # the contracts are read and checked once per fault plan (most of a load's time) and
        # shared; each student's Runtime has its own workspace, so its own sessions/ store.
        if preset not in loaded:
            loaded[preset] = Runtime.from_workspace(ws, faults=load_fault_plan(preset) if preset else None)
        t = loaded[preset]
        return Runtime(find_workspace(ws), t.config, t.profile, t.schemas, t.agents, t.skills, t.tools,
                       t.hooks, t.faults)

    for name in names:
        ws = base / name
        ws.mkdir(parents=True, exist_ok=False)
        # Only the config: a workspace's missing contract dirs are the reference ones.
        shutil.copy2(reference_dir() / CONFIG_NAME, ws / CONFIG_NAME)
        runtimes: dict[str | None, Runtime] = {}
        count: dict[str, int] = {}
        for k in range(sessions):
            lab = labs[k * len(labs) // sessions]
            count[lab] = count.get(lab, 0) + 1
            sid = f"{lab}.{count[lab]}"
            start = labs.index(lab) * _DAY_MS + _MEETS_MS + rng.randrange(_SLOT_MS // 60_000) * 60_000
            preset = None
            if presets.get(lab) and rng.random() < fail_share:
                preset = rng.choice(presets[lab])
                broken[name, sid] = preset
            if preset not in runtimes:
                runtimes[preset] = runtime(ws, preset)
            rt = runtimes[preset]
            rt.logical_start_ms = start
            rt.handle_user_request(f"hello, greet {rng.choice(NAMES)}", session_id=sid)
    return SimulatedClass(base, names, broken)


def workspaces_source(root: Path | str) -> Iterator[tuple[str, str, list[Event]]]:
    """Every session of every workspace directly under `root` (one folder per student,
    named after them), in name order."""
    base = Path(root)
    if not base.is_dir():
        raise FileNotFoundError(f"{base}: no such folder of student workspaces")
    for ws in sorted(p for p in base.iterdir() if (p / "sessions").is_dir()):
        store = JsonlEventStore(ws / "sessions")
        for sid in store.sessions():
            yield ws.name, sid, list(store.read(sid))


def postgres_source(dsn: str) -> Iterator[tuple[str, str, list[Event]]]:
    """Every session the role at `dsn` can read in the PostgreSQL store, by owner (the student's
    role): the whole class for an instructor role, only its own for a student's."""
    from ..store.postgres.store import PostgresEventStore

    me = PostgresEventStore(dsn)
    for owner in me.owners():
        store = PostgresEventStore(dsn, owner=owner)
        for sid in store.sessions():
            yield owner, sid, list(store.read(sid))


def session_row(student: str, session_id: str, events: Sequence[Event],
                lab: Callable[[str], str] = lab_of) -> dict[str, Any]:
    """One session folded into the dashboard's row (see COLUMNS): `code` is the root cause,
    the first fail-closed code its log records (None when none); `ok` is None while open."""
    close = next((e for e in reversed(events) if e.type == "session.close"), None)
    code = next((c for e in events if (c := failure_code(e)) is not None), None)
    tin = tout = 0
    cost = 0.0
    for e in events:
        if e.type == "llm.response" and isinstance(e.payload, dict):
            usage = e.payload.get("usage") or {}
            tin += int(usage.get("input_tokens", 0))
            tout += int(usage.get("output_tokens", 0))
            cost += float(usage.get("cost_usd", 0.0))
    ok = bool(close.payload.get("ok")) if close is not None and isinstance(close.payload, dict) else None
    return {"student": student, "session_id": session_id, "lab": lab(session_id),
            "start": events[0].ts if events else None, "events": len(events), "closed": close is not None,
            "ok": ok, "code": code, "tokens_in": tin, "tokens_out": tout, "cost_usd": round(cost, 8)}


def class_frame(source: ClassSource, lab: Callable[[str], str] = lab_of) -> pd.DataFrame:
    """One row per session of the class (COLUMNS), sorted by student then start; `start` as
    UTC timestamps; `ok` (boolean) NA while a session is open, `code` (string) NA when
    nothing failed closed."""
    import pandas as pd

    rows = [session_row(s, sid, evs, lab) for s, sid, evs in source]
    frame = pd.DataFrame(rows, columns=list(COLUMNS))
    frame["start"] = pd.to_datetime(frame["start"], utc=True)
    frame["ok"] = frame["ok"].astype("boolean")
    frame["code"] = frame["code"].astype("string")
    return frame.sort_values(["student", "start", "session_id"], ignore_index=True)


def sessions_per_student(frame: pd.DataFrame) -> pd.DataFrame:
    """Per student: sessions, ok, failed (closed not ok), open, and the share that failed;
    students with the most failures first (who needs help)."""
    ok = frame["ok"].fillna(False).astype(bool)
    failed = frame["closed"] & ~ok
    table = frame.assign(ok=ok, failed=failed, open=~frame["closed"]).groupby("student").agg(
        sessions=("session_id", "count"), ok=("ok", "sum"), failed=("failed", "sum"), open=("open", "sum"))
    table["failed_share"] = (table["failed"] / table["sessions"]).round(3)
    return table.sort_values(["failed", "student"], ascending=[False, True]).astype(
        {"sessions": int, "ok": int, "failed": int, "open": int})


def failures_by_code(frame: pd.DataFrame) -> pd.DataFrame:
    """Per fail-closed root-cause code: sessions, distinct students, how many of those sessions
    still closed ok (a retry or rework recovered), and the labs it came from; the most
    frequent first."""
    bad = frame[frame["code"].notna()]
    table = bad.assign(recovered=bad["ok"].fillna(False).astype(bool)).groupby("code").agg(
        sessions=("session_id", "count"), students=("student", "nunique"), recovered=("recovered", "sum"),
        labs=("lab", lambda s: ", ".join(sorted(set(s)))))
    return table.sort_values(["sessions", "code"], ascending=[False, True])


def cost_per_lab(frame: pd.DataFrame) -> pd.DataFrame:
    """Per lab: sessions, tokens, total and mean cost (USD), and the cost of the failed sessions
    (what fail-closed runs spent before they stopped)."""
    failed = frame["closed"] & ~frame["ok"].fillna(False).astype(bool)
    table = frame.assign(failed_usd=frame["cost_usd"].where(failed, 0.0)).groupby("lab").agg(
        sessions=("session_id", "count"), tokens_in=("tokens_in", "sum"), tokens_out=("tokens_out", "sum"),
        cost_usd=("cost_usd", "sum"), mean_usd=("cost_usd", "mean"), failed_usd=("failed_usd", "sum"))
    return table.round({"cost_usd": 6, "mean_usd": 6, "failed_usd": 6})


def class_timeline(frame: pd.DataFrame, freq: str = "30min") -> pd.DataFrame:
    """Sessions started per `freq` bin across the class (only bins with sessions): how many,
    how many failed, by how many students, and the most common root cause in the bin (NA
    when none failed closed)."""
    import pandas as pd

    failed = frame["closed"] & ~frame["ok"].fillna(False).astype(bool)
    data = frame.assign(failed=failed, bin=frame["start"].dt.floor(freq))

    def top(codes: Any) -> Any:
        counts = codes.dropna().value_counts()
        return pd.NA if counts.empty else str(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[0][0])

    table = data.groupby("bin").agg(sessions=("session_id", "count"), failed=("failed", "sum"),
                                    students=("student", "nunique"), top_code=("code", top))
    table.index.name = "start"
    return table.astype({"failed": int, "top_code": "string"})

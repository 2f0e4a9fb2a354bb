"""Observability: `.events.jsonl` and the replay snapshot submitted, and both true.

1. sessions/example/.events.jsonl audits clean (`labs.audit.audit_log`: required event types,
   request/response and invoke/result pairs, payload schemas, close, chain when present);
2. replay_snapshot.json equals the project's replay (`agentos_kernel.store.replay.fold`) of that log,
   compared on these keys, accepting either the spec's or snapshot_v1's names:

   | compared as    | spec's replay example  | snapshot_v1 (agentos replay --json) |
   |----------------|------------------------|-------------------------------------|
   | closed         | closed                 | closed                              |
   | output         | output                 | output                              |
   | cost           | cost.input, cost.output| cost.input_tokens, cost.output_tokens|
   | agents         | agents (actor -> state)| roles (actor -> state)              |
   | tools_invoked  | [{name, args, ...}]    | [{id, name, args}] (name, args compared) |

   and, when the submitted snapshot has them (snapshot_v1), also ok, session_id, events,
   llm_calls, skill, state, close_reason, rework_count, escalated, amendments.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

from ...store.events import Event, LogError
from ...store.replay.fold import Snapshot, replay
from .model import CriterionResult, fail
from .submission import SubmissionFileError, inside, read_bytes

KEY = "observability"
LOG = "sessions/example/.events.jsonl"
SNAPSHOT = "replay_snapshot.json"
SPEC_KEYS = ("closed", "output", "cost", "agents", "tools_invoked")
EXTENDED_KEYS = ("ok", "session_id", "events", "llm_calls", "skill", "state", "close_reason",
                 "rework_count", "escalated", "amendments")
FIX = "regenerate replay_snapshot.json by replaying sessions/example/.events.jsonl"
LogSource = Callable[[str], bytes]
"""A student's (submission folder's) example log from elsewhere; LookupError names what is missing."""


def replay_log(data: bytes) -> Snapshot:
    """The project's replay of a log's bytes (8-field logs with numeric ts fold too);
    LogError names the line."""
    def events() -> Any:
        for n, line in enumerate(data.splitlines(), 1):
            if line.strip():
                try:
                    obj = orjson.loads(line)
                except orjson.JSONDecodeError as exc:
                    raise LogError(f"{LOG}:{n}: not JSON ({exc})") from None
                yield Event.from_dict(obj, where=f"{LOG}:{n}")
    return replay(events())


def compared_view(snap: dict[str, Any], *, replayed: bool) -> tuple[dict[str, Any], list[str]]:
    """The keys compared (see the table above) in one shape, and what is missing."""
    view: dict[str, Any] = {}
    missing: list[str] = []
    for k in ("closed", "output"):
        if k in snap:
            view[k] = snap[k]
        else:
            missing.append(k)
    cost = snap.get("cost")
    if isinstance(cost, dict) and ("input" in cost or "input_tokens" in cost):
        view["cost"] = {"input": cost.get("input", cost.get("input_tokens")),
                        "output": cost.get("output", cost.get("output_tokens"))}
    else:
        missing.append("cost")
    agents = snap.get("roles") if replayed or "agents" not in snap else snap["agents"]
    if isinstance(agents, dict):
        view["agents"] = agents
    else:
        missing.append("agents (or roles)")
    tools = snap.get("tools_invoked")
    if isinstance(tools, list):
        view["tools_invoked"] = [{"name": t.get("name"), "args": t.get("args")} if isinstance(t, dict) else t
                                 for t in tools]
    else:
        missing.append("tools_invoked")
    return view, missing


def compare_snapshot(submitted: dict[str, Any], replayed: Snapshot) -> list[str]:
    """Each difference between the submitted snapshot and the replay, one line each."""
    truth = replayed.to_dict()
    want, _ = compared_view(truth, replayed=True)
    got, missing = compared_view(submitted, replayed=False)
    problems = [f"{SNAPSHOT}: no {k!r}; the snapshot must hold the spec's replay keys "
                f"({', '.join(SPEC_KEYS)}); {FIX}" for k in missing]
    for k in SPEC_KEYS:
        if k in got and got[k] != want[k]:
            problems.append(f"{SNAPSHOT}: {k} is {_short(got[k])} but the replay of {LOG} gives "
                            f"{_short(want[k])}; {FIX}")
    for k in EXTENDED_KEYS:
        if k in submitted and submitted[k] != truth[k]:
            problems.append(f"{SNAPSHOT}: {k} is {_short(submitted[k])} but the replay gives "
                            f"{_short(truth[k])}; {FIX}")
    return problems


def _short(v: Any) -> str:
    text = orjson.dumps(v).decode()
    return text if len(text) <= 80 else text[:77] + "..."


def check(root: Path, log: LogSource | None = None) -> CriterionResult:
    """The observability criterion for the submission at `root`; with `log`, its example log
    is read from there (a PostgreSQL store: `agentos grade --logs`) instead of its folder."""
    from ..audit.log import audit_lines, audit_log  # the audit branch's module; imported on use

    problems: list[str] = []
    try:
        data = read_bytes(root, LOG) if log is None else log(root.name)
    except (SubmissionFileError, LookupError) as exc:
        return fail(KEY, [f"{exc.args[0] if exc.args else exc}: submit the session log the runtime "
                          "wrote for the canonical request"])
    try:
        report = audit_log(inside(root, LOG)) if log is None else \
            audit_lines(data.splitlines(keepends=True), LOG)
    except LogError as exc:
        return fail(KEY, [f"{exc}: the log cannot be audited"])
    problems += [f"{LOG}{'' if g.line is None else f':{g.line}'}: audit {g.check}: {g.what}"
                 for g in report.gaps]  # a whole-log gap (no close, say) has no line
    try:
        snap = replay_log(data)
    except LogError as exc:
        return fail(KEY, [*problems, f"{exc}: the log cannot be replayed"])
    try:
        submitted = orjson.loads(read_bytes(root, SNAPSHOT))
    except SubmissionFileError as exc:
        return fail(KEY, [*problems, f"{exc}: {FIX}"])
    except orjson.JSONDecodeError as exc:
        return fail(KEY, [*problems, f"{SNAPSHOT}: not valid JSON ({exc}); {FIX}"])
    if not isinstance(submitted, dict):
        return fail(KEY, [*problems, f"{SNAPSHOT}: must be a JSON object; {FIX}"])
    problems += compare_snapshot(submitted, snap)
    if problems:
        return fail(KEY, problems)
    return CriterionResult(KEY, True, f"{LOG} audits clean ({snap.events} events); {SNAPSHOT} equals its "
                           "replay")

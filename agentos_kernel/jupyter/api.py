"""The workbench's library calls; the magics only parse arguments and call these.

Failures a user can cause (a bad profile, an unknown fault preset, an unknown session, a
workspace that cannot be loaded) raise ContractError, FaultPlanError, UnknownSession or
WorkbenchError, each with a one-line message; the magics turn them into UsageError.
"""

from __future__ import annotations

import contextlib
import re
import tempfile
import warnings
from functools import partial
from pathlib import Path
from typing import Any

from ..config import load_config
from ..errors import DomainError, Err, Problem
from ..kernel import Runtime
from ..providers.faults import load_fault_plan
from ..runs.rerun import rerun
from ..schemas.registry import SchemaRegistry
from ..schemas.textcheck import text_error
from ..skills import frontmatter
from ..skills.registry import discover
from ..store.events import LOG_NAME, Event, TornTailWarning, canonical
from ..store.integrity import VerifyReport, verify_log
from ..store.replay.fold import replay
from ..store.replay.summary import summarize, summarize_path
from ..telemetry.livetrace import LiveTrace
from ..tools.builtin import BUILTIN_TOOLS
from ..workspace import find_workspace
from .display import AgentRun, CycleInfo, SnapshotView
from .runfacts import made_events, of_logged, own_events, plain_fields, whole_log
from .runtime_cache import cached_runtime
from .source import SessionData, load_session, session_log
from .verdicts import RerunView, SkillCheck, chain_verdict

_SKILL_NAME = re.compile(r"^[a-z0-9][a-z0-9_.-]{0,63}$")


class WorkbenchError(ValueError):
    """A request the workbench cannot carry out; the message says how to fix it."""


def run_agent(prompt: str, *, profile: str | None = None, faults: str | None = None,
              session: str | None = None, workspace: Path | str | None = None,
              cycle: str | None = None, mode: str | None = None, live: bool = False) -> AgentRun:
    """Run one request end to end (Runtime.handle_user_request), or an L8 cycle around it
    (Runtime.run_cycle), with its events as logged (a request's as they were appended, a
    cycle's read back). A request that fails closed is still a
    session: the AgentRun says where and why. `live` prints each event's trace line as it
    is logged (a slow model is seen working)."""
    if mode is not None and cycle is None:
        raise WorkbenchError("--mode applies to a cycle: add --cycle ID (e.g. --cycle code-review)")
    plan = load_fault_plan(faults) if faults else None
    # One Runtime per workspace, loaded again only when a contract file changed.
    rt = cached_runtime(workspace, profile=profile, faults=plan)
    live_trace = LiveTrace() if live else None
    logged: list[Event] = []  # the events as they were appended: not read back from the log
    keep = logged.append
    with rt.watching(live_trace) if live_trace else contextlib.nullcontext():
        # `rt.watching(keep)` without its generator and the stream sink it adds only for a
        # StreamWatcher: the list each append reads (kernel.Runtime.watching), in the same order.
        rt.watchers.append(keep)
        try:
            if cycle is not None:
                return _run_cycle(rt, cycle, prompt, session, mode)
            result = rt.handle_user_request(prompt, session_id=session)
        finally:
            if live_trace:
                live_trace.close()
            rt.watchers.remove(keep)
    if isinstance(result, Err) and result.error.session_id is None:
        raise WorkbenchError(result.error.message)  # refused before a session existed
    sid = result.error.session_id if isinstance(result, Err) else result.value.session_id
    assert sid is not None  # an Err without a session raised above
    ok, output = not isinstance(result, Err), None if isinstance(result, Err) else result.value.output
    error = result.error if isinstance(result, Err) else None
    own = own_events(logged, sid)
    facts = of_logged(own) if own and plain_fields(own) else None
    start = own[0].payload.get("prompt", prompt) if facts is not None and own else None
    if facts is None or own is None or type(start) is not str:
        return _read_back(rt, sid, prompt, ok=ok, output=output, error=error,
                          logged=whole_log(logged, sid))
    # The payloads as they are now, encoded once: made into the read-back events (decoded)
    # only if the run's `events` are read; the rows show what they would show of those.
    made = partial(made_events, own, canonical([e.payload for e in own]))
    return AgentRun.logged(made, facts, session_id=sid, ok=ok, prompt=start, profile=rt.profile.name,
                           model=rt.profile.model, output=output, error=error, workspace=rt.workspace)


def fork_agent(target: str, *, profile: str | None = None, faults: str | None = None,
               session: str | None = None, workspace: Path | str | None = None) -> AgentRun:
    """`%agent --fork ID@K`: a new session beginning with the parent's first K events, then
    `session.forked`, then the rest of the request run live (fork.py), read back."""
    from ..runs.fork import fork, parse_target

    try:
        parent, at = parse_target(target)
    except ValueError as exc:
        raise WorkbenchError(str(exc)) from None
    plan = load_fault_plan(faults) if faults else None
    rt = Runtime.from_workspace(workspace, profile=profile, faults=plan)
    result = fork(rt, parent, at, session_id=session, faults=faults)
    if isinstance(result, Err) and result.error.session_id is None:
        raise WorkbenchError(result.error.message)  # refused before a session existed
    sid = result.error.session_id if isinstance(result, Err) else result.value.session_id
    assert sid is not None  # an Err without a session raised above
    return _read_back(rt, sid, "", ok=not isinstance(result, Err),
                      output=None if isinstance(result, Err) else result.value.output,
                      error=result.error if isinstance(result, Err) else None)


def _run_cycle(rt: Runtime, cycle: str, prompt: str, session: str | None, mode: str | None) -> AgentRun:
    result = rt.run_cycle(cycle, prompt, session_id=session, mode=mode)
    if isinstance(result, Err):  # an unknown cycle or mode, or a taken id: no session exists
        raise WorkbenchError(result.error.message)
    c = result.value
    events = rt.events(c.session_id)
    close: dict[str, Any] = next((e.payload for e in reversed(events) if e.type == "session.close"), {})
    failed = next((e.payload for e in reversed(events) if e.type == "domain.error"), None)
    error = None if c.ok or failed is None else DomainError(
        failed["kind"], failed["code"], failed["message"], failed.get("retryable", False), c.session_id)
    info = CycleInfo(c.cycle_id, c.verdict, c.reason, tuple(c.visited), c.generations)
    return _read_back(rt, c.session_id, prompt, ok=c.ok, output=close.get("output"), error=error,
                      cycle=info)


def _read_back(rt: Runtime, sid: str, prompt: str, *, ok: bool, output: str | None,
               error: DomainError | None, cycle: CycleInfo | None = None,
               logged: tuple[Event, ...] | None = None) -> AgentRun:
    events = logged if logged is not None else tuple(rt.events(sid))
    start = events[0].payload if events and isinstance(events[0].payload, dict) else {}
    return AgentRun(
        # The prompt as the log holds it: redacted (L6) when a hook or a secret changed it.
        session_id=sid, ok=ok, prompt=str(start.get("prompt", prompt)), profile=rt.profile.name,
        model=rt.profile.model, output=output, error=error, events=events, workspace=rt.workspace,
        cycle=cycle)


def replay_session(session: object, at: int | None = None, workspace: Path | str | None = None,
                   summary: bool = False) -> SnapshotView:
    """The snapshot after the first `at` events (all when None), from the log alone. With
    `summary`, a snapshot_v2 in bounded memory (counts, tallies, the last items), for logs of
    any length: the log is streamed from its file, never loaded whole."""
    if summary:
        return _summary(session, at, workspace)
    data = load_session(session, workspace)
    chain = _verify(data)
    if chain is not None and chain.problem is not None and chain.problem.kind == "empty-log":
        raise WorkbenchError(f"{data.session_id}: {chain.problem.message}")
    total = len(data.events)
    if at is not None and not 0 <= at <= total:
        raise WorkbenchError(f"--at {at} is out of range: {data.session_id} has {total} events; "
                             f"use 0..{total}")
    warning = None if chain is None or chain.ok else chain_verdict(chain)
    return SnapshotView(replay(data.events, at), at, total, warning)


def _summary(session: object, at: int | None, workspace: Path | str | None) -> SnapshotView:
    if not isinstance(session, str):  # an AgentRun: its events are in memory already
        data = load_session(session, workspace)
        return SnapshotView(summarize(data.events, at), at, len(data.events))
    path = session_log(session, workspace)
    chain = verify_log(path)
    if chain.problem is not None and chain.problem.kind == "empty-log":
        raise WorkbenchError(f"{session}: {chain.problem.message}")
    if at is not None and not 0 <= at <= chain.events:
        raise WorkbenchError(f"--at {at} is out of range: {session} has {chain.events} events; "
                             f"use 0..{chain.events}")
    with warnings.catch_warnings():  # a torn line is the chain verdict's to report
        warnings.simplefilter("ignore", TornTailWarning)
        snap = summarize_path(path, at)
    return SnapshotView(snap, at, chain.events, None if chain.ok else chain_verdict(chain))


def _verify(data: SessionData) -> VerifyReport | None:
    """The recorded log's integrity verdict (None when the session has no log on disk)."""
    path = data.workspace.sessions / data.session_id / LOG_NAME
    return verify_log(path) if path.is_file() else None


def verify_session(session: object, workspace: Path | str | None = None) -> RerunView:
    """`%replay --verify`: re-run the recorded session with its model answers and tool results
    played back (rerun.py) and report the first event where the new log differs."""
    data = load_session(session, workspace)
    root = None if data.workspace.bundled else data.workspace.root
    rt = Runtime.from_workspace(root, cwd=data.workspace.root)
    result = rerun(rt, data.session_id)
    if isinstance(result, Err):
        raise WorkbenchError(result.error.message)
    return RerunView(result.value, _verify(data))


def register_skill(text: str, *, workspace: Path | str | None = None,
                   dry_run: bool = False) -> SkillCheck:
    """Check a SKILL.md (frontmatter against skill_frontmatter_v1, exactly as discovery does)
    and, unless `dry_run`, write it to skills/<name>/SKILL.md and confirm discovery registers
    it. An invalid skill is never written; the answer names the field at fault."""
    ws = find_workspace(Path(workspace) if workspace is not None else None)
    if ws.bundled and not dry_run:
        raise WorkbenchError("no workspace to write the skill into: run scratch_workspace() or "
                             "`agentos init DIR` first, or pass --workspace DIR (or --dry-run)")
    schemas = SchemaRegistry.load(ws.contract_dir("schemas"))
    name = _declared_name(text)
    root = load_config(ws.config_file, schemas, "agentos.yaml").skill_roots[0]
    shown = f"{root}/{name}/SKILL.md" if name else "%%skill cell"
    bad = text_error(text, "the cell", "type it again as UTF-8 text")
    if bad:  # a SKILL.md is a UTF-8 file: this cell could not be written as one
        return SkillCheck(False, shown, "not written", name, Problem(shown, "-", bad))
    with tempfile.TemporaryDirectory() as tmp:
        probe = Path(tmp) / "SKILL.md"
        probe.write_text(text, encoding="utf-8")
        # The discovery code's own check, so the cell and a file on disk are judged alike.
        loaded = frontmatter.load(probe, "skill_frontmatter_v1", schemas, shown)
    if isinstance(loaded, Problem):
        kept = ((f"{shown} already holds a skill; it is unchanged",)
                if name and (ws.root / root / name / "SKILL.md").is_file() else ())
        return SkillCheck(False, shown, "not written", name, loaded, notes=kept)
    meta, _ = loaded
    if not _SKILL_NAME.fullmatch(meta["name"]):
        return SkillCheck(False, shown, "not written", name, Problem(
            shown, "name", f"{meta['name']!r} cannot be a directory name: use lower-case letters, "
                           "digits, '-', '_' or '.'"))
    target = ws.root / root / meta["name"] / "SKILL.md"
    if not target.parent.resolve().is_relative_to((ws.root / root).resolve()):  # a planted symlink
        return SkillCheck(False, shown, "not written", meta["name"], Problem(
            shown, "name", f"{root}/{meta['name']} is a symlink leading outside {root}/; remove it "
                           "or pick another name"))
    triggers, tools = tuple(meta.get("triggers") or ()), tuple(meta.get("allowed-tools") or ())
    notes = _notes(ws.root / root, meta["name"], triggers, tools, schemas, ws.root)
    if dry_run:
        return SkillCheck(True, shown, "checked (dry run, not written)", meta["name"], None,
                          triggers, tools, notes)
    before = target.read_text(encoding="utf-8") if target.is_file() else None
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text, encoding="utf-8")
    registry = discover([ws.root / root], schemas, base=ws.root)
    found = registry.skills.get(meta["name"])
    if found is None or found.file != shown:
        # Discovery refused it (e.g. another file already registers that name): undo the write.
        if before is None:
            target.unlink()
            target.parent.rmdir()
        else:
            target.write_text(before, encoding="utf-8")
        problem = next((p for p in registry.skipped if p.file == shown),
                       Problem(shown, "name", "discovery did not register it"))
        return SkillCheck(False, shown, "not written", meta["name"], problem)
    return SkillCheck(True, shown, "replaced" if before is not None else "created", meta["name"],
                      None, triggers, tools, notes)


def _declared_name(text: str) -> str | None:
    try:
        meta, _ = frontmatter.split(text)
    except Exception:  # any parse problem is reported by frontmatter.load with its field
        return None
    name = meta.get("name") if isinstance(meta, dict) else None
    return name if isinstance(name, str) and _SKILL_NAME.fullmatch(name) else None


def _notes(skills_root: Path, name: str, triggers: tuple[str, ...], tools: tuple[str, ...],
           schemas: SchemaRegistry, base: Path) -> tuple[str, ...]:
    known = {t.name for t in BUILTIN_TOOLS}
    notes = [f"tool {t!r} is not registered: a call to it fails closed (TOOL_NOT_FOUND)"
             for t in tools if t not in known]
    others = discover([skills_root], schemas, base=base).skills
    for trig in triggers:
        shared = sorted(s.name for s in others.values() if s.name != name
                        and trig.lower() in (x.lower() for x in s.triggers))
        if shared:
            notes.append(f"trigger {trig!r} is shared with {', '.join(shared)}: the trigger found "
                         "earliest in the prompt wins (ties: the longer trigger, then the name)")
    return tuple(notes)

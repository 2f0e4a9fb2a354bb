"""The `agentos` commands that read a session log: replay, events and verify. Thin: parse,
call the library (replay.py, trace.py, integrity.py), print.

`replay` and `events` take a session id or, as `verify` does, a log's path (a
`.events.jsonl` file or a session directory: a path that exists wins). They verify the log
first (integrity.verify_log) and warn on stderr when it does not verify; `--strict` makes
that exit 1. An empty log is reported, never shown as a snapshot of nothing. `verify` exits
0 when every log verifies, 1 on any finding, 2 when the target names no log.
"""

from __future__ import annotations

import argparse
import json
import sys
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..store.events import LOG_NAME, TornTailWarning, check_session_id, read_log
from ..store.integrity import VerifyReport, verify_log, verify_session
from ..store.redaction import redact
from ..store.repair import repair_torn
from ..store.replay.fold import replay_path
from ..store.replay.summary import RECENT, summarize_path
from ..telemetry.trace import LAYERS, select, trace_lines
from ..workspace import find_workspace
from .common import EXIT_NOT_OK, EXIT_OK, UsageError, runtime_from_args, session_arg

if TYPE_CHECKING:
    from ..kernel import Runtime
    from ..store.jsonl import JsonlEventStore
    from ..store.postgres.store import PostgresEventStore


def _checked(log: Path | VerifyReport, sid: str, strict: bool) -> int | None:
    """Verify before reading (a log file, or the report of a store's session): a warning line
    per finding on stderr. The exit code when the log must not be shown (empty, or not ok
    under --strict), else None."""
    report = log if isinstance(log, VerifyReport) else verify_log(log)
    for f in report.findings:
        where = f"line {f.line}: " if f.line else ""
        print(f"agentos: warning: {sid} does not verify: {where}{f.kind}: {f.message} "
              f"(details: agentos verify {sid})", file=sys.stderr)
    if report.problem is not None and report.problem.kind == "empty-log":
        return EXIT_NOT_OK
    return EXIT_NOT_OK if strict and not report.ok else None


def log_path(target: str, profile: str | None) -> Path | None:
    """The log a `replay`/`events` target names when it is a path, as `verify` reads one (a
    `.events.jsonl` file or a session directory; a path that exists wins), else None: a
    session id. UsageError for a directory with no log that is no session id either (a
    folder of sessions), or a path with --profile."""
    p = Path(target)
    try:
        log = p if p.is_file() else p / LOG_NAME if (p / LOG_NAME).is_file() else None
        folder = log is None and p.is_dir()
    except (OSError, ValueError):  # no file system holds it (too long, a NUL): not a path
        return None
    problem = check_session_id(target)
    if folder and problem:
        raise UsageError(f"{problem}; and {target} is a directory with no {LOG_NAME}: give one "
                         "session's log file or directory")
    if log is not None and profile is not None:
        raise UsageError(f"--profile picks the store a session id is read from; {target} is a log's path")
    return log


def _verified(args: argparse.Namespace, target: str) -> tuple[Path | Runtime, int | None]:
    """(the log file when `target` is a path, else the runtime whose store holds session
    `target`; the exit code when the log must not be shown, else None)."""
    log = log_path(target, args.profile)
    if log is not None:
        return log, _checked(log, target, args.strict)
    rt = runtime_from_args(args)
    sid = session_arg(target)
    if rt.store.exists(sid):
        return rt, _checked(verify_session(rt.store, sid), sid, args.strict)
    return rt, None


def _summarized(args: argparse.Namespace, recent: int) -> tuple[Path | Runtime, int | None, Any]:
    """`_verified` for `replay --summary` of a whole stored log: the verify pass folds the
    bounded summary from the lines it parses (one pass); (source, exit code, the summary or
    None when it must be made the usual way)."""
    log = log_path(args.session_id, args.profile)
    if log is not None or args.at is not None or recent < 0:
        src, code = _verified(args, args.session_id)
        return src, code, None
    rt = runtime_from_args(args)
    sid = session_arg(args.session_id)
    if not rt.store.exists(sid):
        return rt, None, None
    report, summary = rt.verified_summary(sid, recent)
    if report is None:  # a log that does not fold in one pass: verified and summarized apart
        report, summary = verify_session(rt.store, sid), None
    return rt, _checked(report, sid, args.strict), summary


def cmd_replay(args: argparse.Namespace) -> int:
    recent = RECENT if args.recent is None else args.recent
    src, code, summary = (_summarized(args, recent) if args.summary
                          else (*_verified(args, args.session_id), None))
    if code is not None:
        return code
    if args.recent is not None and not args.summary:
        raise UsageError("--recent sets how many items --summary keeps; add --summary")
    if args.recent is not None and args.recent < 0:
        raise UsageError(f"--recent {args.recent} is negative; use 0 or more")
    with warnings.catch_warnings():  # a torn line was reported above; say it once
        warnings.simplefilter("ignore", TornTailWarning)
        if isinstance(src, Path):
            snap = summarize_path(src, args.at, recent) if args.summary else replay_path(src, args.at)
        else:
            sid = args.session_id
            snap = src.replay(sid, args.at) if not args.summary else (
                summary if summary is not None else src.replay_summary(sid, args.at, recent))
    if args.at is not None and snap.events < args.at:  # the log ended first: say so, not the end state
        raise UsageError(f"--at {args.at} is out of range: {args.session_id} has {snap.events} events; "
                         f"use 0..{snap.events}")
    d = snap.to_dict()
    if args.json:
        print(json.dumps(d, indent=2, ensure_ascii=False))
        return EXIT_OK
    for key, value in d.items():
        if key == "schema_version":
            continue
        if isinstance(value, list | dict) and value:
            print(f"{key}:")
            items = value.items() if isinstance(value, dict) else enumerate(value)
            for k, v in items:
                print(f"  {k}: {json.dumps(v, ensure_ascii=False, sort_keys=True)}")
        else:
            print(f"{key}: {json.dumps(value, ensure_ascii=False)}")
    return EXIT_OK


def cmd_events(args: argparse.Namespace) -> int:
    src, code = _verified(args, args.session_id)
    if code is not None:
        return code
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", TornTailWarning)
            read = list(read_log(src)) if isinstance(src, Path) else src.events(args.session_id)
            events = select(read, args.type, args.layer)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    if args.json:
        for e in events:
            print(json.dumps(e.to_dict(), ensure_ascii=False, sort_keys=True))
    else:
        for line in trace_lines(events):
            print(line)
    return EXIT_OK


def find_logs(target: str, workspace: Path | None) -> list[Path]:
    """The logs `target` names: a log file, a session directory, a directory of sessions, or
    a session id in the workspace (a path that exists wins). UsageError when there is none."""
    p = Path(target)
    if p.is_file():
        return [p]
    if (p / LOG_NAME).is_file():
        return [p / LOG_NAME]
    if p.is_dir():
        found = sorted(p.glob(f"*/{LOG_NAME}"))
        if not found:
            raise UsageError(f"{p}: no {LOG_NAME} here nor in any {p}/<session>/ directory")
        return found
    if check_session_id(target) is None:
        sessions = find_workspace(workspace).sessions
        if (sessions / target / LOG_NAME).is_file():
            return [sessions / target / LOG_NAME]
        raise UsageError(f"no session {target!r} in {sessions} and no such file or directory")
    raise UsageError(f"{target}: no such file or directory, nor a session id")


def _store_reports(args: argparse.Namespace) -> list[VerifyReport] | None:
    """The reports when the target is in PostgreSQL (`postgres:ENV[/OWNER]`, the whole store
    `postgres:ENV/*`, or a session id of a --profile whose store is postgres), else None (the
    target names files)."""
    from ..store.factory import is_pg_target, pg_stores_of

    pairs: list[tuple[JsonlEventStore | PostgresEventStore, str]]
    if is_pg_target(args.target):
        try:
            stores = pg_stores_of(args.target)
        except ValueError as exc:
            raise UsageError(str(exc)) from None
        pairs = [(store, sid) for store in stores for sid in store.sessions()]
        if not pairs:
            raise UsageError(f"{args.target}: holds no session")
    elif args.profile is not None and check_session_id(args.target) is None:
        rt = runtime_from_args(args)
        if rt.log_file(args.target) is not None:
            return None
        pairs = [(rt.store, args.target)]
    else:
        return None
    if args.repair:
        raise UsageError("--repair sets a torn line aside in a file; a database row is never torn")
    if args.head is not None and len(pairs) != 1:
        raise UsageError(f"--head anchors one log; {args.target} holds {len(pairs)}")
    return [verify_session(store, sid, args.head) for store, sid in pairs]


def cmd_verify(args: argparse.Namespace) -> int:
    reports = _store_reports(args)
    if reports is None:
        logs = find_logs(args.target, args.workspace)
        if args.head is not None and len(logs) != 1:
            raise UsageError(f"--head anchors one log; {args.target} holds {len(logs)}")
        reports = [verify_log(p, args.head) for p in logs]
    if args.repair:
        reports = [_repair(r, args.head) for r in reports]
    # a problem quotes the log (a line that is not JSON, a field's value): redacted like a log
    if args.json:
        print(json.dumps(redact({"ok": all(r.ok for r in reports),
                                 "logs": [r.to_dict() for r in reports]}),
                         indent=2, ensure_ascii=False))
    else:
        for r in reports:
            print(redact(r.verdict()))
            for note in r.notes:
                print(f"  note: {redact(note)}")
        bad = sum(not r.ok for r in reports)
        if len(reports) > 1:
            print(f"\n{len(reports) - bad} of {len(reports)} logs verify")
    return EXIT_OK if all(r.ok for r in reports) else EXIT_NOT_OK


def _repair(report: VerifyReport, head: str | None) -> VerifyReport:
    if report.torn is None and not report.unterminated:
        return report  # nothing to set aside
    broken = report.broken
    if broken is not None:  # evidence: repair never touches it
        print(f"not repaired {report.path}: {broken.kind} at line {broken.line or '-'}; "
              "only a log whose complete lines verify has its torn line set aside", file=sys.stderr)
        return report
    aside = repair_torn(report)
    if aside is not None and report.torn is not None:  # a .torn file: there was a torn line
        print(f"repaired {report.path}: torn line {report.torn.line} ({report.torn.size} bytes) "
              f"moved to {aside}", file=sys.stderr)
    return verify_log(report.path, head)


_TARGET_HELP = ("a session id in the workspace (or the --profile's store), or a log's path: a "
                ".events.jsonl file or a session directory (as verify takes them; a path that exists wins)")
_PROFILE_HELP = ("the profile whose event store holds the session (default: the workspace's "
                 "default_profile; a postgres store reads it from the database)")


def add_commands(sub: argparse._SubParsersAction) -> None:
    """Add replay, events and verify to the `agentos` parser."""
    p = sub.add_parser("replay", help="recompute a session's snapshot from its log alone")
    p.add_argument("session_id", metavar="ID|PATH", help=_TARGET_HELP)
    p.add_argument("--at", type=int, metavar="N", help="the state after the first N events")
    p.add_argument("--json", action="store_true", help="print snapshot_v1 JSON (snapshot_v2 with --summary)")
    p.add_argument("--summary", action="store_true",
                   help="bounded memory for long logs: counts, tallies and only the last --recent tool "
                        "calls, hook decisions, violations and errors (snapshot_v2)")
    p.add_argument("--recent", type=int, metavar="N",
                   help=f"with --summary: how many of the latest items to keep per list (default {RECENT})")
    p.add_argument("--strict", action="store_true",
                   help="exit 1 without replaying when the log does not verify (else only warn)")
    p.add_argument("--profile", help=_PROFILE_HELP)
    p.set_defaults(fn=cmd_replay)

    p = sub.add_parser("events", help="print a session's events")
    p.add_argument("session_id", metavar="ID|PATH", help=_TARGET_HELP)
    p.add_argument("--type", metavar="T", help="only events of type T (or T.*), e.g. hook.fired, tool")
    p.add_argument("--layer", choices=LAYERS, help="only events of spec layer L1..L8")
    p.add_argument("--json", action="store_true", help="print the raw JSON lines")
    p.add_argument("--strict", action="store_true",
                   help="exit 1 without printing when the log does not verify (else only warn)")
    p.add_argument("--profile", help=_PROFILE_HELP)
    p.set_defaults(fn=cmd_events)

    p = sub.add_parser("verify", help="check a log's hash chain and envelope line by line; name the "
                                      "first altered, removed, reordered, duplicated or appended "
                                      "event, a key held twice, a blank line, a log in another "
                                      "session's folder and a torn final line")
    p.add_argument("target", metavar="ID|PATH",
                   help="a session id in the workspace, a .events.jsonl file, a session directory, "
                        "a directory of sessions (each is verified), postgres:ENV[/OWNER] (every "
                        "session of that PostgreSQL store's role or OWNER), or postgres:ENV/* (the "
                        "whole store: every owner the role may read; docs/class-server.md)")
    p.add_argument("--profile", help=_PROFILE_HELP + "; with a session id")
    p.add_argument("--head", metavar="HEX",
                   help="the head printed by an earlier verify (noted elsewhere): also proves that "
                        "nothing was appended after it or cut from the end")
    p.add_argument("--repair", action="store_true",
                   help="set a torn final line aside (moved to .events.jsonl.torn) when every "
                        "complete line verifies; a broken chain is never touched")
    p.add_argument("--json", action="store_true", help="print the reports as JSON")
    p.set_defaults(fn=cmd_verify)


"""`agentos audit TARGET`: the Audit Completeness check of one log, a directory of sessions,
a session id of the workspace (as `replay`, `events` and `verify` take it) or a PostgreSQL
store (`postgres:ENV[/OWNER]`, or the whole store `postgres:ENV/*`).

Thin: find the logs, call `audit_log`, print a table of gaps (check, seq, line, what).
Exit 0 when every log is clean, 1 when any has a gap, 2 when TARGET holds no log.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator, Sequence
from functools import partial
from pathlib import Path

from ..labs.audit.log import AuditReport, Gap, audit_lines, audit_log, find_logs
from ..schemas.jsonshape import printable
from ..store.events import check_session_id

EXIT_CLEAN, EXIT_GAP, EXIT_BAD_PATH = 0, 1, 2


def gap_table(gaps: Sequence[Gap], indent: str = "  ") -> Iterator[str]:
    """The gaps as aligned rows under a `check seq line what` header, one at a time (a long
    log's table is printed, never held)."""
    def cells(g: Gap) -> tuple[str, str, str, str]:
        return (g.check, "-" if g.seq is None else str(g.seq), "-" if g.line is None else str(g.line),
                g.what)

    w0, w1, w2 = len("check"), len("seq"), len("line")
    for g in gaps:
        c, s, n, _ = cells(g)
        w0, w1, w2 = max(w0, len(c)), max(w1, len(s)), max(w2, len(n))
    yield f"{indent}{'check':<{w0}}  {'seq':>{w1}}  {'line':>{w2}}  what"
    for g in gaps:
        c, s, n, w = cells(g)
        yield f"{indent}{c:<{w0}}  {s:>{w1}}  {n:>{w2}}  {w}"


def report_lines(report: AuditReport) -> Iterator[str]:
    """One log's verdict line, then its gap table and notes."""
    if report.ok:
        yield f"{report.path}: {report.events} events, clean"
    else:
        yield f"{report.path}: {report.events} events, {len(report.gaps)} gap(s)"
    if report.gaps:
        yield from gap_table(report.gaps)
    for n in report.notes:
        yield f"  note: {n}"


def _store_reports(target: str) -> list[AuditReport]:
    """The audit of every session of a PostgreSQL store (`postgres:ENV[/OWNER]`), or of every
    owner's sessions the role may read (`postgres:ENV/*`)."""
    from ..store.factory import pg_stores_of

    reports = [audit_lines(partial(store.lines, sid), str(store.path(sid)))  # read again if need be
               for store in pg_stores_of(target) for sid in store.sessions()]
    if not reports:
        raise FileNotFoundError(f"{target}: holds no session")
    return reports


def _session_report(args: argparse.Namespace) -> AuditReport:
    """The audit of session `args.path` of the workspace's store (its --profile's): the log
    file, or its rows in PostgreSQL. FileNotFoundError names a session the store lacks."""
    from ..kernel import Runtime

    rt = Runtime.from_workspace(args.workspace, profile=args.profile)
    sid = args.path
    if not rt.store.exists(sid):
        raise FileNotFoundError(f"no session {sid!r} in {rt.store_name} and no such file or directory")
    log = rt.log_file(sid)
    if log is None:
        return audit_lines(lambda: rt.store.lines(sid), str(rt.store.path(sid)))  # read again if need be
    return audit_log(log, root=log.parent)  # a log linked out of its session folder is not read


def cmd_audit(args: argparse.Namespace) -> int:
    if args.path.startswith("postgres:") or (check_session_id(args.path) is None
                                             and not Path(args.path).exists()):
        try:
            return _print(args, _store_reports(args.path) if args.path.startswith("postgres:")
                          else [_session_report(args)])
        except (FileNotFoundError, ValueError) as exc:
            print(f"agentos: error: {printable(str(exc))}", file=sys.stderr)
            return EXIT_BAD_PATH
    if args.profile is not None:
        print(f"agentos: error: --profile picks the store a session id is read from; {args.path} "
              "is a path", file=sys.stderr)
        return EXIT_BAD_PATH
    try:
        logs = find_logs(args.path)
    except FileNotFoundError as exc:
        print(f"agentos: error: {printable(str(exc.args[0]))}", file=sys.stderr)
        return EXIT_BAD_PATH
    except (OSError, ValueError) as exc:  # a path no file system can hold (too long, a NUL)
        print(f"agentos: error: {args.path!r}: {getattr(exc, 'strerror', None) or exc}", file=sys.stderr)
        return EXIT_BAD_PATH
    return _print(args, [audit_log(p, root=args.path) for p in logs])  # a link out of PATH is not read


def _print(args: argparse.Namespace, reports: list[AuditReport]) -> int:
    bad = [r for r in reports if not r.ok]
    if args.json:
        json.dump({"ok": not bad, "logs": [r.to_dict() for r in reports]}, sys.stdout, indent=2,
                  ensure_ascii=False)  # written as encoded, not held as one string
        print()
    else:
        for r in reports:
            for line in report_lines(r):
                print(line)
        if len(reports) > 1:
            print(f"\n{len(reports)} logs audited: {len(reports) - len(bad)} clean, "
                  f"{len(bad)} with gaps")
    return EXIT_GAP if bad else EXIT_CLEAN


def add_commands(sub: argparse._SubParsersAction) -> None:
    """Add `agentos audit`."""
    p = sub.add_parser(
        "audit", help="check an event log for the spec's Audit Completeness (exit 1 on a gap)",
        description="Check any .events.jsonl (ours or another implementation's) for the spec's "
                    "Audit Completeness: event envelopes, seq and hash chain where present, "
                    "llm request/response and tool invoke/result pairs, agent transitions, hook "
                    "decisions, schema violations refused, one closing session.close, and every "
                    "required event type in a successful session. Prints a table of gaps "
                    "(check, seq, line, what). Exit 0 clean, 1 any gap, 2 no log at ID|PATH. "
                    "The rules: docs/log-format.md.")
    p.add_argument("path", metavar="ID|PATH",
                   help="a .events.jsonl file, a session directory, a directory of session "
                        "directories (each <id>/.events.jsonl is audited), a session id in the "
                        "workspace (a path that exists wins), postgres:ENV[/OWNER]: every session of "
                        "that PostgreSQL store's role or OWNER, or postgres:ENV/*: the whole store, "
                        "every owner the role may read (docs/class-server.md)")
    p.add_argument("--profile", help="with a session id: the profile whose event store holds it "
                                     "(default: the workspace's default_profile)")
    p.add_argument("--json", action="store_true",
                   help="print {ok, logs: [{path, events, ok, gaps: [{check, seq, line, what}], "
                        "notes}]} instead")
    p.set_defaults(fn=cmd_audit)

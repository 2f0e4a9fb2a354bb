"""`agentos audit PATH`: the Audit Completeness check of one log or a directory of sessions.

Thin: find the logs, call `audit_log`, print a table of gaps (check, seq, line, what).
Exit 0 when every log is clean, 1 when any has a gap, 2 when PATH holds no log.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence

from ..labs.audit.log import AuditReport, Gap, audit_lines, audit_log, find_logs
from ..schemas.jsonshape import printable

EXIT_CLEAN, EXIT_GAP, EXIT_BAD_PATH = 0, 1, 2


def gap_table(gaps: Sequence[Gap], indent: str = "  ") -> list[str]:
    """The gaps as aligned rows under a `check seq line what` header."""
    rows = [("check", "seq", "line", "what")] + [
        (g.check, "-" if g.seq is None else str(g.seq), "-" if g.line is None else str(g.line),
         g.what) for g in gaps]
    w0 = max(len(r[0]) for r in rows)
    w1 = max(len(r[1]) for r in rows)
    w2 = max(len(r[2]) for r in rows)
    return [f"{indent}{c:<{w0}}  {s:>{w1}}  {n:>{w2}}  {w}" for c, s, n, w in rows]


def report_lines(report: AuditReport) -> list[str]:
    """One log's verdict line, then its gap table and notes."""
    if report.ok:
        head = f"{report.path}: {report.events} events, clean"
    else:
        head = f"{report.path}: {report.events} events, {len(report.gaps)} gap(s)"
    lines = [head]
    if report.gaps:
        lines += gap_table(report.gaps)
    lines += [f"  note: {n}" for n in report.notes]
    return lines


def _store_reports(target: str) -> list[AuditReport]:
    """The audit of every session of a PostgreSQL store (`postgres:ENV[/OWNER]`)."""
    from ..store.factory import pg_store_of

    store = pg_store_of(target)
    sids = store.sessions()
    if not sids:
        raise FileNotFoundError(f"{target}: holds no session")
    return [audit_lines(store.lines(sid), str(store.path(sid))) for sid in sids]


def cmd_audit(args: argparse.Namespace) -> int:
    if args.path.startswith("postgres:"):
        try:
            return _print(args, _store_reports(args.path))
        except (FileNotFoundError, ValueError) as exc:
            print(f"agentos: error: {printable(str(exc))}", file=sys.stderr)
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
        print(json.dumps({"ok": not bad, "logs": [r.to_dict() for r in reports]}, indent=2,
                         ensure_ascii=False))
    else:
        for r in reports:
            print("\n".join(report_lines(r)))
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
                    "(check, seq, line, what). Exit 0 clean, 1 any gap, 2 no log at PATH. "
                    "The rules: docs/log-format.md.")
    p.add_argument("path", metavar="PATH",
                   help="a .events.jsonl file, a session directory, a directory of session "
                        "directories (each <id>/.events.jsonl is audited), or postgres:ENV[/OWNER]: "
                        "every session of that PostgreSQL store (docs/class-server.md)")
    p.add_argument("--json", action="store_true",
                   help="print {ok, logs: [{path, events, ok, gaps: [{check, seq, line, what}], "
                        "notes}]} instead")
    p.set_defaults(fn=cmd_audit)

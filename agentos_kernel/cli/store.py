"""`agentos store ...`: the PostgreSQL event store's commands (docs/class-server.md). Thin:
parse, call the library (pg_schema, pg_roles, store_copy), print.

  store migrate       create or update the schema (versioned, idempotent)
  store add-student   a login role that sees only its own sessions (or --instructor: all)
  store copy SRC DEST move logs between JSONL folders and PostgreSQL, byte for byte
  store sessions T    list the sessions a target holds
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from .common import EXIT_NOT_OK, EXIT_OK, UsageError, runtime_from_args

TARGETS = ("a folder of sessions (<id>/.events.jsonl each), or postgres:ENV (the database whose "
           "connection string is in environment variable ENV: the connecting role's sessions), "
           "postgres:ENV/OWNER (OWNER's sessions: an instructor reading a student's), or, as SRC "
           "only, postgres:ENV/* (every owner the role may read, each copied to DEST/OWNER/)")


def _admin_dsn(args: argparse.Namespace) -> tuple[str, str]:
    """(dsn, how it is named) from --dsn-env, else the profile's event_store.dsn_env."""
    env = args.dsn_env
    if env is None:
        profile = runtime_from_args(args).profile
        if profile.event_store.kind != "postgres":
            raise UsageError(f"profile {profile.name!r} stores its events as jsonl; name a profile "
                             "with event_store: {kind: postgres} (--profile P) or --dsn-env ENV")
        env = profile.event_store.dsn_env
    dsn = os.environ.get(env or "", "")
    if not dsn:
        raise UsageError(f"{env} is not set; export the connection string of a role that may create "
                         f"tables and roles there (export {env}=postgresql://ROLE@HOST/DB)")
    return dsn, f"postgres:{env}"


def cmd_migrate(args: argparse.Namespace) -> int:
    from ..store.postgres.schema import LATEST, migrate

    dsn, name = _admin_dsn(args)
    applied = migrate(dsn)
    for m in applied:
        print(f"applied {m.version}: {m.name}")
    print(f"{name}: schema version {LATEST}{'' if applied else ' (already current)'}")
    return EXIT_OK


def cmd_add_student(args: argparse.Namespace) -> int:
    from ..store.postgres.roles import add_role, check_role_name

    if problem := check_role_name(args.name):
        raise UsageError(problem)
    password = None
    if args.password_env is not None:
        password = os.environ.get(args.password_env)
        if not password:
            raise UsageError(f"{args.password_env} is not set; export the new role's password there")
    dsn, name = _admin_dsn(args)
    new = add_role(dsn, args.name, password, instructor=args.instructor)
    group = "agentos_instructor (reads every session)" if args.instructor else \
        "agentos_student (reads only its own sessions)"
    print(f"{name}: role {args.name} {'created' if new else 'updated'} in {group}"
          f"{'' if password else '; no password: it can log in only where pg_hba.conf trusts it'}")
    return EXIT_OK


def _store(target: str, *, src: bool) -> Any:
    from ..store.factory import is_pg_target, pg_store_of, store_of

    if is_pg_target(target):
        try:
            return pg_store_of(target)
        except ValueError as exc:
            raise UsageError(str(exc)) from None
    if src and not Path(target).is_dir():
        raise UsageError(f"{target}: not a folder of sessions nor postgres:ENV[/OWNER]")
    return store_of(target)


def cmd_copy(args: argparse.Namespace) -> int:
    from ..store.copy import CopyRefused, copy_session

    pairs: list[tuple[Any, Any, str]] = []  # (src, dest, label prefix)
    if args.src.endswith("/*"):
        whole = _store(args.src[:-2], src=True)
        if not hasattr(whole, "owners") or args.dest.startswith("postgres:"):
            raise UsageError(f"{args.src}: /* copies every owner of a PostgreSQL store into a folder "
                             "(DEST/OWNER/<id>/...); give a folder as DEST")
        for owner in whole.owners():
            pairs.append((_store(f"{args.src[:-2]}/{owner}", src=True),
                          _store(str(Path(args.dest) / owner), src=False), f"{owner}/"))
    else:
        pairs.append((_store(args.src, src=True), _store(args.dest, src=False), ""))
    refused = copied = present = 0
    for src, dest, label in pairs:
        for sid in args.session or src.sessions():
            try:
                c = copy_session(src, dest, sid)
            except (CopyRefused, KeyError) as exc:
                print(f"agentos: refused {label}{sid}: {exc.args[0] if exc.args else exc}", file=sys.stderr)
                refused += 1
                continue
            copied, present = copied + c.copied, present + (not c.copied)
            print(f"{'copied' if c.copied else 'present'} {label}{sid}: {c.events} events, "
                  f"sha256 {c.sha256[:16]}")
    print(f"{copied} copied, {present} already there with the same bytes, {refused} refused")
    return EXIT_NOT_OK if refused else EXIT_OK


def cmd_sessions(args: argparse.Namespace) -> int:
    store = _store(args.target, src=True)
    found = store.sessions()
    for sid in found:
        print(sid)
    if not found:  # say so: under row-level security "none" may mean "none you may read"
        print(f"{args.target}: no sessions that this role can read", file=sys.stderr)
    return EXIT_OK


def _dsn_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--profile", help="the profile whose event_store names the database (default: the "
                                     "workspace's default_profile)")
    p.add_argument("--dsn-env", metavar="ENV",
                   help="the environment variable holding the connection string instead")


def add_commands(sub: argparse._SubParsersAction) -> None:
    """Add `agentos store` and its subcommands."""
    store = sub.add_parser("store", help="the PostgreSQL event store: migrate, add-student, copy, "
                                         "sessions (docs/class-server.md)",
                           description="A whole class's sessions in one PostgreSQL database: each "
                                       "student role sees only its own (row-level security), no one "
                                       "can change or delete an event (a trigger). docs/class-server.md.")
    ssub = store.add_subparsers(dest="store_command", required=True, metavar="SUBCOMMAND")

    p = ssub.add_parser("migrate", help="create or update the schema (versioned; running it again is "
                                        "harmless); run it as the database's owner")
    _dsn_options(p)
    p.set_defaults(fn=cmd_migrate)

    p = ssub.add_parser("add-student", help="create a login role that reads and writes only its own "
                                            "sessions (run as the role that migrated)")
    p.add_argument("name", help="role name: lowercase letters, digits, '_' (e.g. s20230001)")
    p.add_argument("--password-env", metavar="VAR",
                   help="environment variable holding the role's password (never on the command line)")
    p.add_argument("--instructor", action="store_true",
                   help="an instructor role instead: reads every student's sessions")
    _dsn_options(p)
    p.set_defaults(fn=cmd_add_student)

    p = ssub.add_parser("copy", help="copy session logs between JSONL and PostgreSQL, byte for byte",
                        description=f"Copy every session of SRC (or each --session) to DEST. SRC and "
                                    f"DEST are each {TARGETS}. Lines are copied as they are, so "
                                    "JSONL -> PostgreSQL -> JSONL gives back the same bytes. A session "
                                    "DEST already holds with the same bytes is skipped; with other "
                                    "bytes, or with a torn last line or a blank line, it is refused "
                                    "(exit 1). Exit 2 for a bad target.")
    p.add_argument("src", metavar="SRC")
    p.add_argument("dest", metavar="DEST")
    p.add_argument("--session", action="append", metavar="ID", help="only this session (repeatable)")
    p.set_defaults(fn=cmd_copy)

    p = ssub.add_parser("sessions", help="list the session ids a store holds")
    p.add_argument("target", metavar="TARGET", help=TARGETS.split(", or, as SRC")[0])
    p.set_defaults(fn=cmd_sessions)

"""`agentos lab fetch | submit | collect`: labs handed out and collected through an exchange folder.

Thin: parse, call `labs.notebook.exchange`, print. Exit 0 done, 2 bad input (nothing written;
the UsageError is printed as one line by main.py).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from ..schemas.jsonshape import printable
from .common import EXIT_OK, UsageError

_EXCHANGE_HELP = ("the exchange folder (default: $AGENTOS_EXCHANGE, which the class hub sets in every "
                  "student's server)")


def add_exchange_commands(cmds: argparse._SubParsersAction) -> None:
    """Add `fetch`, `submit` and `collect` to `agentos lab`."""
    p = cmds.add_parser(
        "fetch", help="copy the labs the instructor has released (and the teaching notebooks) you "
                      "do not have yet",
        description="Copy into DEST the teaching notebooks and every lab in the exchange's outbound/ "
                    "folder that DEST does not have yet. A file already in DEST is never overwritten, "
                    "so your answers are safe; a lab whose notebook still holds solutions or hidden "
                    "tests is refused. The class hub does this at every login.")
    p.add_argument("dest", type=Path, nargs="?", default=Path("notebooks"),
                   help="your notebooks folder (default: ./notebooks)")
    p.add_argument("--exchange", type=Path, help=_EXCHANGE_HELP)
    p.set_defaults(fn=cmd_fetch)

    p = cmds.add_parser(
        "submit", help="hand in a lab notebook to the exchange",
        description="Copy NOTEBOOK into the exchange's inbound/ folder as nbgrader's submit names it "
                    "(<student>+<lab>+<timestamp>+<random>). You may submit again: the instructor "
                    "collects the newest. The lab is the notebook's name without .ipynb.")
    p.add_argument("notebook", type=Path,
                   help="your lab notebook, e.g. notebooks/labs/lab-01-tools/lab-01-tools.ipynb")
    p.add_argument("--exchange", type=Path, help=_EXCHANGE_HELP)
    p.add_argument("--student", help="your id (default: $JUPYTERHUB_USER, set by the hub)")
    p.add_argument("--lab", help="the lab's id (default: the notebook's name without .ipynb)")
    p.set_defaults(fn=cmd_submit)

    p = cmds.add_parser(
        "collect", help="copy the newest submission of each student into nbgrader's submitted/ layout",
        description="For each student and lab in the exchange's inbound/ folder, copy the newest "
                    "submission to SUBMITTED/<student>/<lab>/<lab>.ipynb with its timestamp.txt "
                    "(nbgrader's layout, what `agentos lab grade` and nbgrader autograde read). A "
                    "submission already collected is left; a newer one replaces it. Entries that are "
                    "not submissions (bad names, links) are listed and skipped.")
    p.add_argument("submitted", type=Path, help="the instructor's submitted/ folder (created if missing)")
    p.add_argument("--exchange", type=Path, help=_EXCHANGE_HELP)
    p.add_argument("--lab", help="collect only this lab")
    p.set_defaults(fn=cmd_collect)


def cmd_fetch(args: argparse.Namespace) -> int:
    from ..labs.notebook.exchange import exchange_from, hand_out
    from ..labs.notebook.nbgrader_format import LabInputError

    try:
        done = hand_out(exchange_from(args.exchange), args.dest)
    except LabInputError as exc:
        raise UsageError(str(exc)) from None
    except OSError as exc:
        raise UsageError(f"{exc.filename or args.dest}: {exc.strerror or exc}") from None
    for why in done.refused:
        print(f"agentos: warning: not handed out: {printable(why)}", file=sys.stderr)
    print(f"{len(done.added)} new file(s) in {done.dest}" if done.added
          else f"nothing new for {done.dest}")
    return EXIT_OK


def cmd_submit(args: argparse.Namespace) -> int:
    from ..labs.notebook.exchange import STUDENT_ENV, exchange_from, submit
    from ..labs.notebook.nbgrader_format import LabInputError

    student = args.student or os.environ.get(STUDENT_ENV)
    if not student:
        raise UsageError(f"who is submitting? pass --student ID (on the class hub ${STUDENT_ENV} says it)")
    try:
        sub = submit(args.notebook, exchange_from(args.exchange), student, lab=args.lab)
    except LabInputError as exc:
        raise UsageError(str(exc)) from None
    except OSError as exc:
        raise UsageError(f"{exc.filename or args.notebook}: {exc.strerror or exc}") from None
    print(f"submitted {args.notebook} as {sub.student}'s {sub.lab} at {sub.timestamp}")
    return EXIT_OK


def cmd_collect(args: argparse.Namespace) -> int:
    from ..labs.notebook.exchange import check_name, collect, exchange_from
    from ..labs.notebook.nbgrader_format import LabInputError

    try:
        if args.lab is not None:
            check_name(args.lab, "lab")
        done = collect(exchange_from(args.exchange), args.submitted, lab=args.lab)
    except LabInputError as exc:
        raise UsageError(str(exc)) from None
    except OSError as exc:
        raise UsageError(f"{exc.filename or args.submitted}: {exc.strerror or exc}") from None
    for why in done.skipped:
        print(f"skipped: {printable(why)}")
    for sub in done.collected:
        print(f"collected {sub.student} {sub.lab} ({sub.timestamp}) -> {sub.path}")
    print(f"{len(done.collected)} collected, {done.unchanged} already up to date, "
          f"{len(done.skipped)} skipped")
    return EXIT_OK

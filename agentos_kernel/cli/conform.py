"""`agentos conform LOG_DIR`: the parity table of one log per conformance scenario.

Thin: load the scenarios, call `conform`, print (scenario, result, what failed).
Exit 0 when every scenario passes (an optional L8 one may be skipped), 1 on any failure
or missing log, 2 when LOG_DIR or a scenario file is bad.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from ..labs.audit.conform import ConformReport
from ..schemas.jsonshape import printable

EXIT_PASS, EXIT_FAIL, EXIT_BAD_INPUT = 0, 1, 2


def table_lines(report: ConformReport) -> list[str]:
    """The parity table: one row per scenario, a failure per continuation line."""
    w = max([len("scenario"), *(len(r.id) for r in report.results)])
    lines = [f"{'scenario':<{w}}  result  what failed"]
    for r in report.results:
        first, *rest = r.failures or ("",)
        status = "FAIL" if r.status == "fail" else r.status
        lines.append(f"{r.id:<{w}}  {status:<6}  {first}".rstrip())
        lines += [f"{'':<{w}}  {'':<6}  {more}" for more in rest]
    counts = {s: sum(1 for r in report.results if r.status == s) for s in ("pass", "fail", "skip")}
    lines.append(f"\n{len(report.results)} scenarios in {report.log_dir}: {counts['pass']} pass, "
                 f"{counts['fail']} fail, {counts['skip']} skipped (optional L8)")
    return lines


def cmd_conform(args: argparse.Namespace) -> int:
    from ..errors import ContractError
    from ..labs.audit.conform import conform
    from ..labs.audit.scenarios import load_scenarios

    try:
        scenarios = load_scenarios(args.scenarios)
        only = [s for s in args.only.split(",") if s] if args.only else None
        report = conform(args.log_dir, scenarios, only)
    except (ContractError, FileNotFoundError) as exc:
        print(f"agentos: error: {printable(str(exc))}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyError as exc:
        print(f"agentos: error: {printable(str(exc.args[0]))}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except (OSError, ValueError) as exc:  # a path no file system can hold (too long, a NUL)
        print(f"agentos: error: {args.log_dir!r}: {getattr(exc, 'strerror', None) or exc}",
              file=sys.stderr)
        return EXIT_BAD_INPUT
    if args.json:
        print(json.dumps(report.to_dict(), indent=2, ensure_ascii=False))
    else:
        print("\n".join(table_lines(report)))
    return EXIT_PASS if report.ok else EXIT_FAIL


def add_commands(sub: argparse._SubParsersAction) -> None:
    """Add `agentos conform`."""
    p = sub.add_parser(
        "conform", help="check one log per conformance scenario and print the parity table",
        description="Polyglot Parity: LOG_DIR holds <scenario-id>/.events.jsonl, one log per "
                    "scenario of conformance/scenarios/, written by any implementation (ours: "
                    "`agentos run-scenarios LOG_DIR`). Each log is audited and checked against "
                    "its scenario's expectations. Exit 0 all pass (optional L8 scenarios may be "
                    "missing), 1 a failure or a missing log, 2 bad LOG_DIR or scenario files.")
    p.add_argument("log_dir", metavar="LOG_DIR", help="directory of <scenario-id>/.events.jsonl")
    p.add_argument("--scenarios", type=Path, default=None, metavar="DIR",
                   help="scenario directory (default: the bundled conformance/scenarios)")
    p.add_argument("--only", metavar="IDS", help="check only these scenario ids, comma-separated")
    p.add_argument("--json", action="store_true", help="print the report as JSON instead")
    p.set_defaults(fn=cmd_conform)

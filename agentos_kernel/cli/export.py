"""`agentos export otel ID`: a session's events as OpenTelemetry traces (issue 14). Thin:
parse, call the library (otel.py, otel_spans.py), print.

The session is read through the runtime's event store. With --endpoint (or the profile's
`telemetry.otlp_endpoint`) the spans go to that OTLP/HTTP collector; with neither (or with
--out) they are written as OTLP JSON. Exit 0 exported; 1 the collector did not take them;
2 bad arguments, an unknown session, or the `otel` extra not installed.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

from .common import EXIT_NOT_OK, EXIT_OK, UsageError, runtime_from_args, session_arg

_URL = re.compile(r"^https?://[^\s/]+\S*$")


def cmd_export_otel(args: argparse.Namespace) -> int:
    from ..telemetry.otel import (  # the SDK loads only for this command
        DEFAULT_SERVICE,
        ExportFailed,
        OtelUnavailable,
        export_otlp,
        otlp_json,
        readable_spans,
        require_sdk,
        session_records,
    )

    sid = session_arg(args.session_id)
    if args.endpoint is not None and not _URL.match(args.endpoint):
        raise UsageError(f"--endpoint {args.endpoint!r} is not an http(s) URL; give the OTLP/HTTP "
                         "traces endpoint, e.g. http://127.0.0.1:4318/v1/traces")
    try:
        require_sdk()
    except OtelUnavailable as exc:
        raise UsageError(str(exc)) from None
    rt = runtime_from_args(args)
    telemetry = rt.profile.telemetry
    try:
        records = session_records(rt, sid)
    except ValueError as exc:  # OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT's value
        raise UsageError(str(exc)) from None
    spans = readable_spans(records, telemetry.service_name if telemetry else DEFAULT_SERVICE)
    trace = f"{records[0].trace_id:032x}"
    endpoint = None if args.out else args.endpoint or (telemetry.otlp_endpoint if telemetry else None)
    if endpoint is None:
        text = json.dumps(otlp_json(spans), indent=2, ensure_ascii=False)
        if args.out:
            _write(Path(args.out), text + "\n")
            print(f"session {sid}: {len(spans)} spans (trace {trace}) written as OTLP JSON to {args.out}")
        else:
            print(text)
        return EXIT_OK
    try:
        export_otlp(spans, endpoint, what=f"the {len(spans)} spans of session {sid}")
    except ExportFailed as exc:
        print(f"agentos: error: {exc}", file=sys.stderr)
        return EXIT_NOT_OK
    print(f"session {sid}: {len(spans)} spans exported to {endpoint} (trace {trace})")
    return EXIT_OK


def _write(path: Path, text: str) -> None:
    if path.exists() and not path.is_file():  # a directory, or a FIFO that would block the write
        raise UsageError(f"--out {str(path)!r} is not a regular file; name a file to write")
    try:
        path.write_text(text, encoding="utf-8")
    except (OSError, ValueError) as exc:
        raise UsageError(f"--out {str(path)!r}: {getattr(exc, 'strerror', None) or exc}") from None


def add_commands(sub: argparse._SubParsersAction) -> None:
    """Add `agentos export otel`."""
    p = sub.add_parser("export", help="export a session's events to another format (otel)")
    export_sub = p.add_subparsers(dest="export_command", required=True, metavar="FORMAT")
    s = export_sub.add_parser(
        "otel", help="a session's events as OpenTelemetry traces (OTLP/HTTP or OTLP JSON)",
        description="Turn a session's events into OpenTelemetry spans: one root span per "
                    "session, an invoke_agent span per role turn, chat spans for model calls "
                    "(GenAI semantic conventions: provider, model, tokens, finish reason), "
                    "execute_tool and hook spans; parents from each event's parent_id, times "
                    "from its ts, and the event ids and seq on every span. Ids are derived from "
                    "the log, so exporting twice gives the same trace. What is exported is what "
                    "the log holds, redacted again with the profile's redaction; tool call "
                    "arguments and results only with the profile's telemetry.capture_content "
                    "or OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true. Sent to "
                    "--endpoint, else to the profile's telemetry.otlp_endpoint; with neither "
                    "(or with --out) written as OTLP JSON. Needs the 'otel' extra. Exit 0 "
                    "exported, 1 the collector did not take the spans, 2 bad input.")
    s.add_argument("session_id", metavar="ID", help="the session to export, e.g. s0001")
    # SUPPRESS: without it the subcommand's default would overwrite a global --workspace
    s.add_argument("--workspace", type=Path, default=argparse.SUPPRESS,
                   help="workspace directory holding agentos.yaml (as the global --workspace)")
    s.add_argument("--profile", help="profile from agentos.yaml whose telemetry and redaction apply "
                                     "(default: its default_profile)")
    where = s.add_mutually_exclusive_group()
    where.add_argument("--endpoint", metavar="URL",
                       help="OTLP/HTTP traces endpoint, e.g. http://127.0.0.1:4318/v1/traces "
                            "(default: the profile's telemetry.otlp_endpoint)")
    where.add_argument("--out", metavar="FILE",
                       help="write the OTLP JSON to FILE instead of sending it anywhere")
    s.set_defaults(fn=cmd_export_otel)

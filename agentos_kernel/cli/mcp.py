"""`agentos mcp serve`: the workspace's tools as an MCP server over stdio. Thin: parse, call
mcp_serve.serve_stdio, report on stderr (stdout is the protocol's)."""

from __future__ import annotations

import argparse
import signal
import sys
from pathlib import Path

from ..errors import Err, ErrorCode
from .common import EXIT_NOT_OK, EXIT_OK, UsageError, runtime_from_args, session_arg


def cmd_mcp_serve(args: argparse.Namespace) -> int:
    from ..tools.mcp_serve import ServedTools, serve_stdio  # the SDK loads only for this command

    sid = session_arg(args.session) if args.session else None
    rt = runtime_from_args(args)

    def ready(served: ServedTools) -> None:
        print(f"agentos mcp serve: session {served.session.session_id} "
              f"(log {rt.store.path(served.session.session_id)}); tools: "
              f"{', '.join(served.names)}; serving on stdin/stdout until the client hangs up",
              file=sys.stderr, flush=True)

    # An MCP client stops its server by closing stdin, then SIGTERM: treated as Ctrl-C, so
    # the session is still closed (not ok, "interrupted") before the process ends.
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    with rt:  # stops the workspace's own bridged MCP servers, if any
        result = serve_stdio(rt, sid, ready=ready, redact=args.redact)
    if isinstance(result, Err):
        if result.error.code == ErrorCode.GATE_DENIED:
            print(f"agentos mcp serve: {result.error.message}; session "
                  f"{result.error.session_id} closed not ok", file=sys.stderr)
            return EXIT_NOT_OK
        raise UsageError(result.error.message)
    print(f"agentos mcp serve: {result.value.summary()}; session "
          f"{result.value.session.session_id} closed", file=sys.stderr)
    return EXIT_OK


def add_commands(sub: argparse._SubParsersAction) -> None:
    """Add `agentos mcp serve`."""
    p = sub.add_parser("mcp", help="Model Context Protocol: serve the workspace's tools")
    mcp_sub = p.add_subparsers(dest="mcp_command", required=True, metavar="SUBCOMMAND")
    s = mcp_sub.add_parser(
        "serve", help="serve the workspace's tools to an MCP client over stdio",
        description="Serve the workspace's tools (the builtin ones and every tool a skill lists "
                    "in allowed-tools) as an MCP server on stdin/stdout. Every tools/call runs "
                    "dispatch_tool's nine steps (schemas, PreToolUse/PostToolUse hooks, events) "
                    "in one session, opened when the server starts and closed when the client "
                    "hangs up; a refusal reaches the client as an isError result naming the "
                    "code, a tool that is not served as the JSON-RPC error -32602. tools/list "
                    "gives each tool's outputSchema and annotations. Messages go to stderr. "
                    "Exit 0 after a clean shutdown, 1 when SessionStart denies, 2 on bad input, "
                    "130 interrupted.")
    # SUPPRESS: without it the subcommand's default would overwrite a global --workspace
    s.add_argument("--workspace", type=Path, default=argparse.SUPPRESS,
                   help="workspace directory holding agentos.yaml (as the global --workspace)")
    s.add_argument("--profile", help="profile from agentos.yaml (default: its default_profile)")
    s.add_argument("--session", metavar="ID", help="session id to use (must be new)")
    s.add_argument("--faults", metavar="PLAN",
                   help="fault preset name(s) or plan file, e.g. hook_deny (every PreToolUse denies)")
    s.add_argument("--redact", choices=("secrets", "all", "none"), default="secrets",
                   help="what is redacted from each tool result sent to the client: secrets (the "
                        "default: what the session log redacts — secret shapes, the API key, the "
                        "profile's redact_patterns and redact_pii), all (that and every PII "
                        "category), none (results as the tools returned them; the log still holds "
                        "them redacted)")
    s.set_defaults(fn=cmd_mcp_serve)

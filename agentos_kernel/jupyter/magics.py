"""IPython magics: %agent, %replay, %events, %diff and %%skill. Thin: parse the line, call the
library (api.py, frames.py), return a value IPython displays.

Every mistake a user can make (a bad option, an unknown preset, profile or session id, a
workspace that does not load) is a UsageError: IPython shows it as one line, without a
traceback, and each message ends with the fix. `%load_ext` imports only this module and
the fault presets: the library (api.py: the runtime, YAML, JSON Schema) loads on the first
magic that needs it, pandas on the first %events.
"""

from __future__ import annotations

import argparse
import shlex
from collections.abc import Callable
from functools import wraps
from typing import Any, NoReturn

from IPython.core.error import UsageError
from IPython.core.magic import Magics, cell_magic, line_magic, magics_class, no_var_expand

from ..providers.faults import PRESETS
from ..schemas.textcheck import text_error
from .shell import expand

KEEP_PARSED = 64
"""Lines each parser keeps parsed (the oldest dropped first)."""


class _Parser(argparse.ArgumentParser):
    """argparse that raises UsageError (one line: what is wrong; how to fix it)."""

    def __init__(self, name: str, example: str, description: str) -> None:
        super().__init__(prog=f"%{name}", description=description, add_help=False,
                         allow_abbrev=False, epilog=f"example: {example}")
        self.example = example
        self._parsed: dict[str, tuple[argparse.Namespace, tuple[str, ...]]] = {}
        """Each line parsed without a problem: its Namespace and the names holding lists."""
        self.add_argument("-h", "--help", action="store_true", help="show this help and do nothing else")

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{self.prog}: {message}; try: {self.example}  (or {self.prog} --help)")

    def parse_line(self, line: str) -> argparse.Namespace | None:
        """Parse a magic's line; None when --help was asked for (the help is printed)."""
        bad = text_error(line, f"the {self.prog} line", "type it again as UTF-8 text")
        if bad:  # a notebook's JSON can carry a lone surrogate ("\ud800"); no log can hold it
            raise UsageError(f"{self.prog}: {bad}")
        try:
            argv = shlex.split(line)
        except ValueError as exc:  # e.g. an apostrophe inside an unquoted prompt
            raise UsageError(f"{self.prog}: {exc} in {line.strip()!r}; put the text in double "
                             f"quotes: {self.example}") from None
        if "-h" in argv or "--help" in argv:
            print(self.format_help())
            return None
        if self.usage is None:
            # Without a usage, parse_intermixed_args formats the whole usage on every call
            # (CPython 3.11: a quarter of a millisecond for %agent); the same text, once.
            self.usage = self.format_usage().removeprefix("usage: ").rstrip("\n").replace("%", "%%")
        return self.parse_intermixed_args(argv)

    def parse_cached(self, line: str) -> argparse.Namespace | None:
        """`parse_line`, answered from the lines parsed before without a problem: a notebook
        runs the same line again and again (a Namespace is a pure function of the line; each
        caller gets its own copy, lists too). A line with a problem or --help goes through `parse_line`
        every time, so its error or help is shown again."""
        kept = self._parsed.get(line)
        if kept is None:
            parsed = self.parse_line(line)
            if parsed is None:
                return None
            lists = tuple(k for k, v in vars(parsed).items() if isinstance(v, list))
            kept = self._parsed[line] = (parsed, lists)
            while len(self._parsed) > KEEP_PARSED:
                del self._parsed[next(iter(self._parsed))]
        parsed, lists = kept
        copy = argparse.Namespace()
        copy.__dict__.update(parsed.__dict__)
        for k in lists:
            setattr(copy, k, list(getattr(parsed, k)))
        return copy


def _errors_as_usage(name: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Turn the library's one-line domain errors into UsageError (no traceback)."""

    def wrap(fn: Callable[..., Any]) -> Callable[..., Any]:
        @wraps(fn)
        def inner(*args: Any, **kwargs: Any) -> Any:
            try:
                return fn(*args, **kwargs)
            except _user_errors() as exc:  # evaluated only when something was raised
                raise UsageError(f"%{name}: {exc}") from None
        return inner
    return wrap


def _user_errors() -> tuple[type[Exception], ...]:
    """The library's one-line domain errors (imported when one may have been raised: the
    library loads on the first magic that needs it, not on every call)."""
    from ..errors import ContractError
    from ..providers.faults import FaultPlanError
    from ..store.events import LogError
    from . import api
    from .source import UnknownSession

    return (ContractError, FaultPlanError, UnknownSession, LogError, api.WorkbenchError)


AGENT = _Parser("agent", '%agent "hello, greet Ada"',
                "Run one request through every layer on the workspace's runtime and return an "
                "AgentRun (verdict, output or the fail-closed error, events, snapshot).")
AGENT.add_argument("prompt", nargs="*", help="the request (quote it)")
AGENT.add_argument("--profile", metavar="NAME",
                   help="runtime profile from agentos.yaml (default: its default_profile)")
AGENT.add_argument("--faults", metavar="PLAN", help=f"fault preset(s), comma-separated "
                   f"({', '.join(sorted(PRESETS))}), or a YAML plan file")
AGENT.add_argument("--session", metavar="ID", help="session id to use (must be new)")
AGENT.add_argument("--workspace", metavar="DIR",
                   help="workspace holding agentos.yaml (default: found from the cwd)")
AGENT.add_argument("--cycle", metavar="ID",
                   help="run the request as an L8 cycle from workflows/cycles/ID.md (e.g. code-review)")
AGENT.add_argument("--mode", metavar="MODE",
                   help="the cycle's mode: interactive, autofix, report-only or headless")
AGENT.add_argument("--live", action="store_true",
                   help="print each event's trace line as it is logged (see a slow model work)")
AGENT.add_argument("--step", action="store_true",
                   help="run live, paused before each event (a LiveStepper; a person allows, "
                        "denies or edits each tool call, or with --cycle each phase advance)")
AGENT.add_argument("--layer", action="append", metavar="L", choices=[f"L{i}" for i in range(1, 9)],
                   help="with --step: pause only at this layer (repeat for more), e.g. --layer L1")
AGENT.add_argument("--fork", metavar="ID@K",
                   help="instead of a new request: copy session ID's first K events (K: the start of "
                        "a role's turn), then run the rest live, e.g. --fork s0001@14 --faults hook_deny")

REPLAY = _Parser("replay", "%replay s0001 --at 10",
                 "Recompute a session's snapshot from its log alone (nothing is re-executed).")
REPLAY.add_argument("session_id", nargs="?", help="the session, e.g. s0001")
REPLAY.add_argument("--at", metavar="N", type=int, help="the state after the first N events")
REPLAY.add_argument("--workspace", metavar="DIR", help="workspace holding the session")
REPLAY.add_argument("--summary", action="store_true",
                    help="bounded memory for long logs: counts, tallies and the last 20 tool calls, hook "
                         "decisions, violations and errors (snapshot_v2)")
REPLAY.add_argument("--verify", action="store_true",
                    help="re-run the session with its recorded answers and tool results played back "
                         "and report the first event where the new log differs")

EVENTS = _Parser("events", "%events s0001 --layer L1",
                 "A session's events as a pandas DataFrame (seq, ts, type, layer, actor, role, parent, "
                 "tokens_in, tokens_out, cost_usd, duration_ms, hook, decision; NA where absent).")
EVENTS.add_argument("session_id", nargs="?", help="the session, e.g. s0001")
EVENTS.add_argument("--type", metavar="T", help="only events of type T or T.* (e.g. hook.fired, tool)")
EVENTS.add_argument("--layer", metavar="L", choices=[f"L{i}" for i in range(1, 9)], help="only layer L1..L8")
EVENTS.add_argument("--workspace", metavar="DIR", help="workspace holding the session")

DIFF = _Parser("diff", "%diff s0001 s0002",
               "Two sessions side by side, aligned by step (role + event type): the first divergence "
               "highlighted, per-role token and cost deltas (the engine `rerun --verify` uses).")
DIFF.add_argument("a", nargs="?", help="session A, e.g. s0001")
DIFF.add_argument("b", nargs="?", help="session B, e.g. s0002 (a fork of A)")
DIFF.add_argument("--workspace", metavar="DIR", help="workspace holding both sessions")

SKILL = _Parser("%skill", "%%skill --dry-run",
                "The cell body is a SKILL.md: its frontmatter is checked against skill_frontmatter_v1; "
                "a valid skill is written to skills/<name>/SKILL.md and registered.")
SKILL.add_argument("--dry-run", action="store_true", help="check only; write nothing")
SKILL.add_argument("--workspace", metavar="DIR", help="workspace to write the skill into")


def _need_session(parser: _Parser, args: argparse.Namespace, last: str | None) -> str:
    if args.session_id:
        return args.session_id
    hint = f"%{parser.prog.lstrip('%')} {last}" if last else parser.example
    raise UsageError(f"{parser.prog}: missing the session id; try: {hint}")


@magics_class
class AgentMagics(Magics):
    """%agent, %replay, %events, %diff and %%skill."""

    last_session: str | None = None

    @line_magic
    @no_var_expand  # expanded here, the same way, only when the line holds a $, { or }
    @_errors_as_usage("agent")
    def agent(self, line: str) -> Any:
        """Run a request: %agent [--profile NAME] [--faults PLAN] [--session ID] [--cycle ID]
        [--live] "PROMPT"; step it live: %agent --step [--layer L] "PROMPT"; or fork one:
        %agent --fork ID@K [--profile NAME] [--faults PLAN]."""
        args = AGENT.parse_cached(expand(self.shell, line, above=2))  # run_line_magic, inner, here
        if args is None:
            return None
        prompt = " ".join(args.prompt).strip()
        from . import api  # the runtime loads here, on the first request

        if args.fork:
            if prompt or args.cycle or args.step or args.layer:
                AGENT.error("--fork runs the parent's own request: drop the prompt, --cycle, "
                            "--step and --layer")
            run = api.fork_agent(args.fork, profile=args.profile, faults=args.faults,
                                 session=args.session, workspace=args.workspace)
            self.last_session = run.session_id
            return run
        if not prompt:
            AGENT.error("missing the request")
        if args.layer and not args.step:
            AGENT.error("--layer applies to --step: add --step")
        if args.step:
            if args.live:
                AGENT.error("--step shows the trace in the widget: drop --live")
            from .widgets.livestep import LiveStepper  # ipywidgets loads here, on first use

            return LiveStepper(prompt, workspace=args.workspace, profile=args.profile,
                               faults=args.faults, layers=args.layer, session_id=args.session,
                               cycle=args.cycle, mode=args.mode)
        run = api.run_agent(prompt, profile=args.profile, faults=args.faults, session=args.session,
                            workspace=args.workspace, cycle=args.cycle, mode=args.mode,
                            live=args.live)
        self.last_session = run.session_id
        return run

    @line_magic
    @_errors_as_usage("replay")
    def replay(self, line: str) -> Any:
        """Recompute a snapshot from the log: %replay SESSION_ID [--at N] [--summary] [--verify]."""
        args = REPLAY.parse_line(line)
        if args is None:
            return None
        if args.at is not None and args.at < 0:
            REPLAY.error(f"--at {args.at} is negative; N counts events from 0")
        from . import api

        if args.verify:
            if args.at is not None:
                REPLAY.error("--verify re-runs the whole session; drop --at")
            if args.summary:
                REPLAY.error("--verify re-runs the session and compares the logs; drop --summary")
            return api.verify_session(_need_session(REPLAY, args, self.last_session), args.workspace)
        return api.replay_session(_need_session(REPLAY, args, self.last_session), args.at, args.workspace,
                                  summary=args.summary)

    @line_magic
    @_errors_as_usage("events")
    def events(self, line: str) -> Any:
        """A session's timeline as a DataFrame: %events SESSION_ID [--type T] [--layer L]."""
        args = EVENTS.parse_line(line)
        if args is None:
            return None
        from ..telemetry.trace import check_type
        from .frames import events_frame  # pandas loads here, on first use

        frame = events_frame(_need_session(EVENTS, args, self.last_session), args.workspace)
        if args.type:
            try:
                check_type(args.type, frame["type"])
            except ValueError as exc:
                EVENTS.error(str(exc))
            frame = frame[(frame["type"] == args.type) | frame["type"].str.startswith(args.type + ".")]
        if args.layer:
            frame = frame[frame["layer"] == args.layer]
        return frame

    @line_magic
    @_errors_as_usage("diff")
    def diff(self, line: str) -> Any:
        """Two sessions side by side: %diff A B."""
        args = DIFF.parse_line(line)
        if args is None:
            return None
        if not (args.a and args.b):
            DIFF.error("name both sessions")
        from .widgets.diffview import DiffView, diff_sessions  # ipywidgets loads here, on first use

        return DiffView(diff_sessions(args.a, args.b, args.workspace))

    @cell_magic
    @_errors_as_usage("%skill")
    def skill(self, line: str, cell: str) -> Any:
        """Check and register the cell body as a SKILL.md: %%skill [--dry-run] [--workspace DIR]."""
        args = SKILL.parse_line(line)
        if args is None:
            return None
        from . import api

        return api.register_skill(cell, workspace=args.workspace, dry_run=args.dry_run)


def load_ipython_extension(ipython: Any) -> None:
    """`%load_ext agentos_kernel`."""
    ipython.register_magics(AgentMagics)

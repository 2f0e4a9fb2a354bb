"""Recorded tools for a re-run: the same names and schemas as the runtime's tools, but each
`invoke` returns what the recorded session's tool returned, so a re-run repeats no side
effect (no file is written, no command runs). Dispatch (scope, schema_in, hooks,
schema_out) still runs for real: only the call itself is played back.

Tool call ids (`t1`) restart in every role turn, so recorded calls are matched by their
order in the log, and checked by name and arguments: a call the recording did not make,
or made with other arguments, is an `Err` naming it, never a made-up result.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from typing import Any

from ..errors import DomainError, Err, ErrorCode, Ok, Result
from ..schemas.jsondiff import first_difference, rename_session, short
from ..store.events import Event
from ..tools.dispatch import ToolContext, ToolRegistry


@dataclass(frozen=True)
class _Recorded:
    """One recorded tool.invoke and what came back."""

    name: str
    args: Any
    result: dict[str, Any] | None
    error_kind: str = "tool"
    retryable: bool = False


def _recorded(events: list[Event], rename: tuple[str, str] | None) -> list[_Recorded]:
    results = {e.parent_id: e.payload for e in events if e.type == "tool.result"}
    # A failed call's kind and retryable flag are on the domain.error that follows its result.
    errors = {e.parent_id: e.payload for e in events
              if e.type == "domain.error" and e.actor.startswith("tool:")}
    out = []
    for e in events:
        if e.type != "tool.invoke":
            continue
        err = errors.get(e.id, {})
        result = results.get(e.id)
        out.append(_Recorded(e.payload["name"], e.payload["args"],
                             rename_session(result, *rename) if rename and result else result,
                             err.get("kind", "tool"), bool(err.get("retryable", False))))
    return out


def recorded_tools(tools: ToolRegistry, events: Iterable[Event], *,
                   rename: tuple[str, str] | None = None) -> ToolRegistry:
    """A registry like `tools` whose calls play back `events` in order. `rename=(old, new)`
    puts the re-run's session id where the recording had its own (artifact paths)."""
    calls = _recorded(list(events), rename)
    played = [0]  # one cursor for every tool: the log orders calls across tools

    def player(name: str) -> Callable[[dict[str, Any], ToolContext], Result[Any]]:
        def invoke(args: dict[str, Any], _context: ToolContext) -> Result[Any]:
            n = played[0] = played[0] + 1
            if n > len(calls):
                return _diverged(f"tool call #{n} ({name}) has no recorded result: the recorded "
                                 f"run made {len(calls)} tool call(s)")
            rec = calls[n - 1]
            if rec.name != name:
                return _diverged(f"tool call #{n}: recorded {rec.name}, new {name}")
            was = rename_session(rec.args, *rename) if rename else rec.args
            found = first_difference(was, args, "args")
            if found is not None:
                path, a, b = found
                return _diverged(f"tool call #{n} ({name}) {path}: recorded {short(a)} new {short(b)}")
            if rec.result is None:
                return _diverged(f"tool call #{n} ({name}) has no recorded result (the run ended there)")
            if rec.result.get("ok"):
                return Ok(rec.result.get("result"))
            error = rec.result.get("error", {})
            return Err(DomainError(rec.error_kind, str(error.get("code", ErrorCode.TOOL_ERROR)),
                                   str(error.get("message", "")), retryable=rec.retryable))
        return invoke

    return ToolRegistry(replace(tools[name], invoke=player(name)) for name in tools.names())


def _diverged(why: str) -> Err:
    return Err(DomainError("tool", ErrorCode.TOOL_ERROR, f"rerun diverged: {why}"))


__all__ = ["recorded_tools"]

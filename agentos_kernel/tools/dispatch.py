"""L1 MCP-first Tool Protocol: the only way the runtime touches the outside world.

`dispatch_tool` runs the spec's nine steps in the spec's order; every failure is a
`DomainError` result that is also an event in the log.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import DomainError, Err, ErrorCode, Ok, Result, exception_text
from ..hooks import HookBus
from ..hooks.bus import plain_json
from ..store.recorder import SessionLog
from .path_args import path_refusal
from .write_scope import WriteScope, default_scope

SERVED_ACTOR = "mcp-client"
"""The actor of `session.start` in a session served to an MCP client (`agentos mcp serve`),
and of its tool.invoke events: its tool calls came from outside, not from a request."""


@dataclass(frozen=True)
class ToolContext:
    """What a tool may know about the run that calls it."""

    workspace: Path
    """Root every file tool is confined to."""
    session_id: str
    """The calling session."""
    scope: WriteScope = None  # type: ignore[assignment]  # None: the workspace's default scope
    """Where tools may write: the `writable` folders, never a contract (write_scope.py)."""

    def __post_init__(self) -> None:
        if self.scope is None:  # a context made by hand gets the default rule, never none
            object.__setattr__(self, "scope", default_scope(self.workspace))


@dataclass(frozen=True)
class ToolDef:
    """A tool (the spec's `ToolDef`)."""

    name: str
    """Registry key, used in tool calls and allowed-tools."""
    schema_in: str
    """Schema id its arguments must satisfy."""
    schema_out: str
    """Schema id its result must satisfy."""
    invoke: Callable[[dict[str, Any], ToolContext], Result[Any]]
    """Does the work; returns `Ok(result)` or `Err(DomainError)`."""
    description: str = ""
    """One line for the model's tool list."""
    confined: bool = False
    """True when the tool confines its own paths through `ToolContext.scope` (the builtins);
    dispatch refuses any other tool's path-like argument that names a contract first."""
    path_args: tuple[str, ...] = ()
    """Argument names its input schema marks as paths, beyond the usual names (path_args.py)."""
    read_only: bool = False
    """The tool only reads (MCP's readOnlyHint): a tool that does its own I/O is then not
    path-checked. Served to MCP clients (`agentos mcp serve`) with the four below."""
    destructive: bool | None = None
    """It may overwrite or delete (MCP's destructiveHint; None: not said, which MCP reads as
    true). Meaningful only when not read_only."""
    idempotent: bool | None = None
    """The same call again has no further effect (MCP's idempotentHint; None: not said)."""
    open_world: bool | None = None
    """It reaches beyond the workspace, e.g. the web (MCP's openWorldHint; None: not said)."""
    title: str = ""
    """A human-readable name for a client's UI (MCP's annotations.title); "" for none."""
    structured_out: str = ""
    """Schema id of the `structuredContent` of its MCP result, for a bridged tool whose server
    declares an outputSchema ("" otherwise: then schema_out describes the result itself)."""


@dataclass(frozen=True)
class ToolCall:
    """A model's request to call a tool (the spec's `ToolCall`)."""

    id: str
    """Call id from the model (`t1`), echoed in events and tool messages."""
    name: str
    """Tool name."""
    args: Any
    """Arguments, checked against the tool's schema_in."""


class ToolRegistry:
    """Tools by name; the error names the bad key and what is known."""

    def __init__(self, tools: Iterable[ToolDef] = ()) -> None:
        self._tools: dict[str, ToolDef] = {}
        for t in tools:
            self.register(t)

    def register(self, tool: ToolDef) -> None:
        if tool.name in self._tools:
            raise ValueError(f"tool {tool.name!r} is already registered")
        self._tools[tool.name] = tool

    def find(self, name: str) -> ToolDef | None:
        return self._tools.get(name)

    def __getitem__(self, name: str) -> ToolDef:
        try:
            return self._tools[name]
        except KeyError:
            raise KeyError(f"unknown tool {name!r}; registered: {', '.join(self.names())}") from None

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def names(self) -> list[str]:
        return sorted(self._tools)


def dispatch_tool(
    call: ToolCall,
    *,
    tools: ToolRegistry,
    allowed_tools: frozenset[str],
    hooks: HookBus,
    log: SessionLog,
    context: ToolContext,
    actor: str = "worker",
) -> Result[Any]:
    """The spec's nine steps, in order."""
    # 1. find the tool in the registry
    tool = tools.find(call.name)
    if tool is None:
        return log.fail(DomainError("gate", ErrorCode.TOOL_NOT_FOUND,
                                    f"no tool named {call.name!r} is registered"),
                        layer="L1", actor=actor)
    # 2. the caller's allowed tool scope (the selected skill's allowed-tools)
    if call.name not in allowed_tools:
        scope = ", ".join(sorted(allowed_tools)) or "no tools"
        return log.fail(DomainError("gate", ErrorCode.TOOL_NOT_ALLOWED,
                                    f"tool {call.name!r} is outside the skill scope ({scope})"),
                        layer="L1", actor=actor)
    # 3. schema_in
    checked = log.check(call.args, tool.schema_in, where=f"tool {call.name} input", actor=actor)
    if isinstance(checked, Err):
        return checked
    # 4. PreToolUse: a transform replaces `args`, which must pass schema_in again
    gate, data = hooks.fire(
        "PreToolUse", {"tool": call.name, "args": call.args}, log,
        validate=lambda d: log.check(d["args"], tool.schema_in,
                                     where=f"PreToolUse transform of {call.name}", actor="hook"),
    )
    if gate.decision == "deny":
        return log.fail(DomainError("gate", ErrorCode.GATE_DENIED,
                                    f"PreToolUse denied {call.name}: {gate.reason}"),
                        layer="L6", actor=actor)
    args = data["args"]
    # 5. tool.invoke
    invoked = log.append("tool.invoke", actor, {"id": call.id, "name": call.name, "args": args})
    # 6. the call itself; a tool that raises, or answers with anything but Ok(JSON) or
    # Err(DomainError), is a broken tool, reported once, here. A tool that does not confine
    # its own paths (bridged, your own) is refused a path argument naming a contract before
    # it is called: built in, not a hook, so no agentos.yaml edit can turn it off.
    try:
        refused = None if tool.confined else path_refusal(tool, args, context.scope)
        result = refused or _as_result(call.name, tool.invoke(args, context))
    except KeyboardInterrupt:
        log.append("tool.result", f"tool:{call.name}", {  # the invoke keeps its result pair
            "id": call.id, "name": call.name, "ok": False,
            "error": {"code": ErrorCode.INTERRUPTED, "message": "interrupted (Ctrl-C)"}},
            invoked.id)
        raise
    except Exception as exc:
        result = _broken(call.name, f"raised {type(exc).__name__}: {exception_text(exc)}")
    # 7. tool.result
    if isinstance(result, Err):
        log.append("tool.result", f"tool:{call.name}", {
            "id": call.id, "name": call.name, "ok": False,
            "error": {"code": result.error.code, "message": result.error.message},
        }, invoked.id)
        return log.fail(result.error, layer="L1", actor=f"tool:{call.name}", parent_id=invoked.id)
    log.append("tool.result", f"tool:{call.name}",
               {"id": call.id, "name": call.name, "ok": True, "result": result.value}, invoked.id)
    # 8. PostToolUse: may deny (withhold) or transform (`result`, e.g. redaction)
    gate, data = hooks.fire(
        "PostToolUse", {"tool": call.name, "result": result.value}, log,
        validate=lambda d: log.check(d["result"], tool.schema_out,
                                     where=f"PostToolUse transform of {call.name}", actor="hook"),
        parent_id=invoked.id,
    )
    if gate.decision == "deny":
        return log.fail(DomainError("gate", ErrorCode.GATE_DENIED,
                                    f"PostToolUse withheld the result of {call.name}: {gate.reason}"),
                        layer="L6", actor=actor, parent_id=invoked.id)
    # 9. schema_out
    return log.check(data["result"], tool.schema_out, where=f"tool {call.name} output",
                     actor=f"tool:{call.name}", parent_id=invoked.id)


def _as_result(name: str, got: Any) -> Result[Any]:
    if isinstance(got, Err) and isinstance(got.error, DomainError):
        return got
    if not isinstance(got, Ok):
        return _broken(name, f"returned {type(got).__name__}, not Ok(...) or Err(DomainError)")
    try:
        return Ok(plain_json(got.value))
    except Exception as exc:  # a set, an object, NaN, a cycle: nothing a log or model can read
        return _broken(name, f"returned a result that is not JSON: {exception_text(exc)}")


def _broken(name: str, what: str) -> Err:
    return Err(DomainError("tool", ErrorCode.TOOL_ERROR, f"{name} {what}"))


__all__ = ["SERVED_ACTOR", "Ok", "ToolCall", "ToolContext", "ToolDef", "ToolRegistry", "dispatch_tool"]

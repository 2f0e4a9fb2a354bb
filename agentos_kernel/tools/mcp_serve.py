"""`agentos mcp serve`: the workspace's tools as an MCP server over stdio (the official SDK).

Every `tools/call` goes through `dispatch_tool`'s nine steps (registry, scope, schema_in,
PreToolUse, tool.invoke, the call, tool.result, PostToolUse, schema_out), so an MCP client
(an IDE, a desktop assistant, another agent) gets the same gates and the same log as the
Worker role. A refusal (a hook's deny, a schema violation, a tool error) reaches the client
as a `CallToolResult` with `isError: true` whose text is `<CODE>: <message>`; a tool that is
not served is a JSON-RPC error (-32602, as MCP's Error Handling prescribes). Each result is
redacted before it is sent, like the log's copy (`--redact`, OUTBOUND). tools/list gives each
tool's outputSchema (its structuredContent's) and annotations (ToolDef's hints).

One server run is one session: `session.start` (actor `mcp-client`) is logged when the
server starts, before the client connects, and `session.close` when the client hangs up
(stdin ends), so one log holds everything that client did. SessionStart is fired once; a
deny closes the session not ok and nothing is served. The session closes ok when the server
shuts down cleanly, whatever its calls returned (each call's outcome is its own
tool.result / domain.error); Ctrl-C or SIGTERM close it not ok, "interrupted".

Served tools: the builtin ones and every registered tool some skill lists in allowed-tools
(a bridged `<server>__<tool>` included); that set is the scope of step 2. A bridged server's
changed tool list is taken up at the next tools/list or tools/call.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import anyio
from mcp import MCPError, types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

from .. import __version__
from ..errors import DomainError, Err, ErrorCode, Ok, Result
from ..schemas.registry import SchemaRegistry
from ..store.redaction import PII_CATEGORIES, Redactor
from .builtin import BUILTIN_TOOLS
from .dispatch import SERVED_ACTOR, ToolCall, ToolDef, dispatch_tool
from .mcp_client import RESULT_SCHEMA

if TYPE_CHECKING:  # the server is handed a runtime (cli/mcp.py); L1 never imports the layers above
    from ..kernel import Runtime
    from ..roles.session import Session

SERVE_PROMPT = "agentos mcp serve: tool calls from an MCP client"
"""The session.start prompt of a served session (there is no user request)."""


def served_tool_names(rt: Runtime) -> list[str]:
    """The builtin tools and every registered tool some skill may use, sorted."""
    names = {t.name for t in BUILTIN_TOOLS}
    for skill in rt.skills.skills.values():
        names.update(t for t in skill.allowed_tools if t in rt.tools)
    return sorted(names)


@dataclass
class ServedTools:
    """The tools of one runtime behind one session: what the MCP handlers call."""

    rt: Runtime
    """The runtime whose registry, hooks and schemas every call uses."""
    session: Session
    """The served session: every call's events go to its log."""
    calls: int = 0
    """tools/call requests dispatched so far."""
    refused: int = 0
    """Of those, how many ended in an error result."""
    redact: str = "secrets"
    """What is redacted from each result sent to the client (`--redact`, OUTBOUND)."""

    @property
    def names(self) -> list[str]:
        """The served tools (also the allowed scope of every call)."""
        return served_tool_names(self.rt)

    def refresh(self) -> bool:
        """Take up a bridged server's new tool list (`tools/list_changed`) mid-session: the
        served session lasts as long as the client, so it does not wait for the next one."""
        if not self.rt.refresh_tools():
            return False
        self.session.tools = self.rt.tools
        self.session.schemas = self.session.log.schemas = self.rt.schemas
        return True

    def tools(self) -> list[types.Tool]:
        """The MCP tool list: name, description, the resolved input and output schemas and
        the annotations each ToolDef declares."""
        self.refresh()
        return [served_tool(self.rt.tools[name], self.rt.schemas) for name in self.names]

    def call(self, name: str, args: Any) -> types.CallToolResult:
        """One tools/call through dispatch_tool (synchronous: the SessionLog has one writer).
        A tool that is not served is logged like any refusal, then raised as the JSON-RPC
        error MCP prescribes for an unknown tool (INVALID_PARAMS), not sent as a result."""
        self.refresh()
        self.calls += 1
        result = dispatch_tool(ToolCall(f"m{self.calls}", name, args), tools=self.rt.tools,
                               allowed_tools=frozenset(self.names), hooks=self.rt.hooks,
                               log=self.session.log, context=self.session.tool_context,
                               actor=SERVED_ACTOR)
        if isinstance(result, Err):
            self.refused += 1
            if result.error.code in (ErrorCode.TOOL_NOT_FOUND, ErrorCode.TOOL_NOT_ALLOWED):
                raise MCPError(types.INVALID_PARAMS, f"Unknown tool: {name}")
            if result.error.code == ErrorCode.SCHEMA_INVALID:
                # dispatch_tool logged only the schema.violation; the Worker path records its
                # refusal as the error handed back to the model, here it is handed to the
                # client, and the log says so (else the violation looks accepted)
                result = self.session.log.fail(result.error, layer="L7", actor=SERVED_ACTOR)
        tool = self.rt.tools[name]
        out = to_call_result(result, bridged=tool.schema_out == RESULT_SCHEMA,
                             wrapped=_wrapped(tool, self.rt.schemas))
        return outbound(out, self.redact, self.session.log.redact)

    def summary(self) -> str:
        """What the close says: how many calls, how many refused or failed."""
        return (f"MCP client disconnected after {self.calls} tool call(s), "
                f"{self.refused} refused or failed")


OUTBOUND = ("secrets", "all", "none")
"""`agentos mcp serve --redact`: the session log's redaction (secret shapes, the API key, the
profile's patterns and PII categories; the default), that and every PII category, or none
(the client gets what the tool returned; the log still holds it redacted)."""


def outbound(result: types.CallToolResult, mode: str, log_redact: Redactor) -> types.CallToolResult:
    """`result` as the client gets it under `mode` (OUTBOUND): text, structured content and a
    bridged server's content alike."""
    if mode == "none":
        return result
    redact = log_redact.with_pii(PII_CATEGORIES) if mode == "all" else log_redact
    return types.CallToolResult.model_validate(redact(result.model_dump(by_alias=True,
                                                                        exclude_none=True)))


def served_tool(tool: ToolDef, schemas: SchemaRegistry) -> types.Tool:
    """`tool` as an MCP client sees it in tools/list. outputSchema: the schema of its
    structuredContent, every `$ref` inlined (a client validates against it alone); a bridged
    tool's is its server's own, and MCP (to 2025-11-25) wants an object at the root, so a
    schema_out that is not one is wrapped as `{"result": ...}`, as the SDK's MCPServer does."""
    if tool.schema_out == RESULT_SCHEMA:
        output = schemas.resolved(tool.structured_out) if tool.structured_out else None
    elif _wrapped(tool, schemas):
        output = {"type": "object", "required": ["result"], "additionalProperties": False,
                  "properties": {"result": schemas.resolved(tool.schema_out)},
                  "description": f"The result of {tool.name} ({tool.schema_out}, not a JSON "
                                 "object) under the key `result`."}
    else:
        output = schemas.resolved(tool.schema_out)
    hints = types.ToolAnnotations(title=tool.title or None, read_only_hint=tool.read_only or None,
                                  destructive_hint=tool.destructive,
                                  idempotent_hint=tool.idempotent, open_world_hint=tool.open_world)
    said = hints.model_dump(exclude_none=True)
    return types.Tool(name=tool.name, description=tool.description or None,
                      input_schema=schemas.resolved(tool.schema_in), output_schema=output,
                      annotations=hints if said else None)


def _wrapped(tool: ToolDef, schemas: SchemaRegistry) -> bool:
    """True when the tool's result is not described as an object (see served_tool)."""
    return tool.schema_out != RESULT_SCHEMA and schemas.resolved(tool.schema_out).get("type") != "object"


def to_call_result(result: Result[Any], bridged: bool, wrapped: bool = False) -> types.CallToolResult:
    """A dispatch result as MCP's CallToolResult: an Err is `isError` with `CODE: message`;
    a bridged tool's result (already a CallToolResult payload) passes through; any other
    value is its JSON as text and its structuredContent (under `result` when `wrapped`)."""
    if isinstance(result, Err):
        err = result.error
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=f"{err.code}: {err.message}")],
            is_error=True)
    value = result.value
    if bridged:
        return types.CallToolResult.model_validate(value)
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=json.dumps(value, ensure_ascii=False))],
        structured_content={"result": value} if wrapped else value)


def serve_stdio(rt: Runtime, session_id: str | None = None, *,
                ready: Callable[[ServedTools], None] | None = None,
                redact: str = "secrets") -> Result[ServedTools]:
    """Serve the runtime's tools over this process's stdin/stdout until the client hangs
    up; the served session is opened first and closed last (see the module docstring).
    `ready` is called once SessionStart allowed, before the first message is read. Err:
    the session could not be opened, or SessionStart denied (then it is closed not ok)."""
    session = rt.start_session(SERVE_PROMPT, session_id, actor=SERVED_ACTOR)
    if isinstance(session, Err):
        return session
    served = ServedTools(rt, session, redact=redact)
    with rt.guarded(session) as s:
        gate, _ = rt.hooks.fire("SessionStart", {"session_id": s.session_id,
                                                 "profile": rt.profile.name}, s.log)
        if gate.decision == "deny":
            denied = s.log.fail(DomainError("gate", ErrorCode.GATE_DENIED,
                                            f"SessionStart denied: {gate.reason}"),
                                layer="L6", actor="system")
            s.log.append("session.close", "system", {
                "ok": False, "reason": f"{denied.error.code}: {denied.error.message}"})
            return denied
        if ready is not None:
            ready(served)
        anyio.run(_serve, served)
        s.log.append("session.close", "system", {"ok": True, "output": None,
                                                 "reason": served.summary()})
    return Ok(served)


async def _serve(served: ServedTools) -> None:
    one = anyio.CapacityLimiter(1)  # one call at a time: the session log has one writer

    async def list_tools(ctx: Any, params: types.PaginatedRequestParams | None
                         ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=await anyio.to_thread.run_sync(served.tools,
                                                                          limiter=one))

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        args = params.arguments if params.arguments is not None else {}
        return await anyio.to_thread.run_sync(served.call, params.name, args, limiter=one)

    server: Server[Any] = Server("agentos", version=__version__, on_list_tools=list_tools,
                                 on_call_tool=call_tool)
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


__all__ = ["OUTBOUND", "SERVED_ACTOR", "ServedTools", "outbound", "serve_stdio", "served_tool",
           "served_tool_names", "to_call_result"]

"""L1: MCP-style tool registry and dispatch_tool (the spec's nine steps)."""

from collections.abc import Callable
from dataclasses import dataclass

from .result import DomainError, Err, Ok


@dataclass
class ToolDef:
    name: str
    schema_in: str
    fn: Callable[[dict], dict]

    def invoke(self, args: dict) -> dict:
        return self.fn(args)


class MCPRegistry:
    def __init__(self, tools: list[ToolDef]):
        self.tools = {t.name: t for t in tools}

    def find_tool(self, name: str) -> ToolDef | None:
        return self.tools.get(name)


def echo_tool() -> ToolDef:
    return ToolDef("echo", "tool_echo_in_v1", lambda args: {"text": args["text"]})


def dispatch_tool(call, mcp, schemas, hooks, events, session_id, allowed_tools):
    tool = mcp.find_tool(call["name"])
    if tool is None:
        return Err(DomainError("gate", "TOOL_NOT_FOUND", call["name"]))
    if call["name"] not in allowed_tools:
        return Err(DomainError("gate", "TOOL_NOT_ALLOWED", call["name"]))
    checked = schemas.validate(call["args"], tool.schema_in)
    if isinstance(checked, Err):
        return checked
    gate = hooks.fire("PreToolUse", {"tool": call["name"], "args": call["args"]})
    if gate.decision == "deny":
        return Err(DomainError("gate", "GATE_DENIED", gate.reason))
    invoke = events.append(session_id, "tool.invoke", "worker",
                           {"id": call["id"], "name": call["name"], "args": call["args"]})
    result = tool.invoke(gate.output or call["args"])
    events.append(session_id, "tool.result", f"tool:{call['name']}",
                  {"id": call["id"], "name": call["name"], "ok": True, "result": result},
                  parent_id=invoke.id)
    hooks.fire("PostToolUse", {"tool": call["name"], "result": result})
    return Ok(result)

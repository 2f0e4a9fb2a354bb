"""The bridged MCP servers of one runtime as ToolDefs and schemas (mcp.py talks to each server).

Each server tool becomes a `ToolDef` named `<server>__<tool>`, so a skill lists it in
`allowed-tools` and `dispatch_tool` runs its nine steps on it unchanged. The separator is
`__`, not `.`, because the name is sent to the model as the tool name and the providers'
tool-name rules (Anthropic, OpenAI: `^[a-zA-Z0-9_-]{1,64}$`) reject dots. Each tool's
`inputSchema` is registered as schema `mcp_<server>__<tool>_in` (step 3 rejects bad
arguments before the server sees them), its `outputSchema`, if any, as `..._out`; every result
is checked against the generic `mcp_tool_result_v1`. Its `annotations` become the ToolDef's
hints, so `agentos mcp serve` passes both on as the server declared them. A bridged tool
does its own I/O, so dispatch checks its path arguments (path_args.py: named `path`, `file`,
..., or marked so by its schema) against the contracts before the call, unless the server
marks it read-only (`readOnlyHint`).

`BridgedTools` owns the bridges. When a server's tool list changes (`tools/list_changed`),
`refresh()` rebuilds the registry and schemas; the Runtime applies it when a session opens,
so the tool set is fixed for the length of a request (a replay sees one list per session).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from mcp import types

from ..config import WorkspaceConfig
from ..errors import ContractError, Problem, Result
from ..schemas.registry import SchemaRegistry
from .dispatch import ToolContext, ToolDef
from .mcp_client import RESULT_SCHEMA, McpBridge
from .path_args import schema_path_args

MAX_NAME = 64  # the providers' tool-name limit
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")


class BridgedTools:
    """The started bridges of one runtime, and the tools and schemas they add."""

    def __init__(self, config: WorkspaceConfig, base_schemas: SchemaRegistry,
                 base_tools: tuple[ToolDef, ...], bridges: list[McpBridge]) -> None:
        self.config, self.bridges = config, bridges
        self._base_schemas, self._base_tools = base_schemas, base_tools
        self._seen: list[int] = [-1] * len(bridges)
        self._defs: list[tuple[list[ToolDef], dict[str, dict[str, Any]]]] = [([], {})] * len(bridges)
        self.schemas, self.tools = base_schemas, base_tools
        self.problems: list[Problem] = []
        """What the last refresh could not take (the previous list of that server is kept)."""

    def refresh(self) -> bool:
        """Rebuild from every server's current tool list if any changed since the last
        build; True when it did. A list that cannot be bridged (a name too long, a clash)
        leaves that server's previous tools in place and is kept in `problems`."""
        changed = False
        self.problems = []
        for i, bridge in enumerate(self.bridges):
            gen, tools = bridge.generation, bridge.tools
            if gen == self._seen[i]:
                continue
            try:
                self._defs[i] = tool_defs(bridge, tools)
            except ContractError as exc:
                if self._seen[i] < 0:
                    raise  # at start a bad list is a configuration error, as before
                self.problems += exc.problems
            self._seen[i] = gen
            changed = True
        if changed:
            schemas, defs = self._base_schemas, list(self._base_tools)
            for bridge, (bridged, docs) in zip(self.bridges, self._defs, strict=True):
                schemas = schemas.with_schemas(docs, f"{self.config.file}#{bridge.config.where}")
                defs += bridged
            self.schemas, self.tools = schemas, tuple(defs)
        return changed

    def close(self) -> None:
        """Stop every server (idempotent)."""
        for bridge in self.bridges:
            bridge.close()


def bridge_servers(config: WorkspaceConfig, schemas: SchemaRegistry, root: Any,
                   tools: Iterable[ToolDef] = ()) -> BridgedTools:
    """Start every configured server and bridge its tools after `tools`. On any failure the
    servers already started are closed and ContractError names the agentos.yaml entry."""
    if RESULT_SCHEMA not in schemas:
        raise ContractError([Problem(config.file, "mcp_servers", f"no schema {RESULT_SCHEMA!r} is "
                                     f"loaded; copy schemas/{RESULT_SCHEMA}.json from the reference "
                                     "workspace (agentos init)")])
    started: list[McpBridge] = []
    try:
        for server in config.mcp_servers:
            bridge = McpBridge(server, config.file, root)
            started.append(bridge)
            bridge.start()
        bridged = BridgedTools(config, schemas, tuple(tools), started)
        bridged.refresh()
    except BaseException:
        for bridge in started:
            bridge.close()
        raise
    return bridged


def tool_defs(bridge: McpBridge, tools: list[types.Tool]
              ) -> tuple[list[ToolDef], dict[str, dict[str, Any]]]:
    """The ToolDefs for a server's tools and their input schemas by schema id."""
    server = bridge.config.name
    defs: list[ToolDef] = []
    docs: dict[str, dict[str, Any]] = {}
    problems: list[Problem] = []
    for tool in tools:
        local = _UNSAFE.sub("_", tool.name)  # MCP allows `.` and `/` in names; providers do not
        name = f"{server}__{local}"
        sid = f"mcp_{server}__{local}_in".replace("-", "_")
        where = f"{bridge.config.where} tool {tool.name!r}"
        if len(name) > MAX_NAME:
            problems.append(Problem(bridge.config_file, where, f"{name!r} is longer than "
                                    f"{MAX_NAME} characters, the providers' tool-name limit"))
            continue
        if sid in docs:
            problems.append(Problem(bridge.config_file, where, f"{name!r} clashes with another "
                                    f"tool of {server!r} once unsafe characters become `_`"))
            continue
        # The declared dialect is dropped so it is checked as draft 2020-12 like every schema
        # here; the keywords tool schemas use mean the same in draft-07.
        docs[sid] = {k: v for k, v in tool.input_schema.items() if k != "$schema"}
        out_sid = ""
        if tool.output_schema is not None:  # re-served as it came (`agentos mcp serve`)
            out_sid = f"{sid[:-3]}_out"
            docs[out_sid] = {k: v for k, v in tool.output_schema.items() if k != "$schema"}
        summary = (tool.description or "").strip().splitlines()
        hints = tool.annotations or types.ToolAnnotations()
        defs.append(ToolDef(name, sid, RESULT_SCHEMA, _invoker(bridge, tool.name),
                            summary[0] if summary else f"MCP tool {tool.name} of server {server}",
                            path_args=schema_path_args(docs[sid]),
                            read_only=bool(hints.read_only_hint), destructive=hints.destructive_hint,
                            idempotent=hints.idempotent_hint, open_world=hints.open_world_hint,
                            title=hints.title or tool.title or "", structured_out=out_sid))
    if problems:
        raise ContractError(problems)
    return defs, docs


def _invoker(bridge: McpBridge, tool: str) -> Any:
    def invoke(args: dict[str, Any], ctx: ToolContext) -> Result[Any]:
        return bridge.call(tool, args)
    return invoke


__all__ = ["BridgedTools", "bridge_servers", "tool_defs"]

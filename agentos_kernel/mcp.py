"""L1 bridge to real MCP servers (the official `mcp` SDK, stdio transport).

Each `mcp_servers` entry of agentos.yaml starts one server subprocess; its tools become
`ToolDef`s named `<server>__<tool>`, so a skill lists them in `allowed-tools` and
`dispatch_tool` runs its nine steps on them unchanged. The separator is `__`, not `.`,
because the name is sent to the model as the tool name and the providers' tool-name rules
(Anthropic, OpenAI: `^[a-zA-Z0-9_-]{1,64}$`) reject dots.

Each tool's `inputSchema` is registered as schema `mcp_<server>__<tool>_in` (step 3 rejects
bad arguments before the server sees them); every result is checked against the generic
`mcp_tool_result_v1`. The SDK is async (anyio) and the kernel is not: each bridge runs one
event loop in a daemon thread, and the stdio transport and client session, async context
managers that must be entered and left by one task, stay open in one long-lived task until
`close()`. Only kernel.py imports this module, and only when a server is configured, so
`import agentos_kernel` never loads the SDK.
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import contextlib
import re
import tempfile
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from mcp import ClientSession, StdioServerParameters, types
from mcp.client.stdio import stdio_client

from .errors import ContractError, DomainError, Err, ErrorCode, Ok, Problem, Result
from .profile import McpServerConfig, WorkspaceConfig
from .schemas import SchemaRegistry
from .tools import ToolContext, ToolDef

RESULT_SCHEMA = "mcp_tool_result_v1"
MAX_NAME = 64  # the providers' tool-name limit
CLOSE_TIMEOUT_S = 5.0
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")
_LIVE: set[McpBridge] = set()


class McpBridge:
    """One stdio MCP server subprocess and the client session talking to it."""

    def __init__(self, config: McpServerConfig, config_file: str, cwd: Path) -> None:
        self.config, self.config_file, self.cwd = config, config_file, cwd
        # The server's stderr goes to a file, so a failed start can quote it.
        self._errlog = tempfile.TemporaryFile("w+", encoding="utf-8")  # noqa: SIM115 (close() closes it)
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True,
                                        name=f"mcp-{config.name}")
        self._stop = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._session: ClientSession | None = None

    # -- lifecycle ---------------------------------------------------------------------
    def start(self) -> list[types.Tool]:
        """Start the server, initialise the session and list its tools. ContractError names
        the agentos.yaml entry when any of that fails or takes longer than timeout_s."""
        self._thread.start()
        _LIVE.add(self)
        atexit.register(self.close)
        ready: concurrent.futures.Future[list[types.Tool]] = concurrent.futures.Future()
        asyncio.run_coroutine_threadsafe(self._serve(ready), self._loop)
        try:
            return ready.result(self.config.timeout_s)
        except Exception as exc:
            why = (f"no answer to initialize/tools/list within {self.config.timeout_s}s"
                   if isinstance(exc, TimeoutError) else _describe(exc))
            self.close(grace_s=0)
            raise ContractError([Problem(self.config_file, self.config.where,
                                         f"cannot start MCP server {self.config.name!r} "
                                         f"({' '.join(self.config.command)}): {why}"
                                         f"{self._stderr_tail()}")]) from None

    async def _serve(self, ready: concurrent.futures.Future[list[types.Tool]]) -> None:
        self._task = asyncio.current_task()
        cmd = self.config.command
        params = StdioServerParameters(command=cmd[0], args=list(cmd[1:]),
                                       env=dict(self.config.env) or None, cwd=self.cwd)
        try:
            async with stdio_client(params, errlog=self._errlog) as (read, write), \
                    ClientSession(read, write) as session:
                await session.initialize()
                tools = await _list_tools(session)
                self._session = session
                ready.set_result(tools)
                await self._stop.wait()
        except Exception as exc:
            if not ready.done():
                ready.set_exception(exc)
            # After a successful start a failure here is a server that died; the pending
            # and later calls report it as TOOL_ERROR, so there is nothing more to raise.
        finally:
            self._session = None

    def close(self, grace_s: float = CLOSE_TIMEOUT_S) -> None:
        """Shut the session and the server process down and stop the loop (idempotent;
        registered with atexit). `grace_s`: how long the session may take to close before
        its task is cancelled (0 when the start failed: it is stuck, not busy)."""
        if self not in _LIVE:
            return
        _LIVE.discard(self)
        atexit.unregister(self.close)
        self._session = None
        done = asyncio.run_coroutine_threadsafe(self._shutdown(grace_s), self._loop)
        with contextlib.suppress(Exception):
            done.result(grace_s + CLOSE_TIMEOUT_S)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(CLOSE_TIMEOUT_S)
        if not self._thread.is_alive():
            self._loop.close()
        self._errlog.close()

    async def _shutdown(self, grace_s: float) -> None:
        self._stop.set()
        task = self._task
        if task is None or task.done():
            return
        if grace_s <= 0:
            task.cancel()
        # wait_for cancels the task if it overruns and waits for the cancellation to land,
        # which is what leaves the SDK's transport to stop the process.
        with contextlib.suppress(Exception, asyncio.CancelledError):
            await asyncio.wait_for(task, max(grace_s, CLOSE_TIMEOUT_S))

    def _stderr_tail(self, lines: int = 5) -> str:
        try:
            self._errlog.seek(0)
            tail = self._errlog.read().strip().splitlines()[-lines:]
        except (OSError, ValueError):
            return ""
        return ("; server stderr: " + " | ".join(tail)) if tail else ""

    # -- calls -------------------------------------------------------------------------
    def call(self, tool: str, args: dict[str, Any]) -> Result[Any]:
        """Call one of the server's tools: Ok(mcp_tool_result_v1 payload), or Err(TOOL_ERROR)
        for an isError result, a timeout or a broken connection."""
        qualified = f"{self.config.name}__{tool}"
        session = self._session
        if session is None:
            return _tool_error(f"{qualified}: MCP server {self.config.name!r} is not running")
        pending = asyncio.run_coroutine_threadsafe(session.call_tool(tool, args), self._loop)
        try:
            res = pending.result(self.config.timeout_s)
        except TimeoutError:
            pending.cancel()
            return _tool_error(f"{qualified} timed out after {self.config.timeout_s}s")
        except Exception as exc:  # MCPError, a closed connection: reported as this call's failure
            return _tool_error(f"{qualified}: MCP call failed: {_describe(exc)}")
        payload = _payload(res)
        if res.is_error:
            text = " ".join(c["text"] for c in payload["content"] if c.get("type") == "text")
            return _tool_error(f"{qualified}: {text or 'the server reported an error'}")
        return Ok(payload)


def bridge_servers(config: WorkspaceConfig, schemas: SchemaRegistry, root: Path,
                   tools: Iterable[ToolDef] = ()) -> tuple[SchemaRegistry, tuple[ToolDef, ...]]:
    """Start every configured server; return the schema registry extended with their tools'
    input schemas, and `tools` followed by the bridged tools. On any failure the servers
    already started are closed and ContractError names the agentos.yaml entry."""
    if RESULT_SCHEMA not in schemas:
        raise ContractError([Problem(config.file, "mcp_servers", f"no schema {RESULT_SCHEMA!r} is "
                                     f"loaded; copy schemas/{RESULT_SCHEMA}.json from the reference "
                                     "workspace (agentos init)")])
    defs = list(tools)
    started: list[McpBridge] = []
    try:
        for server in config.mcp_servers:
            bridge = McpBridge(server, config.file, root)
            started.append(bridge)
            bridged, docs = tool_defs(bridge, bridge.start())
            schemas = schemas.with_schemas(docs, f"{config.file}#{server.where}")
            defs += bridged
    except BaseException:
        for bridge in started:
            bridge.close()
        raise
    return schemas, tuple(defs)


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
        summary = (tool.description or "").strip().splitlines()
        defs.append(ToolDef(name, sid, RESULT_SCHEMA, _invoker(bridge, tool.name),
                            summary[0] if summary else f"MCP tool {tool.name} of server {server}"))
    if problems:
        raise ContractError(problems)
    return defs, docs


def _invoker(bridge: McpBridge, tool: str) -> Any:
    def invoke(args: dict[str, Any], ctx: ToolContext) -> Result[Any]:
        return bridge.call(tool, args)
    return invoke


async def _list_tools(session: ClientSession) -> list[types.Tool]:
    found: list[types.Tool] = []
    cursor: str | None = None
    while True:  # tools/list is paginated
        page = await session.list_tools(
            params=types.PaginatedRequestParams(cursor=cursor) if cursor else None)
        found += page.tools
        cursor = page.next_cursor
        if not cursor:
            return found


def _payload(res: types.CallToolResult) -> dict[str, Any]:
    # camelCase, as on the wire and in the MCP spec (`by_alias`)
    out: dict[str, Any] = {
        "content": [c.model_dump(mode="json", by_alias=True, exclude_none=True) for c in res.content],
        "isError": bool(res.is_error),
    }
    if res.structured_content is not None:
        out["structuredContent"] = res.structured_content
    return out


def _tool_error(message: str) -> Err:
    return Err(DomainError("tool", ErrorCode.TOOL_ERROR, message))


def _describe(exc: BaseException) -> str:
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:  # anyio task groups wrap errors
        exc = exc.exceptions[0]
    return f"{type(exc).__name__}: {exc}"


def close_all() -> None:
    """Close every running bridge (what atexit does one by one; tests call it)."""
    for bridge in list(_LIVE):
        bridge.close()


__all__ = ["McpBridge", "McpServerConfig", "bridge_servers", "close_all", "tool_defs"]

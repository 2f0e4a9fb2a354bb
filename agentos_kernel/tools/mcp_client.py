"""L1 bridge to real MCP servers: one client per `mcp_servers` entry (the official `mcp` SDK).

An entry with `command` starts a server subprocess (stdio transport, its stderr kept in a
file); one with `url` connects to a running server (streamable HTTP). mcp_bridges.py turns
the server's tools into ToolDefs named `<server>__<tool>`.

The SDK is async (anyio) and the kernel is not: each bridge runs one event loop in a daemon
thread, and the transport and client session, async context managers that must be entered
and left by one task, stay open in one long-lived task until `close()`. That task also
re-lists the tools when the server sends `notifications/tools/list_changed` (`generation`
counts the lists). A server that dies or hangs never hangs a call: each waits at most
timeout_s and fails with TOOL_ERROR quoting the tail of the server's stderr. Only
mcp_bridges.py imports this module, and only when a server is configured, so
`import agentos_kernel` never loads the SDK.
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import contextlib
import tempfile
import threading
from pathlib import Path
from typing import Any

from mcp import ClientSession, StdioServerParameters, types
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client

from ..config import McpServerConfig
from ..errors import ContractError, DomainError, Err, ErrorCode, Ok, Problem, Result

RESULT_SCHEMA = "mcp_tool_result_v1"
CLOSE_TIMEOUT_S = 5.0
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
        self._wake = asyncio.Event()  # set by a list_changed notification, and by close()
        self._task: asyncio.Task[None] | None = None
        self._session: ClientSession | None = None
        self.tools: list[types.Tool] = []
        """The server's current tool list (replaced on each refresh)."""
        self.generation = 0
        """How many tool lists have been received (1 after start)."""

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
                                         f"({self.endpoint}): {why}"
                                         f"{self._stderr_tail()}")]) from None

    @property
    def endpoint(self) -> str:
        """The command line or the URL, as messages name the server."""
        return self.config.url or " ".join(self.config.command)

    def _transport(self) -> contextlib.AbstractAsyncContextManager[Any]:
        if self.config.url:
            return streamable_http_client(self.config.url)
        cmd = self.config.command
        params = StdioServerParameters(command=cmd[0], args=list(cmd[1:]),
                                       env=dict(self.config.env) or None, cwd=self.cwd)
        return stdio_client(params, errlog=self._errlog)

    async def _serve(self, ready: concurrent.futures.Future[list[types.Tool]]) -> None:
        self._task = asyncio.current_task()
        try:
            async with self._transport() as streams, \
                    ClientSession(streams[0], streams[1], message_handler=self._on_message) as session:
                await session.initialize()
                self._listed(await _list_tools(session))
                self._session = session
                ready.set_result(self.tools)
                while not self._stop.is_set():
                    await self._wake.wait()
                    self._wake.clear()
                    if not self._stop.is_set():
                        # listed here, not in the handler: the handler runs in the session's
                        # receive loop, which must stay free to read the answer
                        self._listed(await asyncio.wait_for(_list_tools(session),
                                                            self.config.timeout_s))
        except Exception as exc:
            if not ready.done():
                ready.set_exception(exc)
            # After a successful start a failure here is a server that died; the pending
            # and later calls report it as TOOL_ERROR, so there is nothing more to raise.
        finally:
            self._session = None

    async def _on_message(self, message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            self._wake.set()

    def _listed(self, tools: list[types.Tool]) -> None:
        self.tools = tools
        self.generation += 1

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
        self._wake.set()
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
            return _tool_error(f"{qualified}: MCP server {self.config.name!r} is not running"
                               f"{self._stderr_tail()}")
        pending = asyncio.run_coroutine_threadsafe(session.call_tool(tool, args), self._loop)
        try:
            res = pending.result(self.config.timeout_s)
        except TimeoutError:
            pending.cancel()
            return _tool_error(f"{qualified} timed out after {self.config.timeout_s}s"
                               f"{self._stderr_tail()}")
        except Exception as exc:  # MCPError, a closed connection: reported as this call's failure
            return _tool_error(f"{qualified}: MCP call failed: {_describe(exc)}"
                               f"{self._stderr_tail()}")
        result = payload(res)
        if res.is_error:
            text = " ".join(c["text"] for c in result["content"] if c.get("type") == "text")
            return _tool_error(f"{qualified}: {text or 'the server reported an error'}")
        return Ok(result)


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


def payload(res: types.CallToolResult) -> dict[str, Any]:
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


__all__ = ["RESULT_SCHEMA", "McpBridge", "McpServerConfig", "close_all", "payload"]

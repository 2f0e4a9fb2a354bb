"""Text that is not UTF-8 (a byte decoded with surrogateescape, a lone surrogate from a JSON
`"\\ud800"`) and prompts past the profile's size limit: refused where they come in, by one
line naming the input, and nothing is changed on disk (issue 20, bad input)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from agentos_kernel import Err, ErrorCode, HookDecision, HookHandler, Ok, Runtime, ToolCall, ToolDef
from agentos_kernel.config import RuntimeProfile
from agentos_kernel.jupyter.api import WorkbenchError, register_skill, run_agent
from agentos_kernel.providers.faults import Fault, FaultPlan
from agentos_kernel.schemas.textcheck import DEFAULT_MAX_PROMPT_BYTES, text_problem
from agentos_kernel.store.events import read_log, verify_chain
from agentos_kernel.tools.dispatch import dispatch_tool

from .helpers import CANONICAL, REPO, Cli

FF = "hello \udcff greet Ada"
"""`agentos run $'hello \\xff greet Ada'` as Python's argv holds it (surrogateescape)."""
LONE = "hello \ud800 greet Ada"
"""The same prompt with a lone surrogate, as JSON's "\\ud800" decodes."""


def disk(root: Path) -> dict[str, bytes | None]:
    """Every path under `root` and its bytes (None for a directory): "nothing changed"."""
    return {p.relative_to(root).as_posix(): None if p.is_dir() else p.read_bytes()
            for p in sorted(root.rglob("*"))}


def one_line(err: str) -> str:
    assert err.endswith("\n") and err.count("\n") == 1, f"stderr is not one line: {err!r}"
    assert err.startswith("agentos: error: ") and "Traceback" not in err
    return err


def test_text_problem_is_utf8_encodability() -> None:
    for good in ("", "hello", "é😀", "\ufeff\u202e", "\ufffd"):
        assert text_problem(good) is None
    assert "the byte 0xff" in (text_problem(FF) or "")
    assert "index 6" in (text_problem(FF) or "")
    assert "lone surrogate U+D800" in (text_problem(LONE) or "")


# -- the attacks as the issue wrote them --------------------------------------------------------

def test_a_non_utf8_prompt_on_the_command_line_is_one_line_exit_2(workspace: Path) -> None:
    before = disk(workspace)
    proc = subprocess.run([sys.executable, "-m", "agentos_kernel", "--workspace", os.fsencode(workspace),
                           "run", b"hello \xff greet Ada"], capture_output=True, cwd=workspace,
                          env={**os.environ, "PYTHONPATH": str(REPO)}, timeout=120)
    err = proc.stderr.decode("utf-8")
    assert proc.returncode == 2 and proc.stdout == b""
    assert "argument 4 'hello \\xff greet Ada' is not valid UTF-8 text" in one_line(err)
    assert "the byte 0xff" in err
    assert disk(workspace) == before


@pytest.mark.parametrize("prompt, where", [(FF, "the byte 0xff"), (LONE, "lone surrogate U+D800")])
def test_the_api_returns_prompt_invalid_before_any_session(workspace: Path, runtime: Runtime,
                                                          prompt: str, where: str) -> None:
    before = disk(workspace)
    for got in (runtime.handle_user_request(prompt), runtime.start_session(prompt),
                runtime.run_cycle("code-review", prompt)):
        assert isinstance(got, Err) and got.error.code == ErrorCode.PROMPT_INVALID
        assert got.error.kind == "input" and got.error.session_id is None
        assert got.error.message.startswith("the prompt is not valid UTF-8 text: index 6 is ")
        assert where in got.error.message
    with pytest.raises(WorkbenchError, match="the prompt is not valid UTF-8 text"):
        run_agent(prompt, workspace=workspace)
    assert disk(workspace) == before  # no session folder, no log


def test_a_5_mb_prompt_is_refused_naming_the_limit_the_size_and_the_field(workspace: Path,
                                                                         runtime: Runtime,
                                                                         cli: Cli) -> None:
    before = disk(workspace)
    prompt = CANONICAL + " " + "x" * 5_000_000
    got = runtime.handle_user_request(prompt)
    assert isinstance(got, Err) and got.error.code == ErrorCode.PROMPT_TOO_LARGE
    assert got.error.session_id is None
    assert got.error.message == (
        f"the prompt is {len(prompt):,} bytes; profile 'scripted' takes at most 524,288 (every "
        "model call copies it into the log): shorten it, or raise "
        "profiles.scripted.max_prompt_bytes in agentos.yaml")
    with pytest.raises(WorkbenchError, match="max_prompt_bytes"):
        run_agent(prompt, workspace=workspace)
    assert disk(workspace) == before


def _limit(workspace: Path, limit: int) -> None:
    config = workspace / "agentos.yaml"
    text = config.read_text(encoding="utf-8")
    assert "model: scripted-1\n" in text
    limited = text.replace("model: scripted-1\n", f"model: scripted-1\n    max_prompt_bytes: {limit}\n", 1)
    config.write_text(limited, encoding="utf-8")


def test_the_limit_counts_utf8_bytes_and_is_raised_in_the_profile(workspace: Path) -> None:
    assert RuntimeProfile("p", "scripted", "m").max_prompt_bytes == DEFAULT_MAX_PROMPT_BYTES == 512 * 1024
    _limit(workspace, 20)
    rt = Runtime.from_workspace(workspace)
    assert rt.profile.max_prompt_bytes == 20
    exact = CANONICAL + "é" * 2  # 16 + 4 bytes
    assert isinstance(rt.handle_user_request(exact), Ok)
    over = rt.handle_user_request(exact + "!")
    assert isinstance(over, Err) and over.error.code == ErrorCode.PROMPT_TOO_LARGE
    assert "the prompt is 21 bytes; profile 'scripted' takes at most 20" in over.error.message
    assert rt.store.sessions() == ["s0001"]


def test_a_prompt_over_the_limit_on_the_command_line_is_one_line_exit_2(workspace: Path, cli: Cli) -> None:
    # One argv string is at most 128 KiB on Linux (MAX_ARG_STRLEN), under the default limit:
    # from the command line the limit is met only when a profile lowers it.
    _limit(workspace, 100)
    before = disk(workspace)
    code, out, err = cli("--workspace", workspace, "run", "x" * 101)
    assert (code, out) == (2, "")
    assert "the prompt is 101 bytes; profile 'scripted' takes at most 100" in one_line(err)
    assert disk(workspace) == before


def test_the_log_holds_eleven_copies_of_a_long_prompt(runtime: Runtime) -> None:
    """The multiplier docs/reliability.md gives for the default limit (canonical request)."""
    short = runtime.handle_user_request(CANONICAL)
    long = runtime.handle_user_request(CANONICAL + " " + "x" * 100_000)
    assert isinstance(short, Ok) and isinstance(long, Ok)
    grown = long.value.log_path.stat().st_size - short.value.log_path.stat().st_size
    assert 10.9 < grown / 100_001 < 11.2


# -- command-line arguments ---------------------------------------------------------------------

@pytest.mark.parametrize("argv, named", [
    (["--workspace", "WS", "run", "hi", "--session", "s\udcff"], "argument 6 's\\xff' (after --session)"),
    (["--workspace", "WS", "run", "hi", "--session=s\ud800"], "the value of --session 's\\ud800'"),
    (["--workspace", "WS", "run", "hi", "--faults", "plan\udcff.yaml"],
     "argument 6 'plan\\xff.yaml' (after --faults)"),
    (["--workspace", "ws\udcff", "demo"], "argument 2 'ws\\xff' (after --workspace)"),
    (["init", "new\udcff"], "argument 2 'new\\xff'"),
    (["--workspace", "WS", "replay", "s\udcff"], "argument 4 's\\xff'"),
    (["--workspace", "WS", "events", "s0001", "--type", "tool\udce9"],
     "argument 6 'tool\\xe9' (after --type)"),
    (["verify", "sessions/s\udcff/.events.jsonl"], "argument 2 'sessions/s\\xff/.events.jsonl'"),
    (["--profile\udcff", "x"], "argument 1 '--profile\\xff'"),
])
def test_every_argument_that_is_not_utf8_is_one_line_exit_2(workspace: Path, cli: Cli,
                                                             argv: list[str], named: str) -> None:
    before, cwd = disk(workspace), disk(Path.cwd())
    code, out, err = cli(*(a.replace("WS", str(workspace)) for a in argv))
    assert code == 2 and out == ""
    assert f"{named} is not valid UTF-8 text" in one_line(err), err
    assert disk(workspace) == before and disk(Path.cwd()) == cwd  # `init` made no directory


# -- tool arguments, model answers, tool results, hook transforms -------------------------------

@pytest.fixture
def served(runtime: Runtime) -> Any:
    session = runtime.open_session("tools")
    yield session
    session.log.close()


@pytest.mark.parametrize("args, path", [({"text": LONE}, "/text"), ({"text": FF}, "/text"),
                                        ({"te\ud800xt": "hi"}, "/")])
def test_a_tool_argument_that_is_not_text_is_schema_invalid_with_its_event(
        runtime: Runtime, served: Any, args: dict[str, Any], path: str) -> None:
    got = dispatch_tool(ToolCall("t1", "echo", args), tools=runtime.tools, allowed_tools=frozenset({"echo"}),
                        hooks=runtime.hooks, log=served.log, context=served.tool_context)
    assert isinstance(got, Err) and got.error.code == ErrorCode.SCHEMA_INVALID
    assert "not valid UTF-8 text" in got.error.message
    (violation,) = [e.payload for e in runtime.events("tools") if e.type == "schema.violation"]
    assert violation["where"] == "tool echo input" and violation["violations"][0]["path"] == path
    assert "tool.invoke" not in [e.type for e in runtime.events("tools")]


def test_a_model_answer_holding_a_lone_surrogate_fails_closed(workspace: Path) -> None:
    plan = FaultPlan("surrogate", (Fault("tool_call", "worker", -1, "echo", {"text": LONE}),), ())
    rt = Runtime.from_workspace(workspace, faults=plan)
    got = rt.handle_user_request(CANONICAL)
    assert isinstance(got, Err) and got.error.code == ErrorCode.SCHEMA_INVALID
    events = list(read_log(rt.store.path(got.error.session_id)))
    assert verify_chain(events) is None and events[-1].type == "session.close"
    (violation,) = [e.payload for e in events if e.type == "schema.violation"]
    assert (violation["schema_id"], violation["violations"][0]["path"]) == (
        "completion_response_v1", "/tool_calls/0/args/text")
    assert "llm.error" in [e.type for e in events]


def test_a_tool_result_that_is_not_text_is_a_tool_error(workspace: Path) -> None:
    bad = ToolDef("bad_out", "tool_echo_in_v1", "tool_echo_out_v1", lambda a, c: Ok({"text": LONE}))
    rt = Runtime.from_workspace(workspace, tools=[bad])
    s = rt.open_session("t")
    got = dispatch_tool(ToolCall("t1", "bad_out", {"text": "hi"}), tools=rt.tools,
                        allowed_tools=frozenset({"bad_out"}), hooks=rt.hooks, log=s.log,
                        context=s.tool_context)
    s.log.close()
    assert isinstance(got, Err) and got.error.code == ErrorCode.TOOL_ERROR
    assert "a string that is not UTF-8 text (index 6 is a lone surrogate U+D800" in got.error.message
    assert verify_chain(rt.events("t")) is None


def test_a_hook_transform_to_args_that_are_not_text_is_a_deny(workspace: Path) -> None:
    rt = Runtime.from_workspace(workspace)
    rt.hooks.register("PreToolUse", HookHandler(
        "bad", lambda i: HookDecision("transform", output={**i, "args": {"text": LONE}}), priority=99))
    s = rt.open_session("t")
    got = dispatch_tool(ToolCall("t1", "echo", {"text": "hi"}), tools=rt.tools,
                        allowed_tools=frozenset({"echo"}), hooks=rt.hooks, log=s.log, context=s.tool_context)
    s.log.close()
    assert isinstance(got, Err) and got.error.code == ErrorCode.GATE_DENIED
    assert "tool.invoke" not in [e.type for e in rt.events("t")]
    assert verify_chain(rt.events("t")) is None


def test_an_mcp_client_argument_that_is_not_text_is_an_error_result(runtime: Runtime) -> None:
    """A bad argument is an error result; an unknown tool's name that is not text is the
    protocol error MCP prescribes (-32602), its message escaped so that it can be sent."""
    mcp = pytest.importorskip("mcp")
    from agentos_kernel.tools.mcp_serve import ServedTools

    session = runtime.start_session("served", "mcp")
    assert not isinstance(session, Err)
    served = ServedTools(runtime, session)
    bad = served.call("echo", {"text": LONE})
    with pytest.raises(mcp.MCPError) as unknown:
        served.call("ec\ud800ho", {})
    good = served.call("echo", {"text": "hi"})
    session.log.close()
    assert bad.is_error and bad.content[0].text.startswith("SCHEMA_INVALID: tool_echo_in_v1: /text: ")
    assert unknown.value.error.code == mcp.types.INVALID_PARAMS
    assert unknown.value.error.message == "Unknown tool: ec\\ud800ho"
    unknown.value.error.message.encode("utf-8")  # no lone surrogate left to fail the transport
    assert not good.is_error
    events = runtime.events("mcp")
    assert verify_chain(events) is None
    assert [e.payload["code"] for e in events if e.type == "domain.error"] == [
        ErrorCode.SCHEMA_INVALID, ErrorCode.TOOL_NOT_FOUND]


def test_over_stdio_the_sdk_drops_a_line_holding_a_lone_surrogate(workspace: Path) -> None:
    """The MCP SDK's stdio transport refuses a JSON line with a `\\ud800` escape before any
    handler sees it (no answer; nothing to log), and decodes bytes that are not UTF-8 as
    U+FFFD: the server goes on, its log stays whole (docs/reliability.md, Bad input)."""
    mcp = pytest.importorskip("mcp")

    def line(**message: Any) -> bytes:  # json.dumps writes a lone surrogate as its \\u escape
        return json.dumps({"jsonrpc": "2.0", **message}).encode() + b"\n"

    def echo(n: int, text: str) -> bytes:
        return line(id=n, method="tools/call", params={"name": "echo", "arguments": {"text": text}})

    stdin = (line(id=1, method="initialize", params={
        "protocolVersion": mcp.types.LATEST_PROTOCOL_VERSION, "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"}}) + line(method="notifications/initialized")
        + echo(2, "hi \ud800") + echo(3, "hi X").replace(b"X", b"\xff") + echo(4, "hi"))
    proc = subprocess.Popen([sys.executable, "-m", "agentos_kernel", "mcp", "serve", "--workspace",
                             str(workspace), "--session", "raw"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env={**os.environ, "PYTHONPATH": str(REPO)})
    assert proc.stdin is not None and proc.stdout is not None
    guard = threading.Timer(120, proc.kill)  # a server that never answers ends the read, not CI
    guard.start()
    proc.stdin.write(stdin)
    proc.stdin.flush()
    answered = []
    while 4 not in answered:  # hang up only once the last call is answered: no race with it
        reply = proc.stdout.readline()
        assert reply, proc.stderr.read()[-500:] if proc.stderr else "the server ended early"
        answered.append(json.loads(reply)["id"])
    proc.stdin.close()
    assert proc.wait(timeout=120) == 0
    guard.cancel()
    assert answered == [1, 3, 4]  # 2 (the lone surrogate) is never answered
    events = list(read_log(workspace / "sessions" / "raw" / ".events.jsonl"))
    assert verify_chain(events) is None
    assert [e.payload["args"] for e in events if e.type == "tool.invoke"] == [{"text": "hi \ufffd"},
                                                                               {"text": "hi"}]


# -- notebooks ---------------------------------------------------------------------------------

def test_a_skill_cell_that_is_not_text_is_not_written(workspace: Path) -> None:
    before = disk(workspace)
    check = register_skill(f"---\nname: odd\ndescription: {LONE}\n---\nbody\n", workspace=workspace)
    assert not check.ok and check.problem is not None
    assert "the cell is not valid UTF-8 text: index 33 (line 3) is a lone surrogate" in check.problem.message
    assert disk(workspace) == before

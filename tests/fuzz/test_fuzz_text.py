"""Text that is not UTF-8, wherever it comes in: argv bytes decoded with surrogateescape, lone
surrogates and both mixed into ordinary text, as `agentos` arguments, prompts, tool arguments
(keys and values, at any depth) and magic lines; and contract files with bytes that are not
UTF-8. The CLI exits 2 with one line naming the argument, the API returns an Err (never
raises), a file is named with the byte; nothing already on disk changes."""

from __future__ import annotations

import contextlib
import io
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from agentos_kernel import ContractError, Err, ErrorCode, Runtime, ToolCall
from agentos_kernel.jupyter.api import WorkbenchError, run_agent
from agentos_kernel.providers.faults import FaultPlanError, load_fault_plan
from agentos_kernel.schemas.textcheck import first_bad, text_problem
from agentos_kernel.store.events import read_log, verify_chain
from agentos_kernel.tools.dispatch import dispatch_tool

from . import fuzz, one_line
from .strategies import bad_text, json_values, nasty_text
from .test_fuzz_cli import Box, _run, argvs

any_text = nasty_text | bad_text


@pytest.fixture(scope="module")
def tbox(tmp_path_factory: pytest.TempPathFactory) -> Box:
    """test_fuzz_cli's scratch box (a workspace with one logged session, a canary outside)."""
    return Box(tmp_path_factory.mktemp("textfuzz"))


@pytest.fixture
def in_tbox(tbox: Box, monkeypatch: pytest.MonkeyPatch) -> Box:
    monkeypatch.chdir(tbox.root)
    return tbox


@fuzz(300)
@given(text=any_text)
def test_text_problem_is_exactly_what_utf8_cannot_encode(text: str) -> None:
    try:
        text.encode("utf-8")
        encodes = True
    except UnicodeEncodeError as exc:
        encodes, start = False, exc.start
    assert (text_problem(text) is None) is encodes
    if not encodes:
        assert first_bad(text) == start and (text_problem(text) or "").startswith(f"index {start}")


@st.composite
def spoiled_argvs(draw: st.DrawFn) -> tuple[list[str], int]:
    """(argv, index of the first argument that is not text): a fuzzed command with one
    argument spoiled, or one spoiled argument inserted, or an option's `=value` spoiled."""
    argv = [a for a in draw(argvs()) if first_bad(a) is None]
    bad = draw(bad_text)
    at = draw(st.integers(0, len(argv)))
    how = draw(st.sampled_from(["insert", "replace", "option"]))
    if how == "replace" and at < len(argv):
        argv[at] = bad
    elif how == "option":
        argv.insert(at, f"--session={bad}")
    else:
        argv.insert(at, bad)
    return argv, at


@fuzz(250)
@given(case=spoiled_argvs())
@example(case=(["grade", "empty", "--csv=t_\n", "\ud800"], 3))  # the option before it, unescaped
@example(case=(["---=\udc80", "validate"], 0))
def test_an_argument_that_is_not_utf8_is_exit_2_in_one_line(in_tbox: Box,
                                                            case: tuple[list[str], int]) -> None:
    box = in_tbox
    argv, at = case
    code, out, err, exited = _run(argv)
    assert (code, out, exited) == (2, "", False), (code, err)
    line = one_line(err)
    assert line.startswith("agentos: error: ") and " is not valid UTF-8 text: index " in line
    assert f"argument {at + 1} " in line or "the value of --" in line, line
    assert box.outside_listing() == {"canary.txt": b"canary"}
    assert box.log.read_bytes() == box.log_bytes


@pytest.fixture(scope="module")
def runtime(tbox: Box) -> Runtime:
    return Runtime.from_workspace(tbox.ws)


@fuzz(200)
@given(prompt=any_text)
def test_the_api_never_raises_on_a_prompt(in_tbox: Box, runtime: Runtime, prompt: str) -> None:
    before = runtime.store.sessions()
    got = runtime.start_session(prompt)
    if isinstance(got, Err):
        assert got.error.session_id is None and runtime.store.sessions() == before
        if prompt.strip() and text_problem(prompt) is not None:
            assert got.error.code == ErrorCode.PROMPT_INVALID
            for again in (runtime.handle_user_request(prompt), runtime.run_cycle("code-review", prompt)):
                assert isinstance(again, Err) and again.error.code == ErrorCode.PROMPT_INVALID
            with pytest.raises(WorkbenchError, match=r"^the prompt is not valid UTF-8 text: index "):
                run_agent(prompt, workspace=runtime.workspace.root)
            assert runtime.store.sessions() == before
        return
    got.log.close()
    assert text_problem(prompt) is None
    assert verify_chain(read_log(runtime.store.path(got.session_id))) is None


def _holds_bad(value: Any) -> bool:
    if isinstance(value, str):
        return first_bad(value) is not None
    if isinstance(value, dict):
        return any(_holds_bad(k) or _holds_bad(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_holds_bad(v) for v in value)
    return False


bad_json = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-100, 100), any_text),
    lambda kids: st.one_of(st.lists(kids, max_size=4), st.dictionaries(any_text, kids, max_size=4)),
    max_leaves=12)


@pytest.fixture(scope="module")
def served(runtime: Runtime) -> Iterator[Any]:
    session = runtime.open_session("fuzzed-tools")
    assert not isinstance(session, Err)
    yield session
    session.log.close()


CLAIM = {"who": "worker", "why": "fuzz", "expected_hash": "", "schema_version": "v1"}
# Each tool's arguments, valid but for T: where T lands in a string no schema constraint
# reads (echo's text, write_file's content), only the boundary's text check can refuse it.
TEMPLATES = {"echo": lambda t: {"text": t}, "read_file": lambda t: {"path": t},
             "list_dir": lambda t: {"path": t},
             "write_file": lambda t: {"path": "fuzzed.txt", "content": t, "claim": CLAIM}}


@fuzz(200)
@given(name=st.sampled_from(sorted(TEMPLATES)), text=any_text, args=bad_json | json_values)
def test_a_tool_call_never_raises_and_text_that_is_not_utf8_is_schema_invalid(
        in_tbox: Box, runtime: Runtime, served: Any, name: str, text: str, args: Any) -> None:
    for call_args in (TEMPLATES[name](text), {"text": args}, args):
        got = dispatch_tool(ToolCall("f1", name, call_args), tools=runtime.tools,
                            allowed_tools=frozenset(runtime.tools.names()), hooks=runtime.hooks,
                            log=served.log, context=served.tool_context)
        if _holds_bad(call_args):
            assert isinstance(got, Err) and got.error.code == ErrorCode.SCHEMA_INVALID, got
    assert verify_chain(read_log(runtime.store.path(served.session_id))) is None
    assert box_unharmed(in_tbox)


def box_unharmed(box: Box) -> bool:
    """Nothing outside the box was written, and the session logged in it is unchanged."""
    return box.outside_listing() == {"canary.txt": b"canary"} and box.log.read_bytes() == box.log_bytes


@pytest.fixture(scope="module")
def magics(tbox: Box) -> Any:
    from IPython.testing.globalipapp import start_ipython

    from agentos_kernel.jupyter.magics import AgentMagics

    return AgentMagics(shell=start_ipython())


@fuzz(100)
@given(magic=st.sampled_from(["agent", "replay", "events", "diff"]), before=nasty_text, bad=bad_text)
def test_a_magic_line_that_is_not_utf8_is_a_one_line_usage_error(in_tbox: Box, magics: Any, magic: str,
                                                                 before: str, bad: str) -> None:
    from IPython.core.error import UsageError

    with pytest.raises(UsageError) as caught, contextlib.redirect_stdout(io.StringIO()):
        getattr(magics, magic)(f"{before} {bad} --workspace ws")
    assert one_line(str(caught.value)).startswith(f"%{magic}: the %{magic} line is not valid UTF-8 text")
    assert box_unharmed(in_tbox)


# -- files ---------------------------------------------------------------------------------------

FILES = ("agentos.yaml", "agents/worker.md", "schemas/plan_v1.json", "skills/greet/SKILL.md", "plan.yaml")
# Bytes no UTF-8 decoder accepts wherever they land: a stray continuation byte, a lead byte
# with no continuation, an overlong form, an encoded surrogate, bytes past U+10FFFF.
NOT_UTF8 = st.sampled_from([b"\xff", b"\x80", b"\xc3(", b"\xc0\xaf", b"\xed\xa0\x80", b"\xf5\x80\x80\x80",
                            b"\xe2\x28\xa1"])


@pytest.fixture(scope="module")
def files_ws(tbox: Box) -> Path:
    ws = tbox.root / "files_ws"
    with contextlib.redirect_stdout(io.StringIO()):
        from agentos_kernel.cli.main import main

        assert main(["init", str(ws)]) == 0
    (ws / "plan.yaml").write_text("faults:\n  - {kind: malformed_json, role: worker}\n", encoding="utf-8")
    return ws


@fuzz(150)
@given(name=st.sampled_from(FILES), bad=NOT_UTF8, where=st.floats(0, 1))
def test_a_file_that_is_not_utf8_is_named_with_its_byte(files_ws: Path, name: str, bad: bytes,
                                                        where: float) -> None:
    path = files_ws / name
    data = path.read_bytes()
    at = int(where * len(data))
    path.write_bytes(data[:at] + bad + data[at:])
    try:
        if name == "plan.yaml":
            with pytest.raises(FaultPlanError) as caught:
                load_fault_plan(str(path))
            message = str(caught.value)
        elif name.startswith("skills/"):
            (problem,) = Runtime.from_workspace(files_ws).skills.skipped
            message = str(problem)
        else:
            with pytest.raises(ContractError) as caught:
                Runtime.from_workspace(files_ws)
            message = str(caught.value)
    finally:
        path.write_bytes(data)
    shown = str(path) if name.startswith(("schemas/", "plan")) else name
    assert one_line(message).startswith(f"{shown}: -: not UTF-8 text: byte 0x"), message
    assert message.endswith("; save the file as UTF-8")
    assert not (files_ws / "sessions").exists()

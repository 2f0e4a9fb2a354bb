"""The path guard dispatch applies to tools that do not confine themselves (path_args.py):
an own or bridged tool is refused, before it is called, any path argument that names a
contract; a read-only tool and the builtins (which confine themselves) are not checked."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentos_kernel import Err, ErrorCode, Ok, Runtime, ToolCall, ToolDef, dispatch_tool
from agentos_kernel.roles.session import Session
from agentos_kernel.tools.path_args import path_like, schema_path_args


@pytest.mark.parametrize("key", ["path", "paths", "file", "filename", "file_path", "filePath",
                                 "targetFile", "dest", "destination", "source", "sourcePath",
                                 "output_dir", "outdir", "cwd", "root", "uri", "new-path", "Folder"])
def test_path_like_names(key: str) -> None:
    assert path_like(key)


@pytest.mark.parametrize("key", ["text", "content", "name", "query", "mode", "a", "profile",
                                 "filepathology", "pathos"])
def test_names_that_are_not_paths(key: str) -> None:
    assert not path_like(key)


def test_a_schema_marks_paths_by_format_or_description() -> None:
    schema = {"type": "object", "properties": {
        "where": {"type": "string", "description": "The file to write"},
        "at": {"type": "string", "format": "uri-reference"},
        "many": {"type": "array", "items": {"type": "string", "format": "path"}},
        "text": {"type": "string", "description": "Free text to store"}}}
    assert schema_path_args(schema) == ("at", "many", "where")
    assert schema_path_args({"type": "object"}) == () and schema_path_args("nonsense") == ()


class Own:
    """A tool of your own (not confined) that writes wherever it is told: the guard is what
    stands between its arguments and the contracts."""

    def __init__(self, read_only: bool = False, path_args: tuple[str, ...] = ()) -> None:
        self.calls: list[Any] = []
        self.tool = ToolDef("own", OPEN, "tool_echo_out_v1", self._invoke,
                            read_only=read_only, path_args=path_args)

    def _invoke(self, args: dict[str, Any], _ctx: Any) -> Any:
        self.calls.append(args)
        return Ok({"text": "done"})


OPEN = "own_tool_in_v1"


@pytest.fixture
def runtime(workspace: Path) -> Runtime:
    rt = Runtime.from_workspace(workspace)
    rt.schemas = rt.schemas.with_schemas({OPEN: {"type": "object", "required": ["text"]}}, "tests")
    return rt


@pytest.fixture
def session(runtime: Runtime) -> Iterator[Session]:
    s = runtime.open_session("guard")
    assert not isinstance(s, Err)
    yield s
    s.log.close()


def _dispatch(runtime: Runtime, session: Session, own: Own, args: dict[str, Any]) -> Any:
    from agentos_kernel import ToolRegistry

    return dispatch_tool(ToolCall("t1", "own", args), tools=ToolRegistry([own.tool]),
                         allowed_tools=frozenset({"own"}), hooks=runtime.hooks, log=session.log,
                         context=session.tool_context)


@pytest.mark.parametrize("args, where", [
    ({"text": "x", "path": "agentos.yaml"}, "path"),
    ({"text": "x", "target": {"file": "skills/greet/SKILL.md"}}, "target.file"),
    ({"text": "x", "paths": ["notes/a.md", "agents/lead.md"]}, "paths[1]"),
    ({"text": "x", "uri": "file://{ws}/schemas/plan_v1.json"}, "uri"),
    ({"text": "x", "dest": "~/ws/workflows/cycles/bugfix.md"}, "dest"),
    ({"text": "x", "dir": "{ws}/.."}, "dir"),
    ({"text": "x", "source": "sessions"}, "source"),
])
def test_an_own_tool_is_refused_a_contract_path_before_it_runs(runtime: Runtime, session: Session,
                                                               workspace: Path,
                                                               monkeypatch: pytest.MonkeyPatch,
                                                               args: dict[str, Any], where: str) -> None:
    monkeypatch.setenv("HOME", str(workspace.parent))
    args = {k: _fill(v, workspace) for k, v in args.items()}
    own = Own()
    got = _dispatch(runtime, session, own, args)
    assert isinstance(got, Err) and got.error.code == ErrorCode.PATH_DENIED, got
    assert f"own: argument {where} " in got.error.message
    assert own.calls == []


def _fill(value: Any, ws: Path) -> Any:
    if isinstance(value, str):
        return value.replace("{ws}", str(ws))
    if isinstance(value, list):
        return [_fill(v, ws) for v in value]
    if isinstance(value, dict):
        return {k: _fill(v, ws) for k, v in value.items()}
    return value


def test_data_paths_and_read_only_tools_pass(runtime: Runtime, session: Session) -> None:
    own = Own()
    assert _dispatch(runtime, session, own, {"text": "x", "path": "notes/a.md"}) == Ok({"text": "done"})
    assert _dispatch(runtime, session, own, {"text": "agentos.yaml"}) == Ok({"text": "done"})  # not a path
    reader = Own(read_only=True)
    assert _dispatch(runtime, session, reader, {"text": "x", "path": "agentos.yaml"}) == Ok({"text": "done"})
    assert len(own.calls) == 2 and len(reader.calls) == 1


def test_a_schema_marked_argument_is_checked(runtime: Runtime, session: Session) -> None:
    own = Own(path_args=("text",))
    got = _dispatch(runtime, session, own, {"text": "agentos.yaml"})
    assert isinstance(got, Err) and got.error.code == ErrorCode.PATH_DENIED and own.calls == []

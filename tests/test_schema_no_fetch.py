"""A schema's `$schema` never makes the runtime fetch anything: jsonschema-rs carries the
meta-schemas of drafts 4 to 2020-12 and *fetches any other `$schema` URL* when asked to check
a schema against it, so a workspace's schema file, an MCP server's tool schema, a lab
submission's schema or a scenario directory's schema could make the runtime send a request
where it pleased (it did, before). Each is refused, in one line, with no request sent: a
loopback server counts what reaches it."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from agentos_kernel import ContractError, SchemaRegistry
from agentos_kernel.labs.audit.scenarios import load_scenarios
from agentos_kernel.labs.rubric.contracts import load_schemas
from agentos_kernel.schemas.loading import KNOWN_DRAFTS
from agentos_kernel.workspace import reference_dir


@pytest.fixture
def listener() -> Iterator[tuple[str, list[str]]]:
    """A loopback HTTP server: (its URL, the paths asked of it)."""
    asked: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            asked.append(self.path)
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(b'{"type": "object"}')

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/meta.json", asked
    finally:
        server.shutdown()
        server.server_close()


def _submission_schemas(root: Path) -> Path:
    """`root`/schemas/ holding a copy of the reference schemas (a lab submission's)."""
    (root / "schemas").mkdir()
    for f in (reference_dir() / "schemas").glob("*.json"):
        (root / "schemas" / f.name).write_bytes(f.read_bytes())
    return root / "schemas"


def _scenarios(root: Path, schema: dict[str, object]) -> Path:
    """An empty `root`/scenarios/ whose scenario_v1.json beside it is `schema`."""
    (root / "scenarios").mkdir()
    (root / "scenario_v1.json").write_text(json.dumps(schema))
    return root / "scenarios"


def test_a_schema_file_with_another_schema_url_is_refused_unfetched(
        tmp_path: Path, listener: tuple[str, list[str]]) -> None:
    url, asked = listener
    (tmp_path / "x_v1.json").write_text(json.dumps({"$schema": url, "$id": "x_v1", "type": "object"}))
    with pytest.raises(ContractError, match=r"x_v1.json: -: .*\$schema: .* is not a JSON Schema draft "
                                            r"this runtime knows \(schemas are never fetched\)") as caught:
        SchemaRegistry.load(tmp_path)
    assert len(str(caught.value).splitlines()) == 1
    assert asked == []


def test_an_mcp_tool_schema_with_another_schema_url_is_refused_unfetched(
        listener: tuple[str, list[str]]) -> None:
    url, asked = listener
    reg = SchemaRegistry.load(reference_dir() / "schemas")
    with pytest.raises(ContractError, match=r"is not a JSON Schema draft this runtime knows"):
        reg.with_schemas({"tool_in_v1": {"$schema": url, "type": "object"}}, "mcp server x")
    assert asked == []


def test_a_lab_submissions_schema_with_another_schema_url_is_a_problem_unfetched(
        tmp_path: Path, listener: tuple[str, list[str]]) -> None:
    url, asked = listener
    (_submission_schemas(tmp_path) / "x_v1.json").write_text(json.dumps({"$schema": url, "$id": "x_v1"}))
    _, problems = load_schemas(tmp_path)
    assert [p for p in problems if "x_v1.json" in p and "never fetched" in p], problems
    assert asked == []


def test_a_scenario_schema_with_another_schema_url_is_refused_unfetched(
        tmp_path: Path, listener: tuple[str, list[str]]) -> None:
    url, asked = listener
    with pytest.raises(ContractError, match=r"cannot load the scenario schema: .*never fetched"):
        load_scenarios(_scenarios(tmp_path, {"$schema": url, "type": "object"}))
    assert asked == []


@pytest.mark.parametrize("draft", sorted(KNOWN_DRAFTS))
def test_every_draft_jsonschema_rs_carries_is_still_read(tmp_path: Path, draft: str,
                                                         listener: tuple[str, list[str]]) -> None:
    _, asked = listener
    (tmp_path / "x_v1.json").write_text(json.dumps({"$schema": draft, "$id": "x_v1", "type": "object"}))
    assert "x_v1" in SchemaRegistry.load(tmp_path)
    assert asked == []


def test_a_ref_to_a_url_is_named_with_the_fix_and_never_fetched(tmp_path: Path,
                                                                listener: tuple[str, list[str]]) -> None:
    url, asked = listener
    (tmp_path / "y_v1.json").write_text(json.dumps({"$id": "y_v1", "$ref": url}))
    with pytest.raises(ContractError, match=rf"y_v1.json: \$ref: refers to '{url}', which is not loaded; a "
                                            r"schema is never fetched: refer to the \$id of a schema in "
                                            r"schemas/$"):
        SchemaRegistry.load(tmp_path)
    assert asked == []


def test_a_lab_submissions_schema_that_refers_to_a_url_is_a_problem_and_compiles_nothing(
        tmp_path: Path, listener: tuple[str, list[str]]) -> None:
    """The rubric's registry is built from the student's schemas: a `$ref` to a URL in a
    schema its log check compiles (plan_v1) would be fetched at that compile."""
    url, asked = listener
    planner = _submission_schemas(tmp_path) / "plan_v1.json"
    planner.write_text(json.dumps({**json.loads(planner.read_text()), "$ref": url}))
    registry, problems = load_schemas(tmp_path)
    assert registry is None
    assert [p for p in problems if "plan_v1.json: $ref: refers to" in p and "never fetched" in p], problems
    assert asked == []


def test_a_scenario_schema_that_refers_to_a_url_is_refused_unfetched(
        tmp_path: Path, listener: tuple[str, list[str]]) -> None:
    url, asked = listener
    with pytest.raises(ContractError, match=r"cannot load the scenario schema: .*Retrieval is disabled"):
        load_scenarios(_scenarios(tmp_path, {"$ref": url}))
    assert asked == []

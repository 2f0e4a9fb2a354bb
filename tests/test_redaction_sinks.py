"""A canary per redaction shape over every sink (issue 20): one request holding every canary
(secret shapes and, the profile naming them, the PII categories), a submission whose
feedback quotes them, logs another implementation wrote with them in clear, an MCP tool
returning them. For each (sink, canary): its secret part never appears in what the sink
wrote or printed, and its marker does. Each sink is built once per module."""

from __future__ import annotations

import contextlib
import io
import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentos_kernel import Runtime
from agentos_kernel.cli.main import main as cli_main
from agentos_kernel.store.redaction import PII_CATEGORIES

from .fault_kit import add_profile
from .redaction_canaries import ALL, SECRET_CANARIES, Canary

PROMPT = "file these for later: " + " ; ".join(c.text for c in ALL)


def _cli(*argv: object) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli_main([str(a) for a in argv])
    return code, out.getvalue() + err.getvalue()


@pytest.fixture(scope="module")
def ws(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A workspace whose default profile names every PII category; one request run in it."""
    ws = tmp_path_factory.mktemp("sinks") / "ws"
    assert _cli("init", ws)[0] == 0
    add_profile(ws, "guarded", redact_pii=list(PII_CATEGORIES))
    cfg = ws / "agentos.yaml"
    cfg.write_text(cfg.read_text().replace("default_profile: scripted", "default_profile: guarded"))
    yield ws


class Sinks:
    """What each sink produced, made on first use."""

    def __init__(self, ws: Path, tmp: Path) -> None:
        self.ws, self.tmp = ws, tmp
        self.made: dict[str, str] = {}
        self.sid: str | None = None

    def __call__(self, name: str) -> str:
        if name not in self.made:
            self.made[name] = getattr(self, "_" + name.replace(" ", "_").replace("-", "_"))()
            assert self.made[name].strip(), f"{name} produced nothing"
        return self.made[name]

    def session(self) -> str:
        if self.sid is None:
            code, out = _cli("--workspace", self.ws, "run", PROMPT, "--record", "--cassette",
                             self.tmp / "rec.json")
            assert code == 0, out
            self.made["agentos run"] = out
            (log,) = (self.ws / "sessions").glob("*/.events.jsonl")
            self.sid = log.parent.name
        return self.sid

    def _agentos_run(self) -> str:
        self.session()
        return self.made["agentos run"]

    def _log_file(self) -> str:
        return (self.ws / "sessions" / self.session() / ".events.jsonl").read_text(encoding="utf-8")

    def _cassette_recording(self) -> str:
        self.session()
        return (self.tmp / "rec.json").read_text(encoding="utf-8")

    def _cli_view(self, *argv: str) -> str:
        code, out = _cli("--workspace", self.ws, *argv)
        assert code == 0, out
        return out

    def _agentos_run_json(self) -> str:
        code, out = _cli("--workspace", self.ws, "run", PROMPT, "--json", "--session", "json-run")
        assert code == 0, out
        return out

    def _agentos_events_json(self) -> str:
        return self._cli_view("events", self.session(), "--json")

    def _agentos_replay_json(self) -> str:
        return self._cli_view("replay", self.session(), "--json")

    def _run_result(self) -> str:
        rt = Runtime.from_workspace(self.ws)
        result = rt.handle_user_request(PROMPT, session_id="api-run")
        value = result.value
        return repr(result) + str(value.output) + json.dumps(value.report) + json.dumps(value.review)

    def _otel_export(self) -> str:
        pytest.importorskip("opentelemetry.sdk", reason="the otel extra exports spans")
        out = self.tmp / "spans.json"
        code, text = _cli("--workspace", self.ws, "export", "otel", self.session(), "--out", out)
        assert code == 0, text
        return out.read_text(encoding="utf-8")

    def _notebook_displays(self) -> str:
        from agentos_kernel.jupyter import events_frame
        from agentos_kernel.jupyter.api import run_agent

        run = run_agent(PROMPT, workspace=self.ws, session="nb-run")
        frame = events_frame(run.session_id, self.ws)
        return (repr(run) + run._repr_html_() + str(run.output) + run.prompt
                + frame.to_csv() + frame.to_html() + frame.to_string())

    def _grader_feedback(self) -> str:
        """A submission whose README's Run heading holds every secret canary: the feedback
        quotes the heading (in the table's notes, CSV, HTML, JSON)."""
        pytest.importorskip("pytest")
        from .labs._grade_fixtures import FULL_MARKS

        sub = self.tmp / "class" / "20230001"
        shutil.copytree(FULL_MARKS, sub)
        readme = sub / "README.md"
        heading = "## Run " + " ; ".join(c.text.replace("\n", " ") for c in SECRET_CANARIES)
        readme.write_text(readme.read_text(encoding="utf-8").replace("## Run\n", heading + "\n", 1),
                          encoding="utf-8")
        csv, html = self.tmp / "grades.csv", self.tmp / "grades.html"
        code, text = _cli("grade", sub.parent, "--csv", csv, "--html", html, "--jobs", "1",
                          "--no-progress")
        assert code == 0, text
        code, js = _cli("grade", sub.parent, "--json", "--jobs", "1", "--no-progress")
        assert code == 0, js
        from agentos_kernel.labs.rubric.grade import grade_submission
        from agentos_kernel.labs.rubric.report import failures, table, to_frame

        grade = grade_submission(sub)
        frame = to_frame([grade])
        return "\n".join([text, csv.read_text(encoding="utf-8"), html.read_text(encoding="utf-8"),
                          js, *table([grade]), *failures([grade]), frame.to_csv()])

    def _foreign_logs(self) -> Path:
        """One log per secret canary, as another implementation might write it: the canary in
        clear in a session_id and a schema_version (both quoted by audit / verify)."""
        root = self.tmp / "foreign"
        if root.exists():
            return root
        for i, c in enumerate(SECRET_CANARIES):
            def line(seq: int, sid: str, version: str, c: Canary = c) -> str:
                return json.dumps({"id": f"e{seq}", "session_id": sid, "ts": "2026-01-01T00:00:00Z",
                                   "type": "session.start", "actor": "user",
                                   "payload": {"prompt": c.text}, "schema_version": version,
                                   "parent_id": None, "seq": seq})
            d = root / f"s{i:02d}"
            d.mkdir(parents=True)
            (d / ".events.jsonl").write_text(line(1, "x", "v1") + "\n" + line(2, c.text, c.text) + "\n",
                                             encoding="utf-8")
        return root

    def _agentos_audit(self) -> str:
        root = self._foreign_logs()
        return _cli("audit", root)[1] + _cli("audit", root, "--json")[1]

    def _agentos_verify(self) -> str:
        root = self._foreign_logs()
        return _cli("verify", root)[1] + _cli("verify", root, "--json")[1]

    def _mcp(self, mode: str, profile: str | None = None) -> str:
        from agentos_kernel.tools.mcp_serve import SERVE_PROMPT, ServedTools

        rt = Runtime.from_workspace(self.ws, profile=profile)
        session = rt.start_session(SERVE_PROMPT, f"mcp-{mode}-{profile or 'default'}", actor="mcp-client")
        served = ServedTools(rt, session, redact=mode)
        try:
            ok = served.call("echo", {"text": PROMPT})
            keyed = served.call("echo", {"text": "x", **{c.text: 1 for c in SECRET_CANARIES}})
        finally:
            session.log.close()
        return ok.model_dump_json() + keyed.model_dump_json() + json.dumps(ok.model_dump(by_alias=True))

    def _mcp_serve_redact_secrets(self) -> str:
        return self._mcp("secrets")

    def _mcp_serve_redact_all(self) -> str:
        add_profile(self.ws, "plain")  # no PII categories: `all` adds every one
        return self._mcp("all", "plain")


SECRETS_ONLY = {"grader feedback", "agentos audit", "agentos verify"}
"""Sinks with no profile: they redact the secret shapes (PII needs a profile naming it)."""
SINK_NAMES = ("log file", "agentos run", "agentos run json", "agentos events json",
              "agentos replay json", "run result", "cassette recording", "otel export",
              "notebook displays", "grader feedback", "agentos audit", "agentos verify",
              "mcp serve redact secrets", "mcp serve redact all")
CASES = [(sink, c) for sink in SINK_NAMES for c in (SECRET_CANARIES if sink in SECRETS_ONLY else ALL)]


@pytest.fixture(scope="module")
def sinks(ws: Path, tmp_path_factory: pytest.TempPathFactory) -> Sinks:
    return Sinks(ws, tmp_path_factory.mktemp("sink-out"))


@pytest.mark.parametrize(("sink", "c"), CASES, ids=[f"{s}-{c.shape}" for s, c in CASES])
def test_no_canary_reaches_a_sink_in_clear(sinks: Sinks, sink: str, c: Canary) -> None:
    text = sinks(sink)
    assert c.needle not in text, f"{sink} shows the {c.shape} canary in clear"
    shown = text.replace("\\\\", "\\")
    assert c.marker in shown, f"{sink} never received the redacted {c.shape} ({c.marker} absent)"


def test_the_cli_views_of_the_log_show_no_canary(sinks: Sinks) -> None:
    sid = sinks.session()
    for argv in (["replay", sid], ["events", sid], ["events", sid, "--json"], ["replay", sid, "--json"]):
        text = sinks._cli_view(*argv)
        assert text.strip() and not [c.shape for c in ALL if c.needle in text], argv


def test_mcp_serve_redact_none_sends_the_result_as_the_tool_returned_it(sinks: Sinks) -> None:
    text = sinks._mcp("none")
    assert all(c.needle in text.replace("\\n", "\n") for c in SECRET_CANARIES)
    log = (sinks.ws / "sessions" / "mcp-none-default" / ".events.jsonl").read_text(encoding="utf-8")
    assert not [c.shape for c in ALL if c.needle in log]  # the log's copy is redacted all the same


def test_the_notebook_outputs_show_no_canary(ws: Path) -> None:
    import nbformat
    from nbclient import NotebookClient

    cells = ["%load_ext agentos_kernel", f"run = %agent {json.dumps(PROMPT)}\nrun",
             "print(run.output); print(run.prompt)", "%events s0001",
             "from agentos_kernel.jupyter import events_frame\nevents_frame(run)", "%replay s0001"]
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    nbws = ws.parent / "nb-ws"
    if not nbws.exists():
        shutil.copytree(ws, nbws, ignore=shutil.ignore_patterns("sessions"))
    NotebookClient(nb, timeout=120, kernel_name="python3",
                   resources={"metadata": {"path": str(nbws)}}).execute()
    shown = json.dumps([c.get("outputs", []) for c in nb.cells])
    assert "Error" not in shown, shown[:2000]
    assert not [c.shape for c in ALL if c.needle in shown]
    assert "[REDACTED-KEY]" in shown and "[REDACTED-EMAIL]" in shown



@pytest.mark.parametrize("mode", ["default", "none"])
def test_a_real_mcp_client_gets_results_redacted_unless_asked_not_to(ws: Path, mode: str) -> None:
    """`agentos mcp serve` over stdio, as a client spawns it: the tool result holding every
    secret canary comes back redacted by default, as the tool returned it with --redact none."""
    import sys

    import anyio
    from mcp import ClientSession, StdioServerParameters, types
    from mcp.client.stdio import get_default_environment, stdio_client

    import agentos_kernel

    text = " ; ".join(c.text for c in SECRET_CANARIES)
    extra = [] if mode == "default" else ["--redact", "none"]
    # the SDK passes a bare environment: name the tree under test, not an installed copy
    env = {**get_default_environment(), "PYTHONPATH": str(Path(agentos_kernel.__file__).parent.parent)}
    params = StdioServerParameters(command=sys.executable, cwd=ws.parent, env=env, args=[
        "-m", "agentos_kernel", "mcp", "serve", "--workspace", str(ws), "--session", f"stdio-{mode}",
        *extra])

    async def go() -> types.CallToolResult:
        with (ws.parent / f"serve-{mode}.stderr").open("w", encoding="utf-8") as err:
            async with stdio_client(params, errlog=err) as (read, write), \
                    ClientSession(read, write) as session:
                await session.initialize()
                return await session.call_tool("echo", {"text": text})

    got = anyio.run(go).model_dump_json()
    leaked = [c.shape for c in SECRET_CANARIES if c.needle in got.replace("\\n", "\n")]
    if mode == "default":
        assert leaked == [] and "[REDACTED-KEY]" in got
    else:
        assert leaked == [c.shape for c in SECRET_CANARIES]
    log = (ws / "sessions" / f"stdio-{mode}" / ".events.jsonl").read_text(encoding="utf-8")
    assert not [c.shape for c in SECRET_CANARIES if c.needle in log]

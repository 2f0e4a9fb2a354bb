"""Secrets never reach a sink (issue 13): a canary API key in the env var the profile names,
card numbers, a bearer token and a pattern from the profile's `redact_patterns`, all in one
request, and none of them in the log file, `agentos run / replay / events` (text and
--json), the events DataFrame, the reprs of what a run returns, the errors a failing
provider returns (an HTTP backend echoing the key and the prompt), nor a notebook's
outputs. Each sink is also checked to have received the redacted text, so a sink that
simply dropped everything would not pass."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentos_kernel import (
    ContractError,
    Err,
    ErrorCode,
    HookDecision,
    HookHandler,
    Ok,
    Runtime,
    ToolDef,
)
from agentos_kernel.providers.base import CompletionRequest, CompletionResponse, Usage
from agentos_kernel.providers.openai_compat import OpenAICompatProvider
from agentos_kernel.store.redaction import Redactor, luhn_ok, redact

from .fault_kit import add_profile
from .helpers import Cli, Run, finish
from .providers.loopback import Loopback, loopback_server

KEY_ENV = "AGENTOS_CANARY_KEY"
CANARY = "canary-7d1e0b5c93fa4e26"
"""The API key: no built-in pattern matches it, only the profile's api_key_env finds it."""
CARD_GROUPED = "4111 1111 1111 1111"
CARD = "5500005555555559"
AMEX = "378282246310005"
BEARER = "eyJhbGciOiJIUzI1NiJ9.c2VjcmV0LXRva2Vu.c2lnbmF0dXJlMDE"
EMPLOYEE = "EMP-314159"
"""Matched only by the profile's redact_patterns."""
SECRETS = (CANARY, CARD_GROUPED, CARD, AMEX, BEARER, EMPLOYEE)
# No skill trigger in it: the worker's output repeats the request, so the secrets flow into
# every role's messages, the output, the report and the close.
PROMPT = (f"pay the invoice with card {CARD_GROUPED} or {CARD} or {AMEX}; api key {CANARY}; "
          f"send Authorization: Bearer {BEARER}; for employee {EMPLOYEE}")
MARKS = ("[REDACTED-CC]", "[REDACTED-SECRET]", "[REDACTED-TOKEN]", "[REDACTED]")


def leaks(text: str) -> list[str]:
    """The secrets (or their digits run together) found in `text`."""
    found = [s for s in SECRETS if s in text]
    digits = re.sub(r"\D", "", text)
    found += [s for s in (CARD_GROUPED, CARD, AMEX) if re.sub(r"\D", "", s) in digits]
    return found


def assert_clean(text: str, where: str, *, marks: tuple[str, ...] = MARKS) -> None:
    assert not leaks(text), f"{where} leaks {leaks(text)}"
    missing = [m for m in marks if m not in text]
    assert not missing, f"{where} never received the redacted text ({missing} absent)"


@pytest.fixture
def ws(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A workspace whose default profile names the canary's env var and a custom pattern."""
    monkeypatch.setenv(KEY_ENV, CANARY)
    add_profile(workspace, "guarded", api_key_env=KEY_ENV, redact_patterns=[r"EMP-\d{6}"])
    cfg = workspace / "agentos.yaml"
    cfg.write_text(cfg.read_text().replace("default_profile: scripted", "default_profile: guarded"))
    return workspace


def _run(ws: Path, prompt: str = PROMPT, **kw: Any) -> Run:
    rt = Runtime.from_workspace(ws, **kw)
    return finish(rt, rt.handle_user_request(prompt))


# -- the log and the command line -------------------------------------------------------------------


def test_the_log_and_every_cli_view_of_it_hold_no_secret(ws: Path, cli: Cli) -> None:
    code, out, err = cli("--workspace", ws, "run", PROMPT)
    assert code == 0, err
    assert_clean(out + err, "agentos run")
    (log,) = (ws / "sessions").glob("*/.events.jsonl")
    sid = log.parent.name
    assert_clean(log.read_text(encoding="utf-8"), "the log file")
    start = json.loads(log.read_text(encoding="utf-8").splitlines()[0])["payload"]
    # its hash would let anyone holding the log test guesses for the card number
    assert "prompt_sha256" not in start
    for argv in (["replay", sid], ["replay", sid, "--json"], ["events", sid],
                 ["events", sid, "--json"], ["run", PROMPT, "--json"]):
        code, out, err = cli("--workspace", ws, *argv)
        assert code == 0, err
        marks = MARKS if ("events" in argv and "--json" in argv) or argv[0] == "run" else ()
        assert_clean(out + err, f"agentos {' '.join(argv[:1] + argv[2:])}", marks=marks)


def test_what_a_run_returns_and_its_reprs_hold_no_secret(ws: Path) -> None:
    run = _run(ws)
    assert run.ok, run.result
    value = run.result.value
    assert_clean(repr(run.result) + str(value.output) + json.dumps(value.report), "the RunResult")
    snap = run.rt.replay(run.session_id)
    assert_clean(repr(snap) + json.dumps(snap.to_dict()), "the replay snapshot")
    session = run.rt.open_session("reprs")
    assert not leaks(repr(session) + repr(session.log.redact) + repr(run.rt.profile))
    session.log.close()


def test_the_events_frame_holds_no_secret(ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from agentos_kernel.jupyter import events_frame

    run = _run(ws)
    frame = events_frame(run.session_id, ws)
    text = frame.to_csv() + frame.to_html() + frame.to_string()
    assert not leaks(text) and len(frame) == len(run.events)


def test_the_workbench_run_object_holds_no_secret(ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from agentos_kernel.jupyter.api import run_agent

    monkeypatch.chdir(ws)
    agent_run = run_agent(PROMPT)
    assert agent_run.ok
    assert_clean(repr(agent_run) + agent_run._repr_html_() + str(agent_run.output)
                 + agent_run.prompt, "the AgentRun", marks=MARKS[:2])


def test_an_amendment_holding_a_secret_is_redacted_like_the_run(ws: Path) -> None:
    run = _run(ws)
    report = run.of("worker.report")[0]
    run.rt.amend(run.session_id, report.id, "output", f"paid with {CANARY} for {EMPLOYEE}",
                 f"the user sent Authorization: Bearer {BEARER}")
    assert_clean(run.log_path.read_text(encoding="utf-8"), "the amended log")


# -- errors: a provider echoing what it was sent, a hook or a tool quoting a secret -------------------


@pytest.fixture
def echo_server() -> Iterator[Loopback]:
    with loopback_server() as srv:
        srv.echo = 401
        yield srv


@pytest.mark.parametrize(("adapter", "suffix"), [("openai_compat", "/v1"), ("anthropic", "")])
def test_a_backend_echoing_the_key_and_prompt_leaks_nothing(
        ws: Path, cli: Cli, echo_server: Loopback, adapter: str, suffix: str) -> None:
    add_profile(ws, "wire", provider=adapter, model="m", base_url=echo_server.url + suffix,
                api_key_env=KEY_ENV, redact_patterns=[r"EMP-\d{6}"], max_retries=0)
    run = _run(ws, profile="wire")
    assert run.code == ErrorCode.PROVIDER_ERROR
    sent = echo_server.requests[0].headers
    assert CANARY in (sent.get("authorization", "") + sent.get("x-api-key", ""))  # it was sent
    assert_clean(run.result.error.message + repr(run.result), "the returned error",
                 marks=("[REDACTED-SECRET]",))
    assert_clean(run.log_path.read_text(encoding="utf-8"), "the log")
    code, out, err = cli("--workspace", ws, "run", PROMPT, "--profile", "wire")
    assert code == 1 and "PROVIDER_ERROR" in out
    assert_clean(out + err, "agentos run", marks=("[REDACTED-SECRET]",))


def test_a_hook_quoting_a_secret_in_its_reason_leaks_nothing(ws: Path) -> None:
    rt = Runtime.from_workspace(ws)
    rt.hooks.register("UserPromptSubmit", HookHandler("quoter", lambda i: HookDecision(
        "deny", f"refused: {i['prompt']}"), priority=1000))
    run = finish(rt, rt.handle_user_request(PROMPT))
    assert run.code == ErrorCode.PROMPT_DENIED
    assert_clean(str(run.result.error) + repr(run.result), "the returned error")
    assert_clean(run.log_path.read_text(encoding="utf-8"), "the log")


def test_a_cycle_aborted_by_a_hook_quoting_a_secret_leaks_nothing(ws: Path) -> None:
    rt = Runtime.from_workspace(ws)
    rt.hooks.register("WorkflowStart", HookHandler("quoter", lambda i: HookDecision(
        "deny", f"refused: {i['prompt']}"), priority=1000))
    result = rt.run_cycle("code-review", PROMPT)
    assert result.value.verdict == "abort"
    assert_clean(result.value.reason + repr(result.value), "the CycleResult",
                 marks=("[REDACTED-CC]", "[REDACTED]"))


def test_a_tool_raising_with_a_secret_in_its_message_leaks_nothing(ws: Path) -> None:
    skill = ws / "skills" / "pay" / "SKILL.md"
    skill.parent.mkdir()
    skill.write_text("---\nname: pay\ndescription: Pays an invoice.\ntriggers:\n  - pay\n"
                     "allowed-tools:\n  - pay\nversion: 1\nschema_version: v1\n---\n\n# Pay\n\n"
                     "Worker calls pay once.\n", encoding="utf-8")

    def pay(args: dict[str, Any], ctx: Any) -> Any:
        raise RuntimeError(f"card declined: {PROMPT}")

    rt = Runtime.from_workspace(ws, tools=[ToolDef("pay", "tool_echo_in_v1", "tool_echo_out_v1", pay)])
    run = finish(rt, rt.handle_user_request(PROMPT))
    assert ErrorCode.TOOL_ERROR in run.error_codes()
    assert_clean(str(run.result.error) + repr(run.result), "the returned error", marks=())
    assert_clean(run.log_path.read_text(encoding="utf-8"), "the log")


def test_a_role_output_quoting_a_secret_in_its_schema_error_leaks_nothing(ws: Path) -> None:
    bad = {"intent": "pay", "constraints": PROMPT, "needs_advisor": False, "schema_version": "v1"}

    class Lead:
        name = "lead-quoter"

        def complete(self, request: CompletionRequest) -> Any:
            return Ok(CompletionResponse(json.dumps(bad), (), "stop", Usage(1, 1), "m"))

    rt = Runtime.from_workspace(ws)
    rt.provider_factory = lambda p, f: Lead()  # type: ignore[assignment]
    run = finish(rt, rt.handle_user_request(PROMPT))
    assert run.code == ErrorCode.SCHEMA_INVALID  # "constraints" must be a list, and says so
    assert_clean(str(run.result.error) + repr(run.result), "the returned error",
                 marks=("[REDACTED-CC]",))
    assert_clean(run.log_path.read_text(encoding="utf-8"), "the log")


def test_an_adapter_used_on_its_own_redacts_its_errors(ws: Path, echo_server: Loopback) -> None:
    provider = OpenAICompatProvider("m", base_url=echo_server.url + "/v1", api_key_env=KEY_ENV,
                                    max_retries=0, redact_patterns=(r"EMP-\d{6}",))
    short = f"employee {EMPLOYEE}, card {CARD}"  # all of it inside the error's 300 characters
    got = provider.complete(CompletionRequest(({"role": "user", "content": short},), "m"))
    assert isinstance(got, Err) and "HTTP 401" in got.error.message
    assert_clean(got.error.message, "the adapter's error",
                 marks=("[REDACTED-SECRET]", "[REDACTED]", "[REDACTED-CC]"))


# -- a notebook --------------------------------------------------------------------------------------


def test_a_notebook_running_the_request_shows_no_secret(ws: Path) -> None:
    import nbformat
    from nbclient import NotebookClient

    cells = ["%load_ext agentos_kernel",
             f"run = %agent {json.dumps(PROMPT)}\nrun",
             "print(run.output); print(run.prompt)",
             "%events " + "s0001",
             "from agentos_kernel.jupyter import events_frame\nevents_frame(run)",
             "%replay s0001"]
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    NotebookClient(nb, timeout=60, kernel_name="python3",
                   resources={"metadata": {"path": str(ws)}}).execute()
    shown = json.dumps([c.get("outputs", []) for c in nb.cells])
    assert "Error" not in shown, shown[:2000]
    assert_clean(shown, "the notebook's outputs", marks=MARKS[:2])


# -- the patterns themselves -------------------------------------------------------------------------


@pytest.mark.parametrize(("text", "shown"), [
    ("card 4111 1111 1111 1111 ok", "card [REDACTED-CC] ok"),
    ("card 4111-1111-1111-1111", "card [REDACTED-CC]"),
    ("amex 3782 822463 10005", "amex [REDACTED-CC]"),
    ("amex 378282246310005", "amex [REDACTED-CC]"),
    ("card 1234567812345678", "card [REDACTED-CC]"),  # 16 digits in a row: always, like the spec's hook
    ("ids 2026 0101 1200 0001", "ids 2026 0101 1200 0001"),  # not a Luhn number: kept
    ("key sk-ant-api03-abcdefghijklmnop", "key [REDACTED-KEY]"),
    ("aws AKIAABCDEFGHIJKLMNOP", "aws [REDACTED-KEY]"),
    ("gh ghp_" + "a" * 36, "gh [REDACTED-KEY]"),
    ("google AIza" + "b" * 35, "google [REDACTED-KEY]"),
    ("slack xoxb-1234567890-abcdef", "slack [REDACTED-KEY]"),
    ("Authorization: Bearer abcdefghijklmnop123", "Authorization: Bearer [REDACTED-TOKEN]"),
])
def test_default_patterns(text: str, shown: str) -> None:
    assert redact(text) == shown


def test_exact_secrets_and_profile_patterns_and_a_repr_that_shows_neither() -> None:
    r = Redactor.of([CANARY, ""], [r"EMP-\d{6}"])
    assert r({"a": [f"x {CANARY} y", EMPLOYEE], "n": 1}) == {
        "a": ["x [REDACTED-SECRET] y", "[REDACTED]"], "n": 1}
    assert CANARY not in repr(r) and "EMP" not in repr(r)
    assert luhn_ok("4111111111111111") and not luhn_ok("4111111111111112")


def test_a_bad_redact_pattern_is_refused_naming_the_field(workspace: Path) -> None:
    add_profile(workspace, "broken", redact_patterns=["EMP-(\\d{6}"])
    with pytest.raises(ContractError) as caught:
        Runtime.from_workspace(workspace)
    assert "profiles.broken.redact_patterns[0]" in str(caught.value)

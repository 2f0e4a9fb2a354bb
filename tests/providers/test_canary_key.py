"""The canary key (issue 10): a fake key in the variable each real adapter reads by default
(the profile names no api_key_env) reaches the server and nothing else: no log line, no
cassette, no CLI output, no repr, no returned error, no file in the workspace, even when the
model quotes it back (a repair turn) or the server echoes it in an error."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from agentos_kernel import Runtime
from agentos_kernel.kernel import PROVIDERS, key_env_of

from ..helpers import Cli, finish
from .loopback import Loopback, loopback_server
from .wire import base_url, prose

CANARY = "CanaryKey_q7Lm3Np9Rt2Vx"
"""No built-in pattern matches it: only the adapter's key variable finds it."""
DEFAULT_ENV = {"anthropic": "ANTHROPIC_API_KEY", "openai": "OPENAI_API_KEY", "gemini": "GEMINI_API_KEY"}
PROMPT = "hello, greet Ada"


@pytest.fixture
def server() -> Iterator[Loopback]:
    with loopback_server() as srv:
        yield srv


def _profile(ws: Path, provider: str, url: str, **fields: object) -> str:
    config = ws / "agentos.yaml"
    doc = yaml.safe_load(config.read_text(encoding="utf-8"))
    doc["profiles"]["real"] = {"provider": provider, "model": "scripted-1",
                               "base_url": base_url(provider, url), **fields}
    config.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    return "real"


def _files(root: Path) -> Iterator[Path]:
    return (p for p in root.rglob("*") if p.is_file())


def _assert_nowhere(ws: Path, *texts: str) -> None:
    for text in texts:
        assert CANARY not in text
    for path in _files(ws):
        assert CANARY.encode() not in path.read_bytes(), path


@pytest.mark.parametrize("provider", sorted(DEFAULT_ENV))
def test_a_run_quoting_the_key_back_leaks_it_nowhere(workspace: Path, server: Loopback, cli: Cli,
                                                     provider: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(DEFAULT_ENV[provider], CANARY)
    profile = _profile(workspace, provider, server.url, max_repairs=1)
    rt = Runtime.from_workspace(workspace, profile=profile)
    assert key_env_of(rt.profile) == DEFAULT_ENV[provider] and rt.profile.api_key_env is None
    # the lead's first answer quotes the key: it goes back to the model in a repair turn
    server.replies.append((200, prose(provider, f"Sure! I used your key {CANARY}.")))
    code, out, err = cli("--workspace", workspace, "run", "--profile", profile, "--record", PROMPT)
    assert code == 0, (out, err)
    sent = server.requests[0].headers
    assert CANARY in (sent.get("authorization", "") + sent.get("x-api-key", "")
                      + sent.get("x-goog-api-key", ""))  # the key did reach the server
    sid = out.split("session ", 1)[1].split(":", 1)[0]
    log = (workspace / "sessions" / sid / ".events.jsonl").read_text(encoding="utf-8")
    assert "Sure! I used your key [REDACTED" in log  # the quoting answer was logged, redacted
    assert (workspace / "cassettes" / "real.json").is_file()
    views = [cli("--workspace", workspace, *argv) for argv in
             (["replay", sid, "--json"], ["events", sid], ["events", sid, "--json"],
              ["validate", "--profile", profile])]
    assert all(code == 0 for code, _, _ in views), views
    adapter = PROVIDERS[provider](rt.profile, None)
    _assert_nowhere(workspace, out, err, *(o + e for _, o, e in views), repr(rt.profile),
                    repr(vars(adapter)), repr(rt.events(sid)))


@pytest.mark.parametrize("provider", sorted(DEFAULT_ENV))
def test_a_server_echoing_the_key_in_its_error_leaks_it_nowhere(
        workspace: Path, server: Loopback, cli: Cli, provider: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(DEFAULT_ENV[provider], CANARY)
    profile = _profile(workspace, provider, server.url, max_retries=0)
    server.echo = 401
    rt = Runtime.from_workspace(workspace, profile=profile)
    run = finish(rt, rt.handle_user_request(PROMPT))
    assert run.code == "PROVIDER_ERROR" and "HTTP 401" in run.result.error.message
    assert "[REDACTED" in run.result.error.message  # the echoed key was there, and replaced
    code, out, err = cli("--workspace", workspace, "run", "--profile", profile, PROMPT)
    assert code == 1 and "HTTP 401" in out
    _assert_nowhere(workspace, out, err, run.result.error.message, repr(run.result))

"""Record once, replay for a whole class (issue 10): `agentos run --record` writes a
cassette keyed by the sha256 of the canonical request; `provider: cassette` replays it
with no network; a miss is a clear error naming the request hash and the file."""

from __future__ import annotations

import hashlib
import json
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from agentos_kernel import ContractError, ErrorCode, Runtime
from agentos_kernel.store.events import canonical, read_log
from agentos_kernel.store.redaction import redact

from ..helpers import CANONICAL, Cli, finish
from .loopback import Loopback, loopback_server
from .wire import KEY_ENV, add_real_profile

CANARY = "sk-ant-canary-cassette-7f3a9c1e5b2d"


@pytest.fixture
def server() -> Iterator[Loopback]:
    with loopback_server() as srv:
        yield srv


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, CANARY)


def _offline_profile(ws: Path, cassette: str, model: str = "scripted-1") -> None:
    config = ws / "agentos.yaml"
    doc = yaml.safe_load(config.read_text(encoding="utf-8"))
    doc["profiles"]["offline"] = {"provider": "cassette", "model": model, "cassette": cassette}
    config.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")


def _no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*_a: object, **_k: object) -> None:
        raise AssertionError("a cassette replay tried a live call")

    monkeypatch.setattr(socket.socket, "connect", refuse)  # no connection of any kind


def _record(ws: Path, cli: Cli, server: Loopback, provider: str = "anthropic") -> tuple[Path, list]:
    profile = add_real_profile(ws, provider, server.url)
    code, out, err = cli("--workspace", ws, "run", "--profile", profile, "--record", CANONICAL)
    assert code == 0, (out, err)
    cassette = ws / "cassettes" / f"{profile}.json"
    assert f"cassette: {cassette}" in out
    sid = out.split("session ", 1)[1].split(":", 1)[0]
    return cassette, list(read_log(ws / "sessions" / sid / ".events.jsonl"))


def test_record_then_replay_offline_with_the_same_log_shape(workspace: Path, server: Loopback, cli: Cli,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    cassette, recorded = _record(workspace, cli, server)
    doc = json.loads(cassette.read_text(encoding="utf-8"))
    requests = [e for e in recorded if e.type == "llm.request"]
    assert doc["format"] == "agentos-cassette-v1"
    assert len(doc["calls"]) == len(requests) == len(server.requests)
    for call in doc["calls"]:
        assert call["request_sha256"] == hashlib.sha256(canonical(redact(call["request"]))).hexdigest()
    assert CANARY not in cassette.read_text(encoding="utf-8")

    _offline_profile(workspace, "cassettes/wire-anthropic.json")
    _no_network(monkeypatch)
    rt = Runtime.from_workspace(workspace, profile="offline")
    run = finish(rt, rt.handle_user_request(CANONICAL))
    assert run.ok, run.result
    assert run.types() == [e.type for e in recorded]
    assert run.result.value.output == "Hello, Ada!"
    assert [e.payload["text"] for e in run.of("llm.response")] == [
        e.payload["text"] for e in recorded if e.type == "llm.response"]
    assert run.events[0].payload["provider"] == "cassette"


def test_a_miss_names_the_request_hash_and_the_file_and_never_calls(
        workspace: Path, server: Loopback, cli: Cli, monkeypatch: pytest.MonkeyPatch) -> None:
    cassette, _ = _record(workspace, cli, server)
    _offline_profile(workspace, "cassettes/wire-anthropic.json")
    _no_network(monkeypatch)
    code, out, _ = cli("--workspace", workspace, "run", "--profile", "offline", "hello, greet Grace")
    assert code == 1
    line = next(x for x in out.splitlines() if x.startswith("NOT ok"))
    assert ErrorCode.PROVIDER_ERROR in line and "cassette miss" in line and str(cassette) in line
    sha = line.split("request sha256 ", 1)[1].split()[0]
    assert len(sha) == 64 and int(sha, 16) >= 0


def test_a_miss_from_another_model_says_so(workspace: Path, server: Loopback, cli: Cli) -> None:
    _record(workspace, cli, server)
    _offline_profile(workspace, "cassettes/wire-anthropic.json", model="another-model")
    rt = Runtime.from_workspace(workspace, profile="offline")
    run = finish(rt, rt.handle_user_request(CANONICAL))
    assert run.code == ErrorCode.PROVIDER_ERROR
    assert "recorded with model scripted-1" in run.result.error.message


def test_a_missing_cassette_is_refused_before_any_session(workspace: Path, cli: Cli) -> None:
    _offline_profile(workspace, "cassettes/none.json")
    with pytest.raises(ContractError,
                       match=r"profiles\.offline\.cassette: cassette .*none\.json does not exist"):
        Runtime.from_workspace(workspace, profile="offline")
    assert not (workspace / "sessions").exists() or not any((workspace / "sessions").iterdir())
    code, out, _ = cli("validate", workspace)
    assert code == 0 and "warning: agentos.yaml: profiles.offline.cassette" in out
    code, out, _ = cli("validate", workspace, "--profile", "offline")
    assert code == 1 and "profiles.offline.cassette" in out


def test_a_cassette_that_is_not_one_is_refused(workspace: Path) -> None:
    (workspace / "c.json").write_text('{"calls": []}', encoding="utf-8")
    _offline_profile(workspace, "c.json")
    with pytest.raises(ContractError, match="is not an agentos-cassette-v1 file"):
        Runtime.from_workspace(workspace, profile="offline")


def test_recording_twice_adds_to_the_cassette(workspace: Path, server: Loopback, cli: Cli) -> None:
    cassette, _ = _record(workspace, cli, server)
    n = len(json.loads(cassette.read_text(encoding="utf-8"))["calls"])
    code, _, _ = cli("--workspace", workspace, "run", "--profile", "wire-anthropic", "--record",
                     "hello, greet Grace")
    assert code == 0
    assert len(json.loads(cassette.read_text(encoding="utf-8"))["calls"]) == 2 * n
    _offline_profile(workspace, "cassettes/wire-anthropic.json")
    for prompt in (CANONICAL, "hello, greet Grace"):
        rt = Runtime.from_workspace(workspace, profile="offline")
        assert finish(rt, rt.handle_user_request(prompt)).ok

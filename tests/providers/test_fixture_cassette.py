"""The shipped cassette (cassettes/anthropic-wire-hello.json, recorded in the Anthropic
Messages API's wire format by tests/providers/record_fixture_cassette.py): the commented
`anthropic-offline` example replays the canonical request in a fresh workspace with no
network and no key, with the scripted run's event sequence."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest

from agentos_kernel import Runtime
from agentos_kernel.workspace import reference_dir

from ..helpers import CANONICAL, finish
from .test_profiles import uncomment_examples

RERECORD = "re-record it: python -m tests.providers.record_fixture_cassette"


def test_the_offline_example_replays_the_shipped_cassette(workspace: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    uncomment_examples(workspace / "agentos.yaml")
    assert not (workspace / "cassettes").exists()  # found in the reference workspace

    def refuse(*_a: object, **_k: object) -> None:
        raise AssertionError("a cassette replay tried a live call")

    monkeypatch.setattr(socket.socket, "connect", refuse)  # no connection of any kind
    rt = Runtime.from_workspace(workspace, profile="anthropic-offline")
    run = finish(rt, rt.handle_user_request(CANONICAL))
    assert run.ok, f"{run.result}; if agents/, skills/ or a request's shape changed, {RERECORD}"
    scripted = Runtime.from_workspace(workspace)
    assert run.types() == finish(scripted, scripted.handle_user_request(CANONICAL)).types()
    calls = json.loads((reference_dir() / "cassettes" / "anthropic-wire-hello.json").read_text())["calls"]
    assert len(run.of("llm.request")) == len(calls)
    assert {e.payload["model"] for e in run.of("llm.request")} == {"claude-sonnet-4-5"}
    assert run.result.value.output == "Hello, Ada!"

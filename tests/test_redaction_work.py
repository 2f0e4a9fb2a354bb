"""Redaction does not rescan what it has already found clean (issue 12), and still redacts
everything: a warm cache never lets a secret through. Guards count scans, never time."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentos_kernel import Runtime
from agentos_kernel.store import redaction
from agentos_kernel.store.redaction import _CleanStrings, redact

from .helpers import CANONICAL, RunRequest, finish


@pytest.fixture
def clean(monkeypatch: pytest.MonkeyPatch) -> _CleanStrings:
    """A fresh set of clean strings (the process-wide one may be emptied by earlier tests)."""
    fresh = _CleanStrings()
    monkeypatch.setattr(redaction, "CLEAN", fresh)
    return fresh


def test_a_repeated_request_scans_no_string_again(workspace: Path, clean: _CleanStrings) -> None:
    rt = Runtime.from_workspace(workspace)
    finish(rt, rt.handle_user_request(CANONICAL))
    before = clean.scans
    run = finish(rt, rt.handle_user_request(CANONICAL))
    assert before > 0 and clean.scans - before == 0
    assert run.events[-1].type == "session.close" and len(run.events) == 32


def test_a_card_number_is_redacted_every_time_it_comes_back(run_request: RunRequest) -> None:
    prompt = "pay with 5500005555555559 please"
    for _ in range(2):
        run = run_request(prompt)
        text = "".join(str(e.payload) for e in run.events)
        assert "5500005555555559" not in text and "[REDACTED-CC]" in text


def test_an_exact_secret_in_a_string_known_clean_is_still_redacted(clean: _CleanStrings) -> None:
    text = "the key is canary-qwertzuiopasdfgh here"
    assert redact(text) == text  # no default pattern matches: now known clean
    assert text in clean.known
    assert redact({"m": [text]}, secrets=("canary-qwertzuiopasdfgh",)) == {
        "m": ["the key is [REDACTED-SECRET] here"]}


def test_the_clean_strings_are_bounded() -> None:
    clean = _CleanStrings(budget=10)
    for word in ("alpha", "beta", "gamma"):
        assert not clean.may_hold_secret(word)
    assert clean.size <= 10 and "gamma" in clean.known and "alpha" not in clean.known
    assert not clean.may_hold_secret("x" * 11) and "x" * 11 not in clean.known
    assert clean.may_hold_secret("sk-abcdefghijklmnopqrstu") and clean.scans == 5

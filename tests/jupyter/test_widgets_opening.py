"""Opening a LayerStepper or a ReplayScrubber: each widget is made with what it first shows
(no state message after it is made), and the log of a session id is read once. What an
opened widget shows is what the same widget shows after being stepped there."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import ipywidgets as W
import pytest

from agentos_kernel.jupyter import LayerStepper, ReplayScrubber, run_agent
from agentos_kernel.testing import write_long_session

from ..test_replay_opened import counted_reads

SCRUBBER_VIEWS = ("header", "diff_view", "snapshot_view")


def _shown(w: Any, views: tuple[str, ...]) -> list[Any]:
    out: list[Any] = [getattr(w, v).value for v in views]
    out += [w.slider.value, w.slider.min, w.slider.max, w.slider.description, list(w._dom_classes)]
    if isinstance(w, LayerStepper):
        out += [w.prev_button.disabled, w.next_button.disabled, repr(w)]
    return out


@pytest.fixture
def long_session(ws: Path) -> str:
    run_agent("hello, greet Ada", workspace=ws)
    write_long_session(ws / "sessions", "long", 700)
    return "long"


def test_an_opened_stepper_shows_what_a_stepped_one_shows(ws: Path, long_session: str) -> None:
    rnd = random.Random(7)
    for sid in ("s0001", long_session):
        n = len(LayerStepper(sid, workspace=ws).events)
        for k in [1, 2, n - 1, n, *rnd.sample(range(1, n + 1), 6)]:
            stepped = LayerStepper(sid, workspace=ws, start=2 if k == 1 else 1)
            stepped.go(k)
            opened = LayerStepper(sid, workspace=ws, start=k)
            assert _shown(opened, LayerStepper._VIEWS) == _shown(stepped, LayerStepper._VIEWS), (sid, k)


def test_an_opened_scrubber_shows_what_a_scrubbed_one_shows(ws: Path, long_session: str) -> None:
    rnd = random.Random(8)
    for sid in ("s0001", long_session):
        n = len(ReplayScrubber(sid, workspace=ws).events)
        for k in [0, 1, n - 1, n, *rnd.sample(range(n + 1), 6)]:
            scrubbed = ReplayScrubber(sid, workspace=ws, start=1 if k == 0 else 0)
            scrubbed.go(k)
            opened = ReplayScrubber(sid, workspace=ws, start=k)
            assert _shown(opened, SCRUBBER_VIEWS) == _shown(scrubbed, SCRUBBER_VIEWS), (sid, k)


def test_opening_sends_no_state_after_making_a_widget(ws: Path, long_session: str,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    sent: list[str] = []
    real = W.Widget.send_state

    def send_state(self: W.Widget, key: Any = None) -> None:
        sent.append(f"{type(self).__name__}.{key}")
        real(self, key)

    monkeypatch.setattr(W.Widget, "send_state", send_state)
    LayerStepper(long_session, workspace=ws, start=5)
    ReplayScrubber(long_session, workspace=ws, start=5)
    assert sent == []
    LayerStepper(long_session, workspace=ws).next()  # a step still sends what changed
    assert "HTML.value" in sent and "IntSlider.value" in sent


def test_opening_a_session_id_reads_its_log_once(ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write_long_session(ws / "sessions", "long", 3000)
    read = counted_reads(monkeypatch)
    for cls in (LayerStepper, ReplayScrubber):
        read.clear()
        cls("long", workspace=ws)
        # the log once (each read's unfinished line again), then the blocks the view shows
        assert sum(read) < 1.2 * path.stat().st_size, cls

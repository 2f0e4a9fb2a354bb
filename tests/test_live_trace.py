"""Class-day defect 8: `agentos run` prints its trace while the run goes on, one line per
event as it is logged, and a terminal shows a spinner while a model call is outstanding."""

from __future__ import annotations

import io
import time
from pathlib import Path
from typing import Any

from agentos_kernel import Event, Runtime
from agentos_kernel.telemetry.livetrace import LiveTrace, header, line

from .helpers import CANONICAL


def test_each_event_is_printed_as_it_is_logged(runtime: Runtime) -> None:
    out = io.StringIO()
    live = LiveTrace(out=out, spinner=False)
    seen: list[tuple[str, int]] = []

    def after_live(ev: Event) -> None:  # runs after the live trace, inside the same append
        seen.append((ev.id, out.getvalue().count("\n")))

    with runtime.watching(live), runtime.watching(after_live):
        sid = runtime.handle_user_request(CANONICAL).value.session_id
    events = runtime.events(sid)
    # When event k is logged its line is already out (plus the header), not at the end.
    assert seen == [(ev.id, k + 1) for k, ev in enumerate(events, 1)]
    assert out.getvalue().splitlines() == [header()] + [line(ev) for ev in events]
    assert runtime.watchers == []  # watching() leaves nothing behind


def test_the_cli_streams_then_names_the_session(workspace: Path, cli: Any) -> None:
    code, out, _ = cli("--workspace", workspace, "run", CANONICAL)
    rt = Runtime.from_workspace(workspace)
    (sid,) = rt.store.sessions()
    lines = out.splitlines()
    events = rt.events(sid)
    assert code == 0 and lines[: len(events) + 1] == [header()] + [line(ev) for ev in events]
    assert lines[len(events) + 2:] == [f"session {sid}: log {rt.store.path(sid)}", "ok: Hello, Ada!"]


def test_json_output_has_no_trace(workspace: Path, cli: Any) -> None:
    code, out, _ = cli("--workspace", workspace, "run", CANONICAL, "--json")
    assert code == 0 and out.lstrip().startswith("{") and header() not in out


class Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_wait_on_the_model_shows_a_spinner_that_is_erased(runtime: Runtime) -> None:
    sid = runtime.handle_user_request(CANONICAL).value.session_id
    request, response = (next(e for e in runtime.events(sid) if e.type == t)
                         for t in ("llm.request", "llm.response"))
    err = Tty()
    live = LiveTrace(out=io.StringIO(), err=err, interval_s=0.01)
    assert live.spinner  # on by default on a terminal
    live(request)
    deadline = time.monotonic() + 5
    while "waiting for the model (lead)" not in err.getvalue() and time.monotonic() < deadline:
        time.sleep(0.01)
    live(response)  # the answer came: the spinner stops and its line is erased
    shown = err.getvalue()
    assert "waiting for the model (lead)" in shown and shown.endswith("\r\033[K")
    assert LiveTrace(out=io.StringIO(), err=io.StringIO()).spinner is False  # not a terminal


def test_a_closed_pipe_stops_the_printing_not_the_run(runtime: Runtime) -> None:
    class Closed(io.StringIO):
        def write(self, s: str) -> int:
            raise BrokenPipeError

    live = LiveTrace(out=Closed(), spinner=False)
    with runtime.watching(live):
        result = runtime.handle_user_request(CANONICAL)
    assert result.value.output == "Hello, Ada!" and live.lines == 0
    assert runtime.replay(result.value.session_id).closed

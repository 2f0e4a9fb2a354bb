"""%agent --fork, %diff and the LogDiff widget (issue 11)."""

from __future__ import annotations

import pytest
from IPython.core.error import UsageError

from agentos_kernel.jupyter.display import AgentRun

CANONICAL = '"hello, greet Ada"'


def test_agent_fork_runs_the_rest_live(ip) -> None:
    ip.run_line_magic("agent", CANONICAL)
    run = ip.run_line_magic("agent", "--fork s0001@14 --faults hook_deny")
    assert isinstance(run, AgentRun)
    assert run.session_id == "s0002" and not run.ok
    assert run.prompt == "hello, greet Ada"  # the parent's request
    assert run.events[14].type == "session.forked"
    assert run.events[14].payload["parent_session"] == "s0001"
    assert next(e.payload["code"] for e in run.failures if e.type == "domain.error") == "GATE_DENIED"
    assert "GATE_DENIED" in repr(run)


@pytest.mark.parametrize(("line", "start"), [
    ("--fork s0001@15", "%agent: cannot fork s0001@15: event 15 is a llm.request"),
    ('--fork s0001@14 "hello"', "%agent: --fork runs the parent's own request"),
    ("--fork s0001", "%agent: 's0001' is not ID@K"),
])
def test_agent_fork_bad_input_is_one_line(ip, line: str, start: str) -> None:
    ip.run_line_magic("agent", CANONICAL)
    with pytest.raises(UsageError) as info:
        ip.run_line_magic("agent", line)
    assert str(info.value).startswith(start), str(info.value)
    assert "\n" not in str(info.value)

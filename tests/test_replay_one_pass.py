"""`agentos replay --summary` verifies and summarizes in one pass (Runtime.verified_summary):
the summary is the one `replay_summary` gives, for logs that verify; a log that does not,
or whose payloads do not fold, gets no one-pass summary and is read again as before (its
warning and its error unchanged)."""

from __future__ import annotations

import shutil
from pathlib import Path

import orjson
import pytest

from agentos_kernel.kernel import Runtime
from agentos_kernel.store.events import LOG_NAME, canonical
from agentos_kernel.testing import write_long_session

from .helpers import Cli, RunRequest
from .test_verify import rechain
from .test_verify_bounded import _rising, _with_ids


@pytest.mark.parametrize("faults", [None, "malformed_worker"])
@pytest.mark.parametrize("recent", [0, 3, 20])
def test_one_pass_is_the_summary(run_request: RunRequest, faults: str | None, recent: int) -> None:
    run = run_request(session_id="s1", faults=faults)
    report, summary = run.rt.verified_summary("s1", recent)
    assert report.ok and summary == run.rt.replay_summary("s1", None, recent)


def test_one_pass_on_long_logs_of_both_id_kinds(workspace: Path) -> None:
    rt = Runtime.from_workspace(workspace)
    sessions = workspace / "sessions"
    write_long_session(sessions, "long", 3000)
    lines = write_long_session(sessions, "rising", 3000).read_bytes().splitlines(keepends=True)
    (sessions / "rising" / LOG_NAME).write_bytes(b"".join(_with_ids(lines, _rising(len(lines)))))
    for sid in ("long", "rising"):
        report, summary = rt.verified_summary(sid)
        assert report.ok and summary == rt.replay_summary(sid)


def test_a_log_that_does_not_verify_or_fold_is_read_again(workspace: Path, cli: Cli,
                                                           run_request: RunRequest) -> None:
    run = run_request(session_id="s1")
    log = run.log_path
    lines = log.read_bytes().splitlines(keepends=True)
    shutil.copytree(log.parent, log.parent.parent / "s2")
    (log.parent.parent / "s2" / LOG_NAME).write_bytes(b"".join([*lines[:5], b"\n", *lines[5:]]))
    report, summary = run.rt.verified_summary("s2")
    assert report.blank is not None and summary is None
    code, out, err = cli("--workspace", workspace, "replay", "s2", "--summary")
    assert code == 0 and "blank-line" in err and "hook_decision_counts:" in out
    # usage that does not fold: `usage` a string, chained anew, so the log verifies
    k = next(i for i, x in enumerate(lines) if b'"type":"llm.response"' in x)
    obj = orjson.loads(lines[k])
    obj["payload"]["usage"] = "lots"
    bad = rechain([*lines[:k], canonical(obj) + b"\n", *lines[k + 1:]], k)
    log.write_bytes(b"".join(bad))
    report, summary = run.rt.verified_summary("s1")
    assert report.ok and summary is None
    code, _, err = cli("--workspace", workspace, "replay", "s1", "--summary")
    assert code != 0 and f":{k + 1}: payload: a field of this 'llm.response' event" in err

"""Class-day defect 1: a fail-closed run's last line and its snapshot name the root cause
(the first fail-closed code and its seq) beside the outcome, and the README's fail-closed
table is what the command prints."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from agentos_kernel import Runtime

from .helpers import REPO, Cli, RunRequest

ROW = re.compile(r"^\| `(?P<args>[^`]+)` \| [^|]+ \| `(?P<last>NOT ok: [^`]+)` \|$")


def readme_rows() -> list[tuple[str, str, str]]:
    """(prompt, preset, documented last line) of each row of the README's fail-closed table."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    section = text.split("## Reproduce a fail-closed case", 1)[1].split("\n## ", 1)[0]
    rows = []
    for line in section.splitlines():
        m = ROW.match(line)
        if m:
            prompt, flag, preset = shlex.split(m["args"])
            assert flag == "--faults", line
            rows.append((prompt, preset, m["last"]))
    return rows


ROWS = readme_rows()


def test_the_readme_table_covers_the_presets_the_issue_names() -> None:
    named = {"hook_deny", "unknown_tool", "tool_out_of_scope", "hook_timeout", "write_conflict",
             "schema_violation", "malformed_worker", "provider_down", "reviewer_fail"}
    assert named <= {preset for _, preset, _ in ROWS}


def _matches(documented: str, printed: str) -> bool:
    """`…` in the README stands for the message; everything else is literal."""
    pattern = ".+".join(re.escape(part) for part in documented.split("…"))
    return re.fullmatch(pattern, printed) is not None


@pytest.mark.parametrize(("prompt", "preset", "last"), ROWS, ids=[r[1] for r in ROWS])
def test_each_readme_row_is_what_the_command_prints(workspace: Path, cli: Cli, prompt: str,
                                                    preset: str, last: str) -> None:
    code, out, err = cli("--workspace", workspace, "run", prompt, "--faults", preset)
    assert code == 1, out + err
    printed = out.rstrip("\n").splitlines()[-1]
    assert _matches(last, printed), f"README: {last}\nprinted: {printed}"
    # The snapshot says the same, from the log alone; the seq named is that event's.
    rt = Runtime.from_workspace(workspace)
    (sid,) = rt.store.sessions()
    snap = rt.replay(sid)
    assert f"NOT ok: {snap.close_reason}" == printed
    code_at = re.search(r"\(root cause: (\w+) at event (\d+)\)$", printed)
    assert code_at is not None
    event = rt.events(sid)[int(code_at[2]) - 1]
    assert event.type in ("domain.error", "schema.violation")
    assert event.payload.get("code", "SCHEMA_INVALID") == code_at[1]
    earlier = [e for e in rt.events(sid)[: int(code_at[2]) - 1]
               if e.type in ("domain.error", "schema.violation")]
    assert earlier == [], "the root cause is the first fail-closed event"


def test_an_ok_run_names_no_root_cause(run_request: RunRequest) -> None:
    run = run_request()
    assert run.ok
    assert run.rt.replay(run.session_id).close_reason is None


def test_the_close_reason_still_starts_with_the_final_code(run_request: RunRequest) -> None:
    """Readers (lab-04) check `close_reason.startswith(code + ':')`: the note goes after."""
    run = run_request(faults="hook_deny")
    reason = run.rt.replay(run.session_id).close_reason
    assert reason.startswith(f"{run.code}:")
    assert reason.endswith("(root cause: GATE_DENIED at event 18)")

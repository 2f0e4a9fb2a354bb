"""The grader's parts on small inputs: log normalisation, snapshot comparison, README sections,
fail-closed test detection, runtime boundary, contracts, the sandbox's layers and the CLI's
bad-input exits. About 3 s (the sandbox tests start a few short processes)."""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import sys
import time
from pathlib import Path

import pytest

from agentos_kernel.cli.main import main as cli_main
from agentos_kernel.labs.rubric import criteria as rubric
from agentos_kernel.labs.rubric import grade as grade_mod
from agentos_kernel.labs.rubric import testrun
from agentos_kernel.labs.rubric.boundary import check as boundary_check
from agentos_kernel.labs.rubric.contracts import check as contracts_check
from agentos_kernel.labs.rubric.determinism import first_difference, normalise, normalised_logs
from agentos_kernel.labs.rubric.observability import check as observability_check
from agentos_kernel.labs.rubric.observability import compare_snapshot, replay_log
from agentos_kernel.labs.rubric.readme import check as readme_check
from agentos_kernel.labs.rubric.readme import sections
from agentos_kernel.labs.rubric.suite import find_tests, junit_outcomes
from agentos_kernel.labs.sandbox import run as sandbox

from ._grade_fixtures import FULL_MARKS, LOG

UUID_A, UUID_B = "0b7e8d3a-1111-4222-8333-444455556666", "9f9f9f9f-aaaa-4bbb-8ccc-dddddddddddd"


def _line(eid: str, sid: str, t: str, payload: dict, parent: str | None = None, ts: float = 1.0) -> bytes:
    return json.dumps({"id": eid, "session_id": sid, "ts": ts, "type": t, "actor": "worker",
                       "payload": payload, "schema_version": "v1", "parent_id": parent}).encode()


def _log(sid: str, ids: tuple[str, str], ts: float, ms: float, text: str = "Hello, Ada!") -> bytes:
    return b"\n".join([
        _line(ids[0], sid, "tool.invoke", {"id": "t1", "name": "echo", "args": {"text": text}}, ts=ts),
        _line(ids[1], sid, "tool.result", {"ok": True, "of": ids[0], "ms": ms, "elapsed_ms": ms},
              parent=ids[0], ts=ts + 1),
    ])


def test_logs_equal_after_normalising_ids_sessions_and_timings() -> None:
    one = _log("s-" + UUID_A, (UUID_A, UUID_B), ts=100.0, ms=1.5)
    two = _log("s-" + UUID_B, (UUID_B, UUID_A), ts=999.0, ms=7.25)
    assert normalise(one) == normalise(two)
    assert normalise(one)[1]["parent_id"] == "#1" and normalise(one)[1]["payload"]["of"] == "#1"
    assert first_difference(normalised_logs({f"tmp/{UUID_A}/.events.jsonl": one}),
                            normalised_logs({f"tmp/{UUID_B}/.events.jsonl": two})) is None


def test_a_changed_decision_is_a_difference_naming_line_and_field() -> None:
    one = normalised_logs({"a/.events.jsonl": _log("s", (UUID_A, UUID_B), 1, 1)})
    two = normalised_logs({"a/.events.jsonl": _log("s", (UUID_A, UUID_B), 1, 1, text="Hello, Bob!")})
    diff = first_difference(one, two)
    assert diff is not None
    assert "line 1 (tool.invoke)" in diff and "payload.args.text" in diff and "Hello, Bob!" in diff


def test_snapshot_compared_in_the_spec_shape_and_snapshot_v1() -> None:
    data = (FULL_MARKS / LOG).read_bytes()
    snap = replay_log(data)
    spec_shape = json.loads((FULL_MARKS / "replay_snapshot.json").read_text(encoding="utf-8"))
    assert "agents" in spec_shape and "input" in spec_shape["cost"]
    assert compare_snapshot(spec_shape, snap) == []
    assert compare_snapshot(snap.to_dict(), snap) == []  # snapshot_v1: roles, input_tokens, extended keys
    wrong = {**snap.to_dict(), "llm_calls": 99}
    assert any("llm_calls is 99" in p for p in compare_snapshot(wrong, snap))
    partial = {k: v for k, v in spec_shape.items() if k != "tools_invoked"}
    assert any("no 'tools_invoked'" in p for p in compare_snapshot(partial, snap))


def test_a_whole_log_gap_is_reported_without_a_line_number(tmp_path: Path) -> None:
    root = tmp_path / "sub"
    shutil.copytree(FULL_MARKS, root)
    log = root / LOG
    lines = log.read_bytes().splitlines(keepends=True)
    log.write_bytes(b"".join(ln for ln in lines if b'"session.close"' not in ln))
    result = observability_check(root)
    assert not result.passed
    assert f"{LOG}: audit closed: no session.close" in "\n".join(result.details), result.details
    assert ":None" not in result.reason + "".join(result.details)


def test_readme_sections_ignore_hashes_inside_code() -> None:
    secs = sections("# Title\ntext\n```\n# not a heading\n```\n## Run\n`x`\n")
    assert [s.heading for s in secs] == ["", "Title", "Run"]
    assert "# not a heading" in secs[1].body


def test_readme_names_each_missing_section(tmp_path: Path) -> None:
    (tmp_path / "README.md").write_text("# Lab\n\n## Known limitations\n\n- none yet\n", encoding="utf-8")
    result = readme_check(tmp_path)
    assert not result.passed and result.reason.startswith("README.md: missing 4 of 5 sections")
    assert "known limitations" not in result.reason


def _suite(tmp_path: Path, body: str) -> Path:
    (tmp_path / "tests").mkdir(exist_ok=True)
    (tmp_path / "tests" / "test_x.py").write_text(body, encoding="utf-8")
    return tmp_path


def test_a_fail_closed_test_names_a_case_and_asserts(tmp_path: Path) -> None:
    root = _suite(tmp_path, (
        "import pytest\n"
        "def test_denies():\n    assert decide() == 'deny'\n"
        "def test_names_without_asserting():\n    print('TOOL_NOT_FOUND')\n"
        "class TestConflicts:\n    def test_stale(self):\n"
        "        with pytest.raises(Conflict, match='WRITE_CONFLICT'):\n            write()\n"
        "def test_e2e_flow():\n    assert run()\n"))
    tests, problems = find_tests(root, "python")
    assert problems == []
    by_name = {t.name: t for t in tests}
    assert by_name["test_denies"].cases == ("hook deny, timeout or exception",)
    assert by_name["test_names_without_asserting"].cases == ()
    assert by_name["test_stale"].cases == ("stale file hash",)
    assert by_name["test_stale"].key == "tests.test_x.TestConflicts::test_stale"
    assert [t.name for t in tests if t.e2e] == ["test_e2e_flow"]


def test_junit_outcomes_per_test_with_parameters() -> None:
    xml = b"""<testsuites><testsuite>
      <testcase classname="tests.test_x" name="test_a[1]"/>
      <testcase classname="tests.test_x" name="test_a[2]"><failure message="x"/></testcase>
      <testcase classname="tests.test_x.TestC" name="test_b"/>
      <testcase classname="tests.test_x" name="test_c"><skipped/></testcase>
    </testsuite></testsuites>"""
    assert junit_outcomes(xml, "python") == {"tests.test_x::test_a": "failed",
                                             "tests.test_x.TestC::test_b": "passed",
                                             "tests.test_x::test_c": "skipped"}


def _copy_full(tmp_path: Path) -> Path:
    dest = tmp_path / "s"
    shutil.copytree(FULL_MARKS, dest, ignore=shutil.ignore_patterns("__pycache__"))
    return dest


def test_boundary_flags_a_mixed_module_and_a_misplaced_store(tmp_path: Path) -> None:
    root = _copy_full(tmp_path)
    (root / "runtime" / "tool_events.py").write_text("X = 1\n", encoding="utf-8")
    (root / "runtime" / "agents.py").write_text(
        (root / "runtime" / "agents.py").read_text(encoding="utf-8")
        + "\n\nclass FileEventStore:\n    pass\n\n\nimport subprocess\n", encoding="utf-8")
    result = boundary_check(root, "python")
    assert not result.passed
    text = "\n".join(result.details)
    assert "runtime/tool_events.py: one module named for event and tool" in text
    assert "defines FileEventStore (event responsibility) outside the event module" in text
    assert "imports subprocess (starts a process)" in text


def test_boundary_needs_every_responsibility(tmp_path: Path) -> None:
    root = _copy_full(tmp_path)
    (root / "runtime" / "hooks.py").rename(root / "runtime" / "gates.py")
    result = boundary_check(root, "python")
    assert result.reason == "no hook module under runtime/: add runtime/hooks.py for the hook responsibility"


def test_contracts_need_the_spec_schemas_and_valid_ones(tmp_path: Path) -> None:
    root = _copy_full(tmp_path)
    (root / "schemas" / "write_claim_v1.json").unlink()
    (root / "schemas" / "plan_v1.json").write_text('{"$id": "plan_v1", "type": "objekt"}', encoding="utf-8")
    (root / "agents" / "reviewer.md").write_text("  \n", encoding="utf-8")
    text = "\n".join(contracts_check(root).details)
    assert "schemas/plan_v1.json: not a valid draft 2020-12 schema" in text
    assert "no schema with $id 'write_claim_v1'" in text
    assert "agents/reviewer.md: empty" in text


def test_contracts_check_logged_role_outputs(tmp_path: Path) -> None:
    root = _copy_full(tmp_path)
    lines = (root / LOG).read_text(encoding="utf-8").splitlines()
    for i, line in enumerate(lines):
        ev = json.loads(line)
        if ev["type"] == "plan.created":
            del ev["payload"]["steps"]
            lines[i] = json.dumps(ev)
            n = i + 1
    (root / LOG).write_text("\n".join(lines) + "\n", encoding="utf-8")
    result = contracts_check(root)
    assert not result.passed
    assert result.reason.startswith(f"{LOG}:{n}: plan.created payload fails plan_v1")


def _box(tmp_path: Path) -> sandbox.Box:
    sub = tmp_path / "sub"
    sub.mkdir()
    return sandbox.make_box(sub, tmp_path / "box")


def test_sandbox_denies_and_names_reads_and_writes_outside(tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    script = (
        "import pathlib\n"
        "for target in ('/etc/passwd', '/etc/hostname'):\n"
        "    try:\n        open(target).read(); print('READ', target)\n"
        "    except PermissionError:\n        print('DENIED', target)\n"
        f"try:\n    open({str(outside)!r}, 'w').write('x')\n"
        "except PermissionError:\n    print('DENIED write')\n"
        "pathlib.Path('inside.txt').write_text('ok'); print('WROTE inside')\n")
    box = _box(tmp_path)
    run = sandbox.run([sys.executable, "-c", script], box, tmp_path / "out", timeout=30)
    assert run.returncode == 0, run.stderr
    assert run.stdout.split("\n")[:4] == ["DENIED /etc/passwd", "DENIED /etc/hostname", "DENIED write",
                                          "WROTE inside"]
    assert not outside.exists() and (box.sub / "inside.txt").read_text() == "ok"
    assert sandbox.Attempt("read", "/etc/passwd") in run.attempts
    assert sandbox.Attempt("write", str(outside)) in run.attempts
    assert "tried to read /etc/passwd" in run.problem(30)
    assert {x.name for x in run.layers if x.ok} >= {"namespaces", "landlock", "limits"}


def test_sandbox_denies_a_unix_socket_outside(tmp_path: Path) -> None:
    """Landlock does not cover connect() to a socket file by path; the seccomp filter does."""
    import socket

    server = socket.socket(socket.AF_UNIX)
    server.bind(str(tmp_path / "db.sock"))
    server.listen()
    sock = str(tmp_path / "db.sock")
    script = ("import socket\ntry:\n"
              f"    socket.socket(socket.AF_UNIX).connect({sock!r}); print('CONNECTED')\n"
              "except PermissionError:\n    print('DENIED')\n")
    run = sandbox.run([sys.executable, "-c", script], _box(tmp_path), tmp_path / "out", timeout=30)
    assert run.stdout.strip() == "DENIED", run.stderr
    assert sandbox.Attempt("connect", str(tmp_path / "db.sock")) in run.attempts
    assert "seccomp" in {x.name for x in run.layers if x.ok}
    server.setblocking(False)
    with pytest.raises(BlockingIOError):
        server.accept()


def test_sandbox_timeout_kills_detached_children(tmp_path: Path) -> None:
    marker = f"agentos-grade-test-{os.getpid()}"
    script = ("import subprocess, time\n"
              f"subprocess.Popen(['sleep', '300'], start_new_session=True, env={{'M': {marker!r}}})\n"
              "time.sleep(300)\n")
    run = sandbox.run([sys.executable, "-c", script], _box(tmp_path), tmp_path / "out", timeout=1)
    assert run.timed_out and run.returncode is None
    assert "did not finish within 1 s" in run.problem(1)

    def survivors() -> list[str]:
        found = []
        for proc in Path("/proc").iterdir():
            with contextlib.suppress(OSError):
                if proc.name.isdigit() and marker.encode() in (proc / "environ").read_bytes():
                    found.append(proc.name)
        return found

    # The kernel tears the pid namespace down right after its init dies: allow it a moment.
    deadline = time.monotonic() + 5
    while survivors() and time.monotonic() < deadline:
        time.sleep(0.05)
    left = survivors()
    for pid in left:  # ours (the marker says so): never leave them running
        with contextlib.suppress(OSError):
            os.kill(int(pid), 9)
    assert left == []


def test_a_layer_line_written_by_student_code_is_not_believed(tmp_path: Path) -> None:
    forge = ("import os, json\n"
             "os.write(int(os.environ['AGENTOS_SANDBOX_REPORT_FD']), "
             "(json.dumps({'layer': {'name': 'forged', 'ok': True, 'what': 'x'}}) + '\\n').encode())\n")
    run = sandbox.run([sys.executable, "-c", forge], _box(tmp_path), tmp_path / "out", timeout=30)
    assert run.returncode == 0 and "forged" not in {x.name for x in run.layers}


def test_missing_protections_are_reported_and_grading_still_works(monkeypatch: pytest.MonkeyPatch,
                                                                  tmp_path: Path) -> None:
    monkeypatch.setattr(sandbox, "probe", lambda: sandbox.Protections((), 0))
    grade = grade_mod.grade_submission(_copy_full(tmp_path), timeout=30)
    assert grade.result("safety").passed and grade.result("determinism").passed
    missing = "\n".join(grade.unprotected)
    assert "namespaces" in missing and "Landlock is not available" in missing


@pytest.mark.parametrize(("lang", "tool"), [("go", "Go toolchain (go)"), ("typescript", "Node.js (node)")])
def test_a_missing_toolchain_fails_saying_so(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                             lang: str, tool: str) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # neither go nor node on it
    run = testrun.run_suite(_copy_full(tmp_path), tmp_path / "work", "run1", lang, timeout=5, seed=1)
    assert run.problem is not None and f"{tool} is not installed on the grading machine" in run.problem


def _cli(*argv: object) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli_main([str(a) for a in argv])
    return code, out.getvalue(), err.getvalue()


def test_cli_bad_input_exits_2(tmp_path: Path) -> None:
    code, _, err = _cli("grade", tmp_path)
    assert code == 2 and "no submission folders" in err
    code, _, err = _cli("grade", FULL_MARKS)
    assert code == 2 and "looks like one submission (it has runtime/)" in err
    (tmp_path / "s1").mkdir()
    code, _, err = _cli("grade", tmp_path, "--jobs", "0")
    assert code == 2 and "--jobs must be 1 or more" in err


def test_cli_names_the_install_when_pytest_is_missing(monkeypatch: pytest.MonkeyPatch,
                                                      tmp_path: Path) -> None:
    real = grade_mod.importlib.util.find_spec
    monkeypatch.setattr(grade_mod.importlib.util, "find_spec",
                        lambda n, *a: None if n == "pytest" else real(n, *a))
    shutil.copytree(FULL_MARKS / "runtime", tmp_path / "20230001" / "runtime")
    code, _, err = _cli("grade", tmp_path)
    assert code == 2 and "pip install 'agentos-kernel[labs]'" in err


def test_an_empty_folder_is_graded_zero_not_skipped(tmp_path: Path) -> None:
    (tmp_path / "20230001").mkdir()
    code, out, _ = _cli("grade", tmp_path, "--json")
    assert code == 0
    grade = json.loads(out)["grades"][0]
    assert grade["student"] == "20230001" and grade["total"] == 0
    reasons = {r["criterion"]: r["reason"] for r in grade["results"]}
    assert reasons["runtime_boundary"].startswith("runtime/: no source files")
    assert reasons["safety"].startswith("test run: no runtime/ sources")


@pytest.mark.skipif(shutil.which("node") is None, reason="Node.js is not installed here")
def test_a_typescript_suite_runs_under_node_in_the_sandbox(tmp_path: Path) -> None:
    sub = tmp_path / "ts"
    (sub / "runtime").mkdir(parents=True)
    (sub / "tests").mkdir()
    (sub / "runtime" / "mcp.ts").write_text("export const tools = {};\n", encoding="utf-8")
    (sub / "tests" / "fail_closed.test.js").write_text(
        'const test = require("node:test");\nconst assert = require("node:assert");\n'
        'function code(n) { return "OK"; }\n'
        'test("unknown tool", () => { assert.strictEqual(code("nope"), "TOOL_NOT_FOUND"); });\n'
        'test("hook deny", () => { assert.strictEqual("deny", "deny"); });\n', encoding="utf-8")
    tests, _ = find_tests(sub, "typescript")
    assert [t.cases for t in tests] == [("unknown tool",), ("hook deny, timeout or exception",)]
    run = testrun.run_suite(sub, tmp_path / "work", "run1", "typescript", timeout=30, seed=1)
    assert run.problem is None and run.outcomes == {"unknown tool": "failed", "hook deny": "passed"}


def test_safety_counts_only_fail_closed_tests_that_passed(tmp_path: Path) -> None:
    root = _suite(tmp_path, ("def test_unknown_tool():\n    assert code() == 'TOOL_NOT_FOUND'\n"
                             "def test_stale_hash():\n    assert code() == 'WRITE_CONFLICT'\n"))
    tests, _ = find_tests(root, "python")
    ran = testrun.SuiteRun(None, outcomes={"tests.test_x::test_unknown_tool": "passed",
                                           "tests.test_x::test_stale_hash": "failed"})
    result = rubric.safety(tests, ran)
    assert not result.passed
    assert result.reason.startswith("1 fail-closed case(s) tested and passing (unknown tool); need 2")
    assert "tests/test_x.py:3 test_stale_hash failed" in result.reason
    both = testrun.SuiteRun(None, outcomes=dict.fromkeys(ran.outcomes, "passed"))
    assert rubric.safety(tests, both).passed

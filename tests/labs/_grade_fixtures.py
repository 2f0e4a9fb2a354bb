"""The Lab 07 fixture set: the full-marks submission and one mutation of it per case.

Only the full-marks submission is stored — the capstone's reference solution, `FULL_MARKS` —
and each other case is a copy with one change, made here, so a fix to it reaches every case.
EXPECTED is the per-criterion table the grader must produce for the set (1 = pass), in the
rubric's order.
"""

from __future__ import annotations

import json
import shutil
import textwrap
from collections.abc import Callable
from pathlib import Path

FULL_MARKS = Path(__file__).resolve().parents[2] / "notebooks" / "labs" / "capstone-lab-07" / "solution"
"""The reference solution of the Lab 07 capstone (notebooks/labs/capstone-lab-07/solution/)."""
LOG = "sessions/example/.events.jsonl"

#                      boundary contract observ safety determ docs
EXPECTED: dict[str, tuple[int, ...]] = {
    "crashes":             (1, 1, 1, 0, 0, 1),
    "direct_io":           (0, 1, 1, 1, 1, 1),
    "full_marks":          (1, 1, 1, 1, 1, 1),
    "hangs":               (1, 1, 1, 0, 0, 1),
    "invalid_skill":       (1, 0, 1, 1, 1, 1),
    "missing_tool_result": (1, 1, 0, 1, 1, 1),
    "network":             (1, 1, 1, 0, 0, 1),
    "no_readme_sections":  (1, 1, 1, 1, 1, 0),
    "nondeterministic":    (1, 1, 1, 1, 0, 1),
    "reads_outside":       (1, 1, 1, 0, 0, 1),
    "tampered_snapshot":   (1, 1, 0, 1, 1, 1),
}


def _test(sub: Path, name: str, body: str) -> None:
    (sub / "tests" / name).write_text(textwrap.dedent(body).lstrip(), encoding="utf-8")


def drop_tool_result(sub: Path) -> None:
    log = sub / LOG
    lines = log.read_text(encoding="utf-8").splitlines(keepends=True)
    log.write_text("".join(ln for ln in lines if json.loads(ln)["type"] != "tool.result"), encoding="utf-8")


def tamper_snapshot(sub: Path) -> None:
    path = sub / "replay_snapshot.json"
    snap = json.loads(path.read_text(encoding="utf-8"))
    snap["output"] = "Hello, Bob!"
    path.write_text(json.dumps(snap, indent=2), encoding="utf-8")


def break_skill(sub: Path) -> None:
    (sub / "skills" / "farewell").mkdir()
    (sub / "skills" / "farewell" / "SKILL.md").write_text(
        "---\nname: farewell\nversion: one\n---\n\n# Farewell\n", encoding="utf-8")


def hang(sub: Path) -> None:
    _test(sub, "test_hang.py", """
        import time


        def test_waits_forever():
            while True:
                time.sleep(0.1)
        """)


def read_outside(sub: Path) -> None:
    sibling = sub.parent / "full_marks" / "README.md"
    _test(sub, "test_peek.py", f"""
        def test_reads_a_classmates_readme():
            assert open({str(sibling)!r}).read()


        def test_reads_the_password_file():
            assert "root" in open("/etc/passwd").read()
        """)


def no_readme_sections(sub: Path) -> None:
    (sub / "README.md").write_text("# Lab 07\n\nMy runtime for lab 7.\n", encoding="utf-8")


def crash(sub: Path) -> None:
    _test(sub, "test_crash.py", """
        import ctypes


        def test_segfaults():
            ctypes.string_at(0)
        """)


def network(sub: Path) -> None:
    # Loopback only: nothing may leave this machine even if every sandbox layer were missing.
    _test(sub, "test_phone_home.py", """
        import socket


        def test_phones_home():
            socket.create_connection(("127.0.0.1", 9), timeout=2).close()
        """)


def direct_io(sub: Path) -> None:
    agents = sub / "runtime" / "agents.py"
    agents.write_text(agents.read_text(encoding="utf-8") + textwrap.dedent("""

        def save_transcript(text: str) -> None:
            Path("transcript.txt").write_text(text, encoding="utf-8")
        """), encoding="utf-8")


def nondeterministic(sub: Path) -> None:
    provider = sub / "runtime" / "provider.py"
    text = provider.read_text(encoding="utf-8")
    text = text.replace("import json\n", "import json\nimport random\n", 1)
    text = text.replace('"output_tokens": len(text) // 4 + 1}', '"output_tokens": random.randint(1, 10**9)}')
    provider.write_text(text, encoding="utf-8")


MUTATIONS: dict[str, Callable[[Path], None] | None] = {
    "full_marks": None, "missing_tool_result": drop_tool_result, "tampered_snapshot": tamper_snapshot,
    "invalid_skill": break_skill, "hangs": hang, "reads_outside": read_outside,
    "no_readme_sections": no_readme_sections, "crashes": crash, "network": network, "direct_io": direct_io,
    "nondeterministic": nondeterministic,
}


def build_submissions(dest: Path, cases: tuple[str, ...] | None = None) -> Path:
    """`dest/lab-07/<case>/` for each case (default: all); returns `dest/lab-07`."""
    root = dest / "lab-07"
    root.mkdir(parents=True)
    for case in cases or tuple(MUTATIONS):
        sub = root / case
        shutil.copytree(FULL_MARKS, sub, ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache"))
        mutate = MUTATIONS[case]
        if mutate is not None:
            mutate(sub)
    return root

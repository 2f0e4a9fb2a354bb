"""A student's test suite, read statically: which tests exist, which exercise a fail-closed
case of the spec's table, which are end-to-end; and the runner's per-test outcomes.

A test *exercises a fail-closed case* when its body names that case's marker (below) as a
string or a name (`"TOOL_NOT_FOUND"`, `ErrorCode.WRITE_CONFLICT`, `decision == "deny"`) and
asserts something (an `assert`, or `pytest.raises`). The markers are the codes and outcomes
of the spec's "Fail-closed Cases" table.
"""

from __future__ import annotations

import ast
import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

import orjson

from .submission import SubmissionFileError, files, read_text

# The spec's "Fail-closed Cases" rows and what names each in a test.
FAIL_CLOSED_CASES: dict[str, tuple[str, ...]] = {
    "unknown tool": ("TOOL_NOT_FOUND",),
    "tool outside the selected skill": ("TOOL_NOT_ALLOWED",),
    "invalid role JSON": ("MALFORMED_AGENT_MESSAGE",),
    "missing schema id / invalid payload": ("SCHEMA_NOT_FOUND", "SCHEMA_INVALID", "InvariantViolation",
                                            "schema.violation"),
    "hook deny, timeout or exception": ("deny", "GATE_DENIED", "HOOK_TIMEOUT", "HOOK_ERROR",
                                        "PROMPT_DENIED"),
    "stale file hash": ("WRITE_CONFLICT",),
    "provider retry exhausted": ("PROVIDER_ERROR",),
    "reviewer verdict fail": ("REWORK", "ESCALATED", "human.escalation"),
}
_MARKER_CASE = {m: case for case, markers in FAIL_CLOSED_CASES.items() for m in markers}
_CODE = re.compile(r"[A-Za-z_.]+")
_E2E = re.compile(r"e2e|end_?to_?end|end2end", re.IGNORECASE)
TEST_SUFFIXES = {"python": (".py",), "go": ("_test.go",), "typescript": (".test.ts", ".test.js",
                                                                          ".test.mjs", ".spec.ts")}


@dataclass(frozen=True)
class TestCase:
    """One test function of the student's suite."""

    file: str
    """Path relative to the submission."""
    line: int
    """Line of its definition."""
    name: str
    """Its name as written."""
    key: str
    """The id the runner reports it under (matches `outcomes()` keys)."""
    cases: tuple[str, ...]
    """Fail-closed cases (FAIL_CLOSED_CASES keys) it exercises; empty for other tests."""
    e2e: bool
    """Its name or file says end-to-end (e2e, end_to_end, end2end)."""

    @property
    def where(self) -> str:
        """file:line name."""
        return f"{self.file}:{self.line} {self.name}"


def find_tests(root: Path, lang: str) -> tuple[list[TestCase], list[str]]:
    """Every test under tests/ (and, for Go, beside the code), and the files that could not be
    parsed (each 'file:line: why')."""
    found: list[TestCase] = []
    problems: list[str] = []
    under = "." if lang == "go" else "tests"
    for rel in files(root, under, TEST_SUFFIXES.get(lang, (".py",))):
        if lang == "python" and not Path(rel).name.startswith("test_") and not rel.endswith("_test.py"):
            continue
        try:
            text = read_text(root, rel)
        except SubmissionFileError as exc:
            problems.append(str(exc))
            continue
        if lang == "python":
            try:
                found += _python_tests(rel, text)
            except SyntaxError as exc:
                problems.append(f"{rel}:{exc.lineno}: not valid Python ({exc.msg})")
        else:
            found += _text_tests(rel, text, lang)
    return found, problems


def _python_tests(rel: str, text: str) -> list[TestCase]:
    tree = ast.parse(text, filename=rel)
    module = rel.removesuffix(".py").replace("/", ".")
    out = []

    def add(node: ast.FunctionDef | ast.AsyncFunctionDef, cls: str | None) -> None:
        if not node.name.startswith("test"):
            return
        key = f"{module}.{cls}::{node.name}" if cls else f"{module}::{node.name}"
        out.append(TestCase(rel, node.lineno, node.name, key, _cases_in(node),
                            bool(_E2E.search(node.name) or _E2E.search(rel))))

    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            add(node, None)
        elif isinstance(node, ast.ClassDef) and node.name.startswith("Test"):
            for item in node.body:
                if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef):
                    add(item, node.name)
    return out


def _cases_in(node: ast.AST) -> tuple[str, ...]:
    asserts = False
    cases: set[str] = set()
    for sub in ast.walk(node):
        if isinstance(sub, ast.Assert) or (isinstance(sub, ast.Attribute) and sub.attr == "raises"):
            asserts = True
        if isinstance(sub, ast.Constant) and isinstance(sub.value, str):
            words = {sub.value, *_CODE.findall(sub.value)}
        elif isinstance(sub, ast.Name):
            words = {sub.id}
        elif isinstance(sub, ast.Attribute):
            words = {sub.attr}
        else:
            continue
        cases.update(_MARKER_CASE[w] for w in words if w in _MARKER_CASE)
    return tuple(sorted(cases)) if asserts else ()


_GO_TEST = re.compile(r"^func (Test\w*)\(\w+ \*testing\.T\)", re.MULTILINE)
_JS_TEST = re.compile(r"^\s*(?:test|it)\(\s*(['\"`])(.+?)\1", re.MULTILINE)


def _text_tests(rel: str, text: str, lang: str) -> list[TestCase]:
    """Go and TypeScript: a test's body is the text up to the next test (a heuristic)."""
    pattern, group = (_GO_TEST, 1) if lang == "go" else (_JS_TEST, 2)
    starts = list(pattern.finditer(text))
    out = []
    for i, m in enumerate(starts):
        body = text[m.start(): starts[i + 1].start() if i + 1 < len(starts) else len(text)]
        words = set(_CODE.findall(body)) | set(re.findall(r"['\"`]([^'\"`]+)['\"`]", body))
        asserts = bool(re.search(r"\bt\.(Error|Fatal|Fail)|\bassert\b|\bexpect\(", body))
        cases = tuple(sorted({_MARKER_CASE[w] for w in words if w in _MARKER_CASE})) if asserts else ()
        name = m.group(group)
        out.append(TestCase(rel, text.count("\n", 0, m.start()) + 1, name, name, cases,
                            bool(_E2E.search(name) or _E2E.search(rel))))
    return out


def junit_outcomes(data: bytes, lang: str) -> dict[str, str]:
    """Test key -> passed / failed / skipped from a junit XML report (pytest's or node's);
    a parametrized test passes only when every parameter does."""
    root = ET.fromstring(data)
    out: dict[str, str] = {}
    for case in root.iter("testcase"):
        name = (case.get("name") or "").split("[", 1)[0]
        if lang == "python":
            parts = (case.get("classname") or "").split(".")
            # classname is module[.Class]; a Class starts upper-case by pytest's convention
            cls = parts.pop() if len(parts) > 1 and parts[-1][:1].isupper() else None
            module = ".".join(parts)
            key = f"{module}.{cls}::{name}" if cls else f"{module}::{name}"
        else:
            key = name
        outcome = "passed"
        if case.find("failure") is not None or case.find("error") is not None:
            outcome = "failed"
        elif case.find("skipped") is not None:
            outcome = "skipped"
        if _RANK[outcome] > _RANK.get(out.get(key, "passed"), 0) or key not in out:
            out[key] = outcome
    return out


_RANK = {"passed": 0, "skipped": 1, "failed": 2}


def go_outcomes(data: bytes) -> dict[str, str]:
    """Test name -> passed / failed / skipped from `go test -json` output."""
    out: dict[str, str] = {}
    for line in data.splitlines():
        try:
            ev = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue
        test, action = ev.get("Test"), ev.get("Action")
        if isinstance(test, str) and "/" not in test and action in ("pass", "fail", "skip"):
            out[test] = {"pass": "passed", "fail": "failed", "skip": "skipped"}[action]
    return out

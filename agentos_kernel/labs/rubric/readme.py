"""Documentation: README.md has each section the spec's Lab Rubric lists.

The README is split into sections at its Markdown headings; fenced code blocks are kept
with their section. Each requirement, and how it is detected:

- run commands: a section whose heading says run / usage / quick start / getting started /
  실행, with a command (a fenced block or a `$ ` / indented line);
- the mock-provider e2e test: a section that mentions a mock (or fake / scripted) provider
  and end-to-end (e2e), and gives a test command (pytest, go test, node --test, npm test);
- an event trace example: a fenced block with at least 10 lines that each name an event
  type (session.start, llm.request, tool.invoke ...);
- reproducing a schema violation or hook deny: a section whose heading or text names a schema
  violation (SCHEMA_INVALID) or a hook deny (GATE_DENIED, deny) with a command to run;
- known limitations: a section whose heading says limitation(s) / 한계 / 제약, not empty.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from .model import CriterionResult, fail
from .submission import SubmissionFileError, read_text

KEY = "documentation"
README = "README.md"
MIN_TRACE_LINES = 10
EVENT_TYPE = re.compile(r"\b(session|hook|skill|agent|llm|tool|worker|lead|plan|review|schema|domain|human|"
                        r"event|workflow|role)\.[a-z_]+\b")
COMMAND = re.compile(r"```|^\s*\$ |^ {4,}\S", re.MULTILINE)
TEST_COMMAND = re.compile(r"\bpytest\b|\bgo test\b|node --test|npm (run )?test|\bnpx\b")
RUN_HEADING = re.compile(r"\brun\b|running|usage|quick ?start|getting started|실행", re.IGNORECASE)
MOCK = re.compile(r"\b(mock|fake|scripted)", re.IGNORECASE)
E2E = re.compile(r"e2e|end[- ]to[- ]end|end2end", re.IGNORECASE)
REPRO = re.compile(r"schema[ ._-]?violation|SCHEMA_INVALID|hook[ -]deny|GATE_DENIED|\bdeny\b|denied",
                   re.IGNORECASE)
LIMITS_HEADING = re.compile(r"limitation|한계|제약", re.IGNORECASE)


@dataclass(frozen=True)
class Section:
    """One heading and the text below it (up to the next heading of any level)."""

    heading: str
    """The heading text ('' for text before the first heading)."""
    line: int
    """1-based line of the heading."""
    body: str
    """The section's text, code blocks included."""


def sections(text: str) -> list[Section]:
    """Split Markdown at ATX headings, ignoring '#' lines inside fenced code."""
    out: list[Section] = []
    body: list[str] = []
    heading, start, fenced = "", 1, False
    for n, line in enumerate(text.splitlines(), 1):
        if line.lstrip().startswith("```"):
            fenced = not fenced
        m = None if fenced else re.match(r"^#{1,6}\s+(.*)", line)
        if m:
            out.append(Section(heading, start, "\n".join(body)))
            heading, start, body = m.group(1).strip(), n, []
        else:
            body.append(line)
    out.append(Section(heading, start, "\n".join(body)))
    return out


def code_blocks(text: str) -> list[str]:
    """Every fenced code block's content."""
    return re.findall(r"^\s*```[^\n]*\n(.*?)^\s*```", text, re.MULTILINE | re.DOTALL)


def check(root: Path) -> CriterionResult:
    """The documentation criterion for the submission at `root`."""
    try:
        text = read_text(root, README)
    except SubmissionFileError as exc:
        return fail(KEY, [f"{exc}: write a README.md with run commands, the mock-provider e2e test, an "
                          "event trace, how to reproduce a schema violation or hook deny, and known "
                          "limitations"])
    secs = [s for s in sections(text) if s.heading or s.body.strip()]
    found: dict[str, str] = {}
    for s in secs:
        where = f"{README}:{s.line} '{s.heading or '(top)'}'"
        whole = f"{s.heading}\n{s.body}"
        if RUN_HEADING.search(s.heading) and COMMAND.search(s.body):
            found.setdefault("run commands", where)
        if MOCK.search(whole) and E2E.search(whole) and TEST_COMMAND.search(s.body):
            found.setdefault("mock-provider e2e test", where)
        if REPRO.search(whole) and COMMAND.search(s.body):
            found.setdefault("schema violation or hook deny reproduction", where)
        if LIMITS_HEADING.search(s.heading) and s.body.strip():
            found.setdefault("known limitations", where)
    longest = max((sum(1 for ln in b.splitlines() if EVENT_TYPE.search(ln)) for b in code_blocks(text)),
                  default=0)
    if longest >= MIN_TRACE_LINES:
        found["event trace example"] = f"{README}: a code block with {longest} event lines"
    wanted = {
        "run commands": "add a '## Run' section with the command that runs the runtime",
        "mock-provider e2e test": "add a section on running the end-to-end (e2e) test with the mock "
                                  "provider, with its pytest / go test / node --test command",
        "event trace example": f"add a fenced code block of at least {MIN_TRACE_LINES} event lines (e.g. "
                               f"the first lines of sessions/example/.events.jsonl; found {longest})",
        "schema violation or hook deny reproduction": "add a section with the command that reproduces a "
                                                      "schema violation or a hook deny",
        "known limitations": "add a '## Known limitations' section with at least one line",
    }
    absent = [name for name in wanted if name not in found]
    problems = [f"{README}: no {name} section: {fix}" for name, fix in wanted.items() if name in absent]
    notes = [f"{name}: {where}" for name, where in found.items()]
    if problems:
        summary = f"{README}: missing {len(absent)} of {len(wanted)} sections: {', '.join(absent)}"
        return fail(KEY, [summary, *problems], notes)
    return CriterionResult(KEY, True, "README has run commands, the mock e2e test, a trace, a "
                           "reproduction and known limitations", tuple(notes))

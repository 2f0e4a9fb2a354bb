"""The scripted provider's answers for L8 personas (a persona call carries `workflow` and
`persona` in its user message). Deterministic: the same request gives the same answer.

A reviewing persona (persona_findings_v1) reports findings about the file named in the
prompt — one of its own, one every reviewer shares (same fingerprint, different
autofix_class, so the fan-in has something to merge), sometimes a low-confidence one and,
for a test reviewer, a pre-existing one. Artifact personas (brainstorm_v1, plan_v1,
solution_v1, learning_v1, pulse_report_v1) answer from the prompt and the context. When
the request grants a write, the persona first reads the artifact's file, then writes it
(frontmatter = its output as YAML, body = the template filled in), then returns the JSON.

Faults (faults.py), matched by persona id: `finding` adds a finding (args: its fields,
default a P0 safe_auto at confidence 100); `output` overrides fields of the output (e.g.
`{grade: 0}`); malformed_json / schema_violation / provider_error work as for roles.
"""

from __future__ import annotations

import json
import re
import zlib
from collections.abc import Callable
from typing import Any

import yaml

from ..tools.dispatch import ToolCall
from .base import ProviderFault

Take = Callable[[str], Any]
"""Consumes the next matching fault of a kind for this persona (None when there is none)."""

_PATH = re.compile(r"(?<![\w/.-])((?:[\w-]+/)*[\w-]+\.[A-Za-z0-9]{1,8})\b")
_SEVERITY_COST = {"P0": 25, "P1": 10, "P2": 3, "P3": 1}


def persona_of(data: Any) -> str | None:
    """The persona id when this is an L8 persona call, else None."""
    if isinstance(data, dict) and isinstance(data.get("workflow"), dict) \
            and isinstance(data.get("persona"), dict):
        return str(data["persona"].get("id", "persona"))
    return None


def persona_step(schema_id: str, data: dict[str, Any], tools: list[dict[str, Any]],
                 results: list[dict[str, Any]], take: Take) -> ToolCall | None:
    """The next tool call of a persona that was granted a write: read, then write."""
    write = data.get("write")
    if not isinstance(write, dict) or {"read_file", "write_file"} - {t["name"] for t in tools}:
        return None
    if not results:
        return ToolCall("t1", "read_file", {"path": write["path"]})
    if len(results) == 1 and "error" not in results[0]:
        out = answer(schema_id, data, take)
        content = "---\n" + yaml.safe_dump(out, sort_keys=False, allow_unicode=True) + "---\n\n" + \
            fill(str(write.get("template", "")), out)
        claim = {"who": str(data["persona"]["id"]), "why": f"write the {write['artifact']} artifact",
                 "expected_hash": results[0]["result"]["sha256"], "schema_version": "v1"}
        return ToolCall("t2", "write_file", {"path": write["path"], "content": content, "claim": claim})
    return None


def persona_output(schema_id: str, data: dict[str, Any], messages: tuple[dict[str, str], ...],
                   take: Take) -> dict[str, Any]:
    """The final JSON: what the persona wrote into its artifact, else a fresh answer."""
    for m in messages:
        if m["role"] != "assistant":
            continue
        for call in json.loads(m["content"]).get("tool_calls", []):
            if call["name"] == "write_file":
                head = call["args"]["content"].split("\n---\n", 1)[0].removeprefix("---\n")
                return yaml.safe_load(head)
    return answer(schema_id, data, take)


def fill(template: str, out: dict[str, Any]) -> str:
    """The template with each {field} replaced by the output's value (lists as bullets)."""
    def show(value: Any) -> str:
        if isinstance(value, list):
            return "\n".join(f"- {show(v)}" for v in value) or "- (none)"
        if isinstance(value, dict):
            return ", ".join(f"{k}: {show(v)}" for k, v in value.items())
        return str(value)

    return re.sub(r"\{(\w+)\}", lambda m: show(out[m[1]]) if m[1] in out else m[0], template)


def answer(schema_id: str, data: dict[str, Any], take: Take) -> dict[str, Any]:
    """A schema-valid output for the persona's schema, with `finding`/`output` faults applied."""
    build = _BUILDERS.get(schema_id)
    if build is None:
        raise ProviderFault(f"no scripted persona answer for schema {schema_id!r}", retryable=False)
    prompt = str(data.get("prompt", ""))
    found = _PATH.search(prompt)
    out = build(str(data["persona"]["id"]), prompt, found.group(1) if found else "the change",
                data["workflow"], data.get("context") or {}, take)
    override = take("output")
    if override is not None:
        out.update(override.args or {})
    return out


def _findings(pid: str, prompt: str, target: str, wf: dict[str, Any], ctx: dict[str, Any],
              take: Take) -> dict[str, Any]:
    h = zlib.crc32(pid.encode())
    focus = pid.removesuffix("-reviewer").replace("-", " ")

    def finding(n: str, severity: str, confidence: int, autofix: str, title: str, **extra: Any) -> dict:
        return {"id": f"f{n}", "reviewer": pid, "severity": severity, "confidence": confidence,
                "autofix_class": autofix, "title": title, "file": target, "schema_version": "v1", **extra}

    items = [
        finding("1", "P2", 75, "gated_auto", f"{focus}: {target} needs a closer look", line=10 + h % 40),
        finding("2", "P3", (100, 75, 75)[h % 3], ("safe_auto", "gated_auto", "manual")[h % 3],
                f"unchecked error path in {target}", fingerprint=f"shared-{_slug(target)}"),
    ]
    if h % 2:
        items.append(finding("3", "P3", 25, "advisory", f"{focus}: naming in {target} could be clearer"))
    if "test" in pid:
        items.append(finding("4", "P2", 100, "manual", f"no test covers {target}", pre_existing=True))
    injected = take("finding")
    if injected is not None:
        items.append({**finding("injected", "P0", 100, "safe_auto",
                                f"injected finding in {target} (fault injection)"), **(injected.args or {})})
    return {"reviewer": pid, "findings": items, "summary": f"{len(items)} finding(s) on {target}",
            "schema_version": "v1"}


def _brainstorm(pid: str, prompt: str, target: str, wf: dict, ctx: dict, take: Take) -> dict[str, Any]:
    return {"topic": prompt.strip() or "the request", "problem": f"as reported: {prompt.strip()}",
            "approaches": [
                {"name": "smallest fix", "summary": f"change only what breaks in {target}",
                 "tradeoffs": "fast; may leave the cause elsewhere"},
                {"name": "root-cause fix", "summary": f"find why {target} gets bad input and fix it there",
                 "tradeoffs": "slower; fixes every caller"}],
            "chosen": "smallest fix", "open_questions": [f"do other callers of {target} have the same bug?"],
            "schema_version": "v1"}


def _plan(pid: str, prompt: str, target: str, wf: dict, ctx: dict, take: Take) -> dict[str, Any]:
    chosen = (ctx.get("artifacts") or {}).get("brainstorm", {}).get("chosen", "fix")
    return {"steps": [
        {"id": "s1", "description": f"write a test that fails on the bug in {target}", "depends_on": []},
        {"id": "s2", "description": f"apply the {chosen} in {target}", "depends_on": ["s1"]},
        {"id": "s3", "description": "run the tests", "depends_on": ["s2"]}],
        "risks": [f"callers of {target} may rely on the buggy behaviour"], "needs_advisor": False,
        "schema_version": "v1"}


def _solution(pid: str, prompt: str, target: str, wf: dict, ctx: dict, take: Take) -> dict[str, Any]:
    findings = (ctx.get("review_aggregate") or {}).get("findings", [])
    fixed = [f["fingerprint"] for f in findings if f["route"] in ("safe_auto", "gated_auto")]
    deferred = [f["fingerprint"] for f in findings if f["fingerprint"] not in fixed]
    changes = [{"file": target, "description": f"fix: {prompt.strip() or 'the request'}"}]
    changes += [{"file": f.get("file") or target, "description": f"fix {f['title']}",
                 "fingerprint": f["fingerprint"]} for f in findings if f["fingerprint"] in fixed]
    return {"summary": f"{len(changes)} change(s) to {target}; {len(fixed)} finding(s) fixed, "
                       f"{len(deferred)} deferred", "changes": changes, "fixed": fixed,
            "deferred": deferred, "schema_version": "v1"}


def _learning(pid: str, prompt: str, target: str, wf: dict, ctx: dict, take: Take) -> dict[str, Any]:
    solution = (ctx.get("artifacts") or {}).get("solution", {})
    return {"title": f"lessons from: {prompt.strip() or 'the request'}", "problem": prompt.strip() or "-",
            "root_cause": f"{target} trusted its input", "solution": solution.get("summary", "fixed"),
            "prevention": f"a regression test for {target}", "tags": ["bugfix", _slug(target)],
            "schema_version": "v1"}


def _pulse(pid: str, prompt: str, target: str, wf: dict, ctx: dict, take: Take) -> dict[str, Any]:
    generation = int(wf.get("generation") or 1)
    agg = ctx.get("review_aggregate") or {}
    counts = {s: 0 for s in _SEVERITY_COST}
    for f in agg.get("findings", []):
        counts[f["severity"]] += 1
    if agg:  # a review to report on: grade it by what is left to fix
        grade = max(0, 100 - sum(_SEVERITY_COST[s] * n for s, n in counts.items()))
        summary = f"{sum(counts.values())} actionable finding(s) on {target}, verdict {agg.get('verdict')}"
    else:  # a loop generation: progress grows with each generation
        grade = min(100, 40 + 30 * (generation - 1))
        summary = f"generation {generation} of work on: {prompt.strip() or 'the request'}"
    return {"title": prompt.strip() or "pulse", "summary": summary, "grade": grade,
            "generation": generation, "counts": counts,
            "next_steps": [] if grade >= 90 else [f"keep working on {target}"], "schema_version": "v1"}


def _slug(text: str) -> str:
    return "-".join(re.findall(r"[a-z0-9]+", text.lower())) or "x"


_BUILDERS: dict[str, Callable[..., dict[str, Any]]] = {
    "persona_findings_v1": _findings, "brainstorm_v1": _brainstorm, "plan_v1": _plan,
    "solution_v1": _solution, "learning_v1": _learning, "pulse_report_v1": _pulse,
}

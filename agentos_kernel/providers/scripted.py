"""The scripted provider: a deterministic fake model that answers every role with a
schema-valid JSON output for any prompt, calls the tools a skill allows, reports token
usage and cost from the profile's price table, and misbehaves on demand (faults.py).

It reads its role from the line the runtime appends to each system prompt
("Respond with JSON matching the schema `plan_v1`.") and its input from the user
message (JSON). Nothing random, no clock: the same request gives the same answer.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from ..errors import Ok, Result
from ..schemas import jsontext
from ..tools.dispatch import ToolCall
from .base import CompletionRequest, CompletionResponse, ProviderFault, Usage, complete_with_retries
from .faults import Fault, FaultPlan
from .scripted_personas import persona_of, persona_output, persona_step

SCHEMA_LINE = re.compile(r"matching the schema `([A-Za-z0-9_]+)`")
ROLE_OF_SCHEMA = {
    "lead_directive_v1": "lead", "plan_v1": "planner", "worker_report_v1": "worker",
    "review_result_v1": "reviewer", "advisor_opinion_v1": "advisor",
    "scaffold_plan_v1": "scaffolder",
}
DEFAULT_PRICES = {"input_per_mtok": 3.0, "output_per_mtok": 15.0}
_NOT_NAMES = {"Hello", "Hi", "Greet", "Please", "Hey", "Say", "The", "A", "Read", "Show"}
_PATH = re.compile(r"(?<![\w/.-])((?:[\w-]+/)*[\w-]+\.[A-Za-z0-9]{1,8})\b")
_CLAUSES = re.compile(r"[.;\n]").split
_CONSTRAINT = re.compile(r"\b(must|never|don't|do not|only)\b", re.I).search
_ASKS_ADVICE = re.compile(r"\b(advise|advice|should we)\b", re.I).search
_QUOTED = re.compile(r"[\"“']([^\"”']+)[\"”']")


def tokens(text: str) -> int:
    """A deterministic token estimate: one token per four characters, at least one."""
    return max(1, math.ceil(len(text) / 4))


def greeting_for(prompt: str) -> str:
    """The greet skill's rule: greet the name in the prompt, defaulting to "world"."""
    names = [w for w in re.findall(r"\b[A-Z][a-zA-Z-]*\b", prompt) if w not in _NOT_NAMES]
    return f"Hello, {names[0] if names else 'world'}!"


class ScriptedProvider:
    """Deterministic offline provider (`provider: scripted`)."""

    name = "scripted"

    def __init__(self, model: str = "scripted-1", prices: dict[str, float] | None = None,
                 faults: FaultPlan | None = None, max_retries: int = 2) -> None:
        self.model = model
        self.max_retries = max_retries
        self.prices = {**DEFAULT_PRICES, **(prices or {})}
        self._faults = list(faults.faults) if faults else []
        self._used = [0] * len(self._faults)

    # -- fault bookkeeping -------------------------------------------------------------
    def _fault(self, kind: str, role: str) -> Fault | None:
        if not self._faults:
            return None
        for i, f in enumerate(self._faults):
            if f.kind == kind and f.role in (None, role) and (f.times < 0 or self._used[i] < f.times):
                self._used[i] += 1
                return f
        return None

    # -- the Provider protocol ---------------------------------------------------------
    def complete(self, request: CompletionRequest) -> Result[CompletionResponse]:
        if not self._faults:
            # Nothing scripted to fail: an answer on the first attempt is the whole call
            # (attempts=1), without the retry loop's copy of it.
            try:
                return Ok(self._attempt(request))
            except (ProviderFault, TimeoutError):
                pass  # through the loop below from the start: no fault, so the same attempts
        # No sleep between retries: the fake model's faults are not time-dependent.
        return complete_with_retries(self._attempt, request, max_retries=self.max_retries)

    def _attempt(self, request: CompletionRequest) -> CompletionResponse:
        system = next((m["content"] for m in request.messages if m["role"] == "system"), "")
        found = SCHEMA_LINE.search(system)
        schema_id = found.group(1) if found else "lead_directive_v1"
        user = next((m["content"] for m in request.messages if m["role"] == "user"), "{}")
        try:
            data = jsontext.loads(user)
        except jsontext.JSONDecodeError:
            data = {"prompt": user}
        persona = persona_of(data)  # an L8 persona: faults match its id (scripted_personas.py)
        role = persona or ROLE_OF_SCHEMA.get(schema_id, "unknown")
        if self._fault("provider_error", role):
            raise ProviderFault(f"scripted provider error for {role} (fault injection)")
        if self._fault("timeout", role):
            raise TimeoutError(f"scripted timeout for {role}")
        tool_msgs = [jsontext.loads(m["content"]) for m in request.messages if m["role"] == "tool"]
        calls: tuple[ToolCall, ...] = ()
        call = None
        if persona is not None:
            call = persona_step(schema_id, data, list(request.tools or ()), tool_msgs,
                                lambda kind: self._fault(kind, role))
        elif role == "worker":
            call = self._next_tool_call(data, list(request.tools or ()), tool_msgs)
        if call is not None:
            calls = (call,)
        if calls:
            text = ""
        elif self._fault("malformed_json", role):
            text = f"Sure! Here is my {role} answer: it went well."
        else:
            out = (persona_output(schema_id, data, request.messages, lambda kind: self._fault(kind, role))
                   if persona is not None else self._answer(role, schema_id, data, tool_msgs))
            if self._fault("schema_violation", role):
                out.pop(next(iter(out)))
            text = jsontext.dumps(out, ensure_ascii=False)
        return self._response(request, text, calls)

    def _response(self, request: CompletionRequest, text: str,
                  calls: tuple[ToolCall, ...]) -> CompletionResponse:
        # tokens() of each message: one per four characters, at least one
        tin = sum([max(1, -(-len(m["content"]) // 4)) for m in request.messages])
        tout = tokens(text + "".join(jsontext.dumps(c.args) + c.name for c in calls))
        cost = (tin * self.prices["input_per_mtok"] + tout * self.prices["output_per_mtok"]) / 1e6
        return CompletionResponse(
            text=text, tool_calls=calls, finish_reason="tool_use" if calls else "stop",
            usage=Usage(tin, tout, round(cost, 8)), model=self.model)

    # -- the worker's tool use ---------------------------------------------------------
    def _next_tool_call(self, data: dict[str, Any], tools: list[dict[str, Any]],
                        results: list[dict[str, Any]]) -> ToolCall | None:
        n = len(results)
        if results and "error" in results[-1]:
            return None  # a step failed: stop and report partial progress (worker rules)
        forced = self._fault("tool_call", "worker") if n == 0 else None
        if forced is not None:
            return ToolCall(f"t{n + 1}", forced.tool or "no_such_tool", dict(forced.args or {}))
        if n >= len(tools):
            return None
        spec = tools[n]
        return ToolCall(f"t{n + 1}", spec["name"], self._fill(spec, data, results))

    def _fill(self, spec: dict[str, Any], data: dict[str, Any],
              results: list[dict[str, Any]]) -> dict[str, Any]:
        prompt = str(data.get("prompt", ""))
        writes = any(t == "write_file" for t in data.get("skill", {}).get("allowed_tools", []))
        found = _PATH.search(prompt)
        path = found.group(1) if found else ("notes/notes.md" if writes else "README.md")
        last_read = next((r["result"] for r in reversed(results)
                          if isinstance(r.get("result"), dict) and "sha256" in r["result"]), None)
        quoted = _QUOTED.search(prompt)
        note = quoted.group(1) if quoted else prompt
        known: dict[str, Any] = {
            "text": greeting_for(prompt), "message": prompt,
            "path": "." if spec["name"] == "list_dir" else path,
            "content": ((last_read or {}).get("content", "") + f"- {note}\n"),
            "who": "worker", "why": str(data.get("directive", {}).get("intent", prompt)),
            "expected_hash": (last_read or {}).get("sha256", ""),
        }
        if self._fault("stale_hash", "worker"):
            known["expected_hash"] = "0" * 64
        return _fill_schema(spec.get("input_schema", {}), known, "args")

    # -- role outputs ------------------------------------------------------------------
    def _answer(self, role: str, schema_id: str, data: dict[str, Any],
                results: list[dict[str, Any]]) -> dict[str, Any]:
        if role == "lead":
            prompt = str(data.get("prompt", ""))
            constraints = [s.strip() for s in _CLAUSES(prompt) if _CONSTRAINT(s)]
            return {"intent": f"Fulfil the request: {prompt.strip() or '(empty prompt)'}",
                    "constraints": constraints,
                    "needs_advisor": bool(_ASKS_ADVICE(prompt)),
                    "schema_version": "v1"}
        if role == "planner":
            tools = data.get("skill", {}).get("allowed_tools", [])
            steps: list[dict[str, Any]] = [
                {"id": f"s{i}", "description": f"Call {t} for the request",
                 "depends_on": [f"s{i - 1}"] if i > 1 else []}
                for i, t in enumerate(tools, 1)]
            steps.append({"id": f"s{len(steps) + 1}", "description": "Report the result",
                          "depends_on": [s["id"] for s in steps[-1:]]})
            risks = [] if tools else ["no skill matched: no tools are available"]
            return {"steps": steps, "risks": risks, "needs_advisor": False, "schema_version": "v1"}
        if role == "worker":
            steps = [s["id"] for s in data.get("plan", {}).get("steps", [])]
            failed = next((r for r in results if "error" in r), None)
            done_calls = [f"{r['name']}:{r['id']}" for r in results if "error" not in r]
            if failed is not None:
                return {"output": f"stopped: {failed['error'].get('message', 'tool failed')}",
                        "steps_completed": steps[:len(done_calls)],
                        "tool_calls_made": done_calls, "schema_version": "v1"}
            return {"output": _summarise(results, data), "steps_completed": steps,
                    "tool_calls_made": done_calls, "schema_version": "v1"}
        if role == "reviewer":
            plan_steps = [s["id"] for s in data.get("plan", {}).get("steps", [])]
            report = data.get("report", {})
            missing = [s for s in plan_steps if s not in report.get("steps_completed", [])]
            if self._fault("reviewer_fail", "reviewer"):
                return {"verdict": "fail", "feedback": "reviewer rejected the report (fault injection)",
                        "schema_version": "v1"}
            if missing or not str(report.get("output", "")).strip():
                why = f"steps not completed: {', '.join(missing)}" if missing else "output is empty"
                return {"verdict": "fail", "feedback": why, "schema_version": "v1"}
            return {"verdict": "pass", "feedback": "every plan step is completed and the output "
                    "addresses the intent", "schema_version": "v1"}
        if role == "advisor":
            return {"opinion": "The request is answerable as stated.", "recommendation": "proceed",
                    "concerns": [], "schema_version": "v1"}
        if role == "scaffolder":
            return {"files": [{"path": "src/__init__.py", "purpose": "package root"},
                              {"path": "tests/test_smoke.py", "purpose": "first test"}],
                    "tests": ["tests/test_smoke.py"], "schema_version": "v1"}
        raise ProviderFault(f"no scripted answer for schema {schema_id!r}", retryable=False)


def _summarise(results: list[dict[str, Any]], data: dict[str, Any]) -> str:
    if not results:
        return str(data.get("directive", {}).get("intent", "done"))
    last = results[-1].get("result")
    if isinstance(last, dict):
        if "text" in last:
            return str(last["text"])
        if "sha256" in last and "content" in last:
            return f"{last.get('path')}: {len(last['content'])} chars, sha256 {last['sha256']}"
        if "sha256" in last:
            return f"wrote {last.get('path')} (sha256 {last['sha256']})"
    return json.dumps(last, ensure_ascii=False, sort_keys=True)


def _fill_schema(schema: dict[str, Any], known: dict[str, Any], name: str) -> Any:
    """A value valid under a (resolved) JSON schema, preferring `known[name]`."""
    if "const" in schema:
        return schema["const"]
    if "enum" in schema:
        return schema["enum"][0]
    kind = schema.get("type")
    if kind == "object" or "properties" in schema:
        props = schema.get("properties", {})
        keys = [k for k in props if k in schema.get("required", []) or k in known]
        return {k: _fill_schema(props[k], known, k) for k in keys}
    if name in known and not isinstance(known[name], dict):
        return known[name]
    return {"string": "", "integer": 0, "number": 0, "boolean": False, "array": []}.get(str(kind))

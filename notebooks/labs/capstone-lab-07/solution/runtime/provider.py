"""L2: a provider-agnostic completion boundary and a deterministic mock provider."""

import json
import re
from dataclasses import dataclass


@dataclass
class RuntimeProfile:
    provider: str = "mock"
    model: str = "mock-1"


class MockProvider:
    """Answers each role from a fixed script: no network, no key, same answer every time.
    `faults` maps a role to the raw text it returns instead (to test fail-closed paths)."""

    def __init__(self, model: str = "mock-1", faults: dict | None = None, tool: str = "echo"):
        self.model = model
        self.faults = faults or {}
        self.tool = tool

    def complete(self, request: dict) -> dict:
        role = request["messages"][0]["content"].split("\n", 1)[0].removeprefix("# ").split()[0].lower()
        user = request["messages"][-1]["content"]
        text, calls = self.faults.get(role), []
        if text is None:
            text, calls = self._answer(role, user, request["messages"])
        return {"text": text, "tool_calls": calls, "finish_reason": "tool_use" if calls else "stop",
                "usage": {"input_tokens": sum(len(m["content"]) // 4 for m in request["messages"]),
                          "output_tokens": len(text) // 4 + 1},
                "model": self.model, "schema_version": "v1"}

    def _answer(self, role: str, user: str, messages: list) -> tuple[str, list]:
        if role == "lead":
            return json.dumps({"intent": f"Fulfil: {user}", "constraints": [], "needs_advisor": False,
                               "schema_version": "v1"}), []
        if role == "planner":
            return json.dumps({"steps": [{"id": "s1", "description": "build the greeting"},
                                         {"id": "s2", "description": "echo it", "depends_on": ["s1"]}],
                               "risks": [], "needs_advisor": False, "schema_version": "v1"}), []
        if role == "worker":
            tool_results = [m for m in messages if m["role"] == "tool"]
            if not tool_results:
                name = re.search(r"greet (\w+)", user)
                greeting = f"Hello, {name.group(1) if name else 'world'}!"
                return "", [{"id": "t1", "name": self.tool, "args": {"text": greeting}}]
            echoed = json.loads(tool_results[-1]["content"])["text"]
            return json.dumps({"output": echoed, "steps_completed": ["s1", "s2"],
                               "tool_calls_made": ["echo:t1"], "schema_version": "v1"}), []
        return json.dumps({"verdict": "pass", "feedback": "every step completed; output is non-empty",
                           "schema_version": "v1"}), []

"""L3: role prompts, call_role (JSON only, schema-checked) and the Plan-Work-Review loop.

The Runtime is the composition root: it wires the store, schemas, tools, hooks, skills and
provider, and is the one caller that appends events for them.
"""

import json
from pathlib import Path
from uuid import uuid4

from . import hooks as hk
from .event_store import EventStore
from .mcp import MCPRegistry, dispatch_tool, echo_tool
from .provider import MockProvider, RuntimeProfile
from .result import DomainError, Err, Ok
from .schema import SchemaRegistry
from .skills import SkillRegistry

ROLE_EVENTS = {"lead": "lead.directive", "planner": "plan.created", "worker": "worker.report",
               "reviewer": "review.result"}


class Runtime:
    def __init__(self, root: Path, sessions: Path, provider=None, profile: RuntimeProfile | None = None):
        self.profile = profile or RuntimeProfile()
        self.events = EventStore(sessions)
        self.schemas = SchemaRegistry(root / "schemas")
        self.mcp = MCPRegistry([echo_tool()])
        self.skills = SkillRegistry(root / "skills", self.schemas)
        self.prompts = {p.stem: p.read_text(encoding="utf-8") for p in sorted((root / "agents").glob("*.md"))}
        self.provider = provider or MockProvider(self.profile.model)
        self.hooks = hk.HookBus()
        for event, make in (("PreToolUse", hk.make_pre_tool_use_handler),
                            ("PreToolUse", hk.make_deny_dangerous_tools_handler),
                            ("Stop", hk.make_stop_handler),
                            ("UserPromptSubmit", hk.make_user_prompt_submit_handler)):
            self.hooks.register(event, make())
        self.session_id = None
        self.calls = 0

    def _record_hook(self, hook: str, handler: str, decision: hk.HookDecision, ms: float) -> None:
        payload = {"hook": hook, "handler": handler, "decision": decision.decision, "ms": round(ms, 3)}
        if decision.reason:
            payload["reason"] = decision.reason
        self.events.append(self.session_id, "hook.fired", f"hook:{handler}", payload)

    def _move(self, role: str, frm: str, to: str) -> None:
        self.events.append(self.session_id, "agent.transition", role, {"from": frm, "to": to})

    def _fail(self, error: DomainError, layer: str):
        self.events.append(self.session_id, "domain.error", "system",
                           {"code": error.code, "kind": error.kind, "message": error.message, "layer": layer})
        self.events.append(self.session_id, "session.close", "system", {"ok": False, "reason": error.code})
        return Err(error)

    def call_role(self, role: str, content, schema: str, tool_results: list | None = None):
        self.calls += 1
        call_id = f"c{self.calls}"
        messages = [{"role": "system", "content": self.prompts[role]},
                    {"role": "user", "content": content if isinstance(content, str) else json.dumps(content)}]
        messages += tool_results or []
        request = {"messages": messages, "model": self.profile.model, "schema_version": "v1"}
        if isinstance(checked := self.schemas.validate(request, "completion_request_v1"), Err):
            return checked
        self.events.append(self.session_id, "llm.request", role,
                           {**request, "role": role, "call_id": call_id})
        response = self.provider.complete(request)
        if isinstance(checked := self.schemas.validate(response, "completion_response_v1"), Err):
            return checked
        self.events.append(self.session_id, "llm.response", role,
                           {**response, "role": role, "call_id": call_id})
        if response["tool_calls"]:
            return Ok({"tool_calls": response["tool_calls"]})
        try:
            output = json.loads(response["text"])
        except json.JSONDecodeError:
            return Err(DomainError("schema", "MALFORMED_AGENT_MESSAGE", f"{role} did not answer JSON"))
        checked = self.schemas.validate(output, schema)
        if isinstance(checked, Ok):
            self.events.append(self.session_id, ROLE_EVENTS[role], role, output)
        return checked

    def _work(self, task: dict, allowed: set):
        answer = self.call_role("worker", task, "worker_report_v1")
        if isinstance(answer, Ok) and "tool_calls" in answer.value:
            results = []
            for call in answer.value["tool_calls"]:
                got = dispatch_tool(call, self.mcp, self.schemas, self.hooks, self.events,
                                    self.session_id, allowed)
                if isinstance(got, Err):
                    return got
                results.append({"role": "tool", "content": json.dumps(got.value)})
            answer = self.call_role("worker", task, "worker_report_v1", tool_results=results)
        return answer

    def handle_user_request(self, prompt: str, session_id: str | None = None):
        self.session_id = session_id or str(uuid4())
        self.hooks.record = self._record_hook
        self.events.append(self.session_id, "session.start", "user",
                           {"prompt": prompt, "profile": "mock", "provider": self.profile.provider,
                            "model": self.profile.model})
        intake = self.hooks.fire("UserPromptSubmit", {"prompt": prompt})
        if intake.decision == "deny":
            return self._fail(DomainError("gate", "PROMPT_DENIED", intake.reason or "denied"), "L6")
        prompt = (intake.output or {}).get("prompt", prompt) if intake.decision == "transform" else prompt
        skill = self.skills.select(prompt)
        allowed = set(skill.allowed_tools if skill else [])
        if skill:
            self.events.append(self.session_id, "skill.invoke", "system",
                               {"skill": skill.name, "allowed_tools": sorted(allowed)})
        steps = (("lead", "INTAKE", "LEAD", "lead_directive_v1"),
                 ("planner", "LEAD", "PLAN", "plan_v1"),
                 ("worker", "PLAN", "WORK", "worker_report_v1"),
                 ("reviewer", "WORK", "REVIEW", "review_result_v1"))
        values: dict = {}
        for role, frm, to, schema in steps:
            self._move(role, frm, to)
            if role == "lead":
                got = self.call_role(role, prompt, schema)
            elif role == "planner":
                got = self.call_role(role, values["lead"], schema)
            elif role == "worker":
                got = self._work({"directive": values["lead"], "plan": values["planner"]}, allowed)
            else:
                got = self.call_role(role, {"plan": values["planner"], "report": values["worker"]}, schema)
            if isinstance(got, Err):
                return self._fail(got.error, "L1" if got.error.kind == "gate" else "L3")
            values[role] = got.value
        ok = values["reviewer"]["verdict"] == "pass"
        self._move("system", "REVIEW", "DONE" if ok else "FAILED")
        self.hooks.fire("Stop", {"session_id": self.session_id, "ok": ok})
        if skill:
            self.events.append(self.session_id, "skill.complete", "system", {"skill": skill.name, "ok": ok})
        self.events.append(self.session_id, "session.close", "system",
                           {"ok": ok, "output": values["worker"]["output"]})
        return Ok({"session_id": self.session_id, "report": values["worker"], "review": values["reviewer"]})

"""L6: hooks are gates that return a decision; the caller records it."""

import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass
class HookDecision:
    decision: str
    reason: str | None = None
    output: dict | None = None


@dataclass
class HookHandler:
    id: str
    fn: Callable[[dict], HookDecision]
    priority: int = 0


@dataclass
class HookBus:
    handlers: dict[str, list[HookHandler]] = field(default_factory=dict)
    record: Callable[[str, str, HookDecision, float], None] = lambda *a: None

    def register(self, event: str, handler: HookHandler) -> None:
        self.handlers.setdefault(event, []).append(handler)
        self.handlers[event].sort(key=lambda h: -h.priority)

    def fire(self, event: str, input: dict) -> HookDecision:
        final = HookDecision("allow")
        for handler in self.handlers.get(event, []):
            start = time.perf_counter()
            try:
                decision = handler.fn(dict(input))
            except Exception as exc:  # a throwing hook is a deny (fail-closed)
                decision = HookDecision("deny", f"handler raised {type(exc).__name__}")
            self.record(event, handler.id, decision, (time.perf_counter() - start) * 1000)
            if decision.decision == "deny":
                return decision
            if decision.decision == "transform":
                final, input = decision, {**input, **(decision.output or {})}
        return final


def make_pre_tool_use_handler() -> HookHandler:
    return HookHandler("pre_tool_use_default", lambda i: HookDecision("allow", "default-allow"), 10)


def make_deny_dangerous_tools_handler() -> HookHandler:
    deny = {"rm", "delete", "drop_table"}

    def fn(input: dict) -> HookDecision:
        if input.get("tool") in deny:
            return HookDecision("deny", f"tool {input['tool']} on denylist")
        return HookDecision("allow")
    return HookHandler("deny_dangerous_tools", fn, 100)


def make_stop_handler() -> HookHandler:
    return HookHandler("stop_after_one", lambda i: HookDecision("deny", "loop reached terminal state"), 10)


def make_user_prompt_submit_handler() -> HookHandler:
    def fn(input: dict) -> HookDecision:
        prompt = input["prompt"]
        redacted = re.sub(r"\b\d{16}\b", "[REDACTED-CC]", prompt)
        if redacted != prompt:
            return HookDecision("transform", "redacted suspected card number", {"prompt": redacted})
        return HookDecision("allow")
    return HookHandler("redact_pii", fn, 80)

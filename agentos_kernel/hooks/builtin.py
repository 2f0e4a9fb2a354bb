"""The spec's four example hook handlers, plus gates used to reproduce fail-closed cases.

Each handler is a plain function `fn(input) -> HookDecision`, named in `agentos.yaml` as
`agentos_kernel.hooks.builtin:<name>`. The spec's `make_*` factories wrap them.

`@bounded` marks the ones that run on the calling thread (bus.py): each reads a field or
two of its input, or runs one linear-time regex over the prompt; no I/O, no lock, no wait.
`sleep_forever` is not marked: it is the handler the timeout exists for.
"""

from __future__ import annotations

import re
import time
from typing import Any

from .bus import HookDecision, HookHandler
from .runner import bounded

DANGEROUS_TOOLS = frozenset({"rm", "delete", "drop_table"})
_CARD = re.compile(r"\b\d{16}\b")


@bounded
def pre_tool_use_default(input: Any) -> HookDecision:
    """PreToolUse: allow (the spec's default-allow handler)."""
    return HookDecision(decision="allow", reason="default-allow")


@bounded
def deny_dangerous_tools(input: Any) -> HookDecision:
    """PreToolUse: deny tools on the denylist rm / delete / drop_table."""
    if input.get("tool") in DANGEROUS_TOOLS:
        return HookDecision(decision="deny", reason=f"tool {input['tool']} on denylist")
    return HookDecision(decision="allow")


@bounded
def stop_after_one(input: Any) -> HookDecision:
    """Stop: end the loop after one pass (deny = do not continue)."""
    return HookDecision(decision="deny", reason="loop reached terminal state")


@bounded
def redact_pii(input: Any) -> HookDecision:
    """UserPromptSubmit: replace 16-digit sequences (suspected card numbers)."""
    prompt = input["prompt"]
    redacted = _CARD.sub("[REDACTED-CC]", prompt)
    if redacted != prompt:
        return HookDecision(
            decision="transform",
            output={"prompt": redacted},
            reason="redacted suspected card number",
        )
    return HookDecision(decision="allow")


@bounded
def deny_all(input: Any) -> HookDecision:
    """Any hook: deny. Used by the `hook_deny` and `prompt_denied` fault presets."""
    return HookDecision(decision="deny", reason="denied by deny_all (fault injection)")


def sleep_forever(input: Any) -> HookDecision:
    """Any hook: never return. The bus must time it out and deny (`hook_timeout` preset)."""
    while True:
        time.sleep(3600)


@bounded
def raise_error(input: Any) -> HookDecision:
    """Any hook: raise. The bus must turn the exception into a deny (`hook_error` preset)."""
    raise RuntimeError("handler failed on purpose (fault injection)")


def make_pre_tool_use_handler() -> HookHandler:
    return HookHandler(id="pre_tool_use_default", fn=pre_tool_use_default, priority=10)


def make_deny_dangerous_tools_handler() -> HookHandler:
    return HookHandler(id="deny_dangerous_tools", fn=deny_dangerous_tools, priority=100)


def make_stop_handler() -> HookHandler:
    return HookHandler(id="stop_after_one", fn=stop_after_one, priority=10)


def make_user_prompt_submit_handler() -> HookHandler:
    return HookHandler(id="redact_pii", fn=redact_pii, priority=80)

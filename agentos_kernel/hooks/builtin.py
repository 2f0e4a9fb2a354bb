"""The spec's four example hook handlers, plus gates used to reproduce fail-closed cases.

Each handler is a plain function `fn(input) -> HookDecision`, named in `agentos.yaml` as
`agentos_kernel.hooks.builtin:<name>`. The spec's `make_*` factories wrap them.

`@bounded` marks the ones that run on the calling thread (bus.py): each reads a field or
two of its input, or runs a few linear-time regexes over the prompt; no I/O, no lock, no wait.
`sleep_forever` is not marked: it is the handler the timeout exists for.

`redact_pii` is the spec's UserPromptSubmit example (16 digits in a row become
`[REDACTED-CC]`), widened to every card number the session log finds (grouped, glued to a
word, 13-19 digits passing Luhn). The PII categories (redaction_shapes.PII) have one handler
each, `redact_pii_<category>`, and `redact_pii_all` does cards and every category: they redact
what the model is sent, where a profile's `redact_pii` redacts what is recorded.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from ..store.redaction_shapes import PII, PII_BY_NAME, SECRETS, Shape
from .bus import HookDecision, HookHandler
from .runner import bounded

DANGEROUS_TOOLS = frozenset({"rm", "delete", "drop_table"})
_CARD = next(s for s in SECRETS if s.name == "card_number")


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
    """Stop: end the loop after one pass (deny = do not continue), passed or failed; the
    reason repeats a failed pass's (hook_stop_v1 `ok`, `reason`), so the log says it."""
    if input.get("ok") is False:
        return HookDecision(decision="deny", reason=f"loop reached terminal state "
                                                    f"(not ok: {input.get('reason')})")
    return HookDecision(decision="deny", reason="loop reached terminal state")


@bounded
def stop_when_ok(input: Any) -> HookDecision:
    """Stop: end the loop once a pass's review passed; after a failed pass allow another
    (told how this one ended), up to the profile's max_iterations."""
    if input.get("ok") is False:
        return HookDecision(decision="allow", reason=f"pass {input.get('iteration')} failed; "
                                                     "trying again")
    return HookDecision(decision="deny", reason="the review passed")


def _replacing(shapes: tuple[Shape, ...], what: str) -> Callable[[str], HookDecision]:
    def decide(prompt: str) -> HookDecision:
        redacted = prompt
        for shape in shapes:
            redacted = shape.sub(redacted)
        if redacted != prompt:
            return HookDecision(decision="transform", output={"prompt": redacted},
                                reason=f"redacted suspected {what}")
        return HookDecision(decision="allow")
    return decide


_cards = _replacing((_CARD,), "card number")


@bounded
def redact_pii(input: Any) -> HookDecision:
    """UserPromptSubmit: replace card numbers (the spec's 16-digit sequences, and the other
    card shapes the log redacts)."""
    return _cards(input["prompt"])


def _pii_handler(names: tuple[str, ...], what: str) -> Callable[[Any], HookDecision]:
    decide = _replacing(tuple(PII_BY_NAME[n] for n in names), what)

    def handler(input: Any) -> HookDecision:
        return decide(input["prompt"])
    handler.__doc__ = f"UserPromptSubmit: replace {what}."
    return bounded(handler)


redact_pii_email = _pii_handler(("email",), "email address")
redact_pii_phone = _pii_handler(("phone",), "phone number")
redact_pii_kr_rrn = _pii_handler(("kr_rrn",), "Korean resident registration number")
redact_pii_us_ssn = _pii_handler(("us_ssn",), "US social security number")
redact_pii_iban = _pii_handler(("iban",), "IBAN")
_all = _replacing((_CARD, *PII), "card number or personal data")


@bounded
def redact_pii_all(input: Any) -> HookDecision:
    """UserPromptSubmit: replace card numbers and every PII category."""
    return _all(input["prompt"])


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

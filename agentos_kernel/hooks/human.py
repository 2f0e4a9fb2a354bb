"""A gate a person answers: the pending call waits for allow, deny or edited arguments, and
no answer within the timeout is a deny (fail-closed, I-3).

The hook runs, like every handler, on the bus's handler thread; it only waits on a
`threading.Event`, so whoever answers (a widget's button callback on the notebook's main
thread, a test, a console) never runs inside the request. The decision is logged by the
bus like any other, with actor `human`.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .bus import HookDecision, HookHandler, thaw

ANSWER_MARGIN_S = 1.0
"""The bus's own timeout is this much longer, so the hook's clearer deny is the one logged."""
EDITABLE = {"PreToolUse": "args", "PhaseAdvance": "to_phase"}
"""The field of each hook's input a person may change (the caller's schema checks it)."""


@dataclass
class Question:
    """One pending decision: what the hook saw, and the answer once given."""

    hook: str
    """The hook event (PreToolUse, PhaseAdvance)."""
    data: dict[str, Any]
    """A plain copy of the hook input (for PreToolUse: name, args, skill, ...)."""
    timeout_s: float
    """Seconds the hook waits before it denies."""
    answer: HookDecision | None = None
    """The decision, once given."""
    _answered: threading.Event = field(default_factory=threading.Event, repr=False)

    def give(self, decision: HookDecision) -> bool:
        """Answer; False when an answer was already given or the hook gave up waiting."""
        if self._answered.is_set():
            return False
        self.answer = decision
        self._answered.set()
        return True


class HumanHook:
    """Asks a person at `hook` (default PreToolUse; PhaseAdvance for L8 cycles).

    `on_question(question)` is called (on the handler thread) when a decision is pending;
    answer with `allow()`, `deny(reason)` or `edit(args)` from any thread. Register with
    `bus.register(hook.hook, hook.handler())`."""

    def __init__(self, hook: str = "PreToolUse", timeout_s: float = 60.0,
                 on_question: Callable[[Question], None] | None = None) -> None:
        if timeout_s <= 0:
            raise ValueError(f"timeout_s must be positive, got {timeout_s}")
        if hook not in EDITABLE:
            raise ValueError(f"a person can answer {', '.join(EDITABLE)}, not {hook!r}")
        self.hook, self.timeout_s, self.on_question = hook, timeout_s, on_question
        self.pending: Question | None = None
        """The question waiting for an answer, if any."""
        self._lock = threading.Lock()

    def handler(self, priority: int = 100) -> HookHandler:
        """The bus handler (id `human`, actor `human`), run before the workspace's own."""
        return HookHandler("human", self._ask, priority=priority,
                           timeout_s=self.timeout_s + ANSWER_MARGIN_S, actor="human")

    def _ask(self, data: Any) -> HookDecision:
        question = Question(self.hook, thaw(data), self.timeout_s)
        with self._lock:
            self.pending = question
        try:
            if self.on_question is not None:
                self.on_question(question)
            if not question._answered.wait(self.timeout_s):
                question.give(HookDecision(
                    "deny", f"no human answer within {self.timeout_s:g}s (fail-closed)"))
            # give() sets the answer before the event, so it is there once either has happened
            return question.answer or HookDecision("deny", "no human answer (fail-closed)")
        finally:
            with self._lock:
                if self.pending is question:
                    self.pending = None

    def _give(self, decision: HookDecision) -> bool:
        with self._lock:
            question = self.pending
        if question is None:
            raise RuntimeError(f"no {self.hook} decision is pending")
        return question.give(decision)

    def allow(self, reason: str = "allowed by a person") -> bool:
        """Let the pending call through."""
        return self._give(HookDecision("allow", reason))

    def deny(self, reason: str = "denied by a person") -> bool:
        """Refuse the pending call (the reason is logged)."""
        return self._give(HookDecision("deny", reason or "denied by a person"))

    def edit(self, value: Any, reason: str = "edited by a person") -> bool:
        """Let it through changed: other `args` for PreToolUse (the tool's input schema checks
        them), another `to_phase` for PhaseAdvance (it must be a phase of the cycle); a value
        the check refuses is a deny."""
        return self._give(HookDecision("transform", reason, {EDITABLE[self.hook]: value}))

    @property
    def field(self) -> str:
        """The input field `edit` changes."""
        return EDITABLE[self.hook]

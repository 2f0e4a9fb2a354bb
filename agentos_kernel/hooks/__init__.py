"""L6 Hook-intercepted Lifecycle: hooks are gates that return a decision, never callbacks
that change state. See `bus.py` for how decisions combine and are recorded."""

from .bus import HOOK_EVENTS, HookBus, HookDecision, HookHandler, freeze, thaw

__all__ = ["HOOK_EVENTS", "HookBus", "HookDecision", "HookHandler", "freeze", "thaw"]

"""L3 Plan-Work-Review Collaboration: role prompts from `agents/*.md` and `call_role`, the
Plan-Work-Review state machine, a request's `Session`, and the request flow the runtime runs
(the spec's ten steps: gates, passes, close).

May import: `providers` (L2), `tools` (L1) and every layer below them.
"""

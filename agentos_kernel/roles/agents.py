"""L3 roles: prompts from agents/*.md (I-4), and `call_role`: one role's turn through L2.

A role's turn is: build a completion_request_v1, check it, log `llm.request` (redacted),
call the provider, check the completion_response_v1, log `llm.response`; run the tool
calls it asks for through `dispatch_tool` and go again; then parse the text as JSON
(else MALFORMED_AGENT_MESSAGE), check it against the role's output schema (else
SCHEMA_INVALID) and log it as the role's handoff event. Every failure is logged first.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import (
    ContractError,
    DomainError,
    Err,
    ErrorCode,
    Ok,
    Problem,
    Result,
    exception_text,
)
from ..providers.base import CompletionRequest, CompletionResponse
from ..schemas import jsontext
from ..skills import frontmatter
from ..tools.dispatch import ToolCall, dispatch_tool

ROLES = ("lead", "planner", "worker", "reviewer", "advisor", "scaffolder")
HANDOFF_EVENT = {
    "lead_directive_v1": "lead.directive", "plan_v1": "plan.created",
    "worker_report_v1": "worker.report", "review_result_v1": "review.result",
    "advisor_opinion_v1": "advisor.opinion", "scaffold_plan_v1": "scaffold.plan",
}


@dataclass(frozen=True)
class AgentDef:
    """A role prompt loaded from agents/<name>.md."""

    name: str
    """Agent id (file stem)."""
    role: str
    """Which L3 role it plays."""
    output_schema: str
    """Schema id its JSON output must satisfy."""
    prompt: str
    """The Markdown body, sent as the system prompt."""
    file: str
    """Where it was loaded from."""


def load_agents(root: Path, schemas: Any, shown_root: str = "agents") -> dict[str, AgentDef]:
    """Load every agents/*.md; ContractError names each bad file and field."""
    agents: dict[str, AgentDef] = {}
    problems: list[Problem] = []
    for path in sorted(Path(root).glob("*.md")):
        shown = f"{shown_root}/{path.name}"
        loaded = frontmatter.load(path, "agent_frontmatter_v1", schemas, shown)
        if isinstance(loaded, Problem):
            problems.append(loaded)
            continue
        meta, body = loaded
        if meta["name"] != path.stem:
            problems.append(Problem(shown, "name", f"is {meta['name']!r}; it must equal the file "
                                    f"name {path.stem!r}"))
        elif meta["output_schema"] not in schemas:
            problems.append(Problem(shown, "output_schema", f"no schema {meta['output_schema']!r} "
                                    "is loaded"))
        else:
            agents[meta["name"]] = AgentDef(meta["name"], meta["role"], meta["output_schema"],
                                            body, shown)
    missing = [r for r in ("lead", "planner", "worker", "reviewer") if r not in agents]
    if missing and not problems:
        problems.append(Problem(shown_root, "-", f"no agent file for role(s) {', '.join(missing)}"))
    if problems:
        raise ContractError(problems)
    return agents


def call_role(session: Any, agent: AgentDef, payload: dict[str, Any], *,
              tools: tuple[dict[str, Any], ...] = (), allowed: frozenset[str] = frozenset()
              ) -> Result[dict[str, Any]]:
    """One role's turn (see the module docstring). `session` is a kernel.Session."""
    log, profile = session.log, session.profile
    system = (agent.prompt.rstrip() + f"\n\nRespond with JSON matching the schema "
              f"`{agent.output_schema}`.")
    messages: list[dict[str, str]] = [
        {"role": "system", "content": system},
        {"role": "user", "content": jsontext.dumps(payload, ensure_ascii=False, sort_keys=True)},
    ]
    schema = session.schemas.resolved(agent.output_schema)
    turns = repairs = 0
    while True:
        request = CompletionRequest(tuple(messages), profile.model, tools or None,
                                    profile.max_tokens, profile.temperature,
                                    output_schema_id=agent.output_schema, output_schema=schema)
        response = _complete(session, agent, request)
        if isinstance(response, Err):
            return response
        if not response.value.tool_calls:
            got = _output(session, agent, response.value, repairs, profile.max_repairs)
            if not isinstance(got, Repair):
                return got
            # the refused answer and why go back to the model, which answers again
            repairs += 1
            messages += [{"role": "assistant", "content": response.value.text},
                         {"role": "user", "content": got.message}]
            continue
        messages.append({"role": "assistant", "content": jsontext.dumps(
            {"tool_calls": [{"id": c.id, "name": c.name, "args": c.args}
                            for c in response.value.tool_calls]}, sort_keys=True)})
        for call in response.value.tool_calls:
            shape = log.check({"id": call.id, "name": call.name, "args": call.args}, "tool_call_v1",
                              where=f"{agent.role} tool call", actor=agent.role)
            result = shape if isinstance(shape, Err) else dispatch_tool(
                call, tools=session.tools, allowed_tools=allowed, hooks=session.hooks, log=log,
                context=session.tool_context, actor=agent.role)
            body = ({"id": call.id, "name": call.name, "result": result.value}
                    if isinstance(result, Ok) else
                    {"id": call.id, "name": call.name,
                     "error": {"code": result.error.code, "message": result.error.message}})
            messages.append({"role": "tool", "content": jsontext.dumps(body, sort_keys=True)})
        messages = session.maybe_compact(agent.role, messages)
        turns += 1
        if turns > profile.max_tool_turns:
            return log.fail(DomainError("loop", ErrorCode.LOOP_BOUND,
                                        f"{agent.role} asked for tools {profile.max_tool_turns} turns "
                                        "in a row; raise max_tool_turns in the profile if that is "
                                        "intended"), layer="L3", actor=agent.role)


def _complete(session: Any, agent: AgentDef, request: CompletionRequest
              ) -> Result[CompletionResponse]:
    log = session.log
    req = request.to_dict()
    checked = log.check(req, "completion_request_v1", where=f"{agent.role} request",
                        actor=agent.role, built=True)
    if isinstance(checked, Err):
        return checked
    session.calls += 1
    call_id = f"c{session.calls}"
    sent = log.append("llm.request", agent.role,
                      {**req, "role": agent.role, "call_id": call_id})
    got = _call_provider(session, agent, request, call_id, sent.id)
    if isinstance(got, Err):
        log.append("llm.error", agent.role, {"role": agent.role, "call_id": call_id,
                                             "code": got.error.code,
                                             "message": got.error.message},
                   sent.id)
        return log.fail(got.error, layer="L2", actor=agent.role, parent_id=sent.id)
    resp = got.value.to_dict()
    checked = log.check(resp, "completion_response_v1", where=f"{agent.role} response",
                        actor=agent.role, parent_id=sent.id)
    if isinstance(checked, Err):  # the call failed: its request still gets its answer event
        log.append("llm.error", agent.role, {"role": agent.role, "call_id": call_id,
                                             "code": checked.error.code,
                                             "message": checked.error.message}, sent.id)
        return checked
    streamed = {} if got.value.chunks is None else {"chunks": got.value.chunks}
    log.append("llm.response", agent.role, {**resp, "role": agent.role, "call_id": call_id,
                                            "attempts": got.value.attempts, **streamed},
               sent.id)
    return got


def _call_provider(session: Any, agent: AgentDef, request: CompletionRequest, call_id: str,
                   parent: str) -> Result[CompletionResponse]:
    """The provider's answer, whatever it does: an adapter that raises, or returns anything
    but a Result of a CompletionResponse, broke the Provider contract, which is the same
    fail-closed PROVIDER_ERROR as retries running out. Ctrl-C still propagates (to
    `Runtime.guarded`), after the request is answered by an `llm.error` so the log keeps
    its request/response pairs."""
    try:
        got = session.provider.complete(request)
    except KeyboardInterrupt:
        session.log.append("llm.error", agent.role, {
            "role": agent.role, "call_id": call_id, "code": ErrorCode.INTERRUPTED,
            "message": "interrupted (Ctrl-C) while waiting for the model"}, parent)
        raise
    except Exception as exc:
        return Err(DomainError("provider", ErrorCode.PROVIDER_ERROR,
                               f"provider {_name(session)!r} raised "
                               f"{type(exc).__name__}: {exception_text(exc)}"))
    if isinstance(got, Err) or (isinstance(got, Ok) and isinstance(got.value, CompletionResponse)):
        return got
    return Err(DomainError("provider", ErrorCode.PROVIDER_ERROR,
                           f"provider {_name(session)!r} returned "
                           f"{type(got).__name__}, not a Result of a CompletionResponse"))


def _name(session: Any) -> str:
    return str(getattr(session.provider, "name", type(session.provider).__name__))


@dataclass(frozen=True)
class Repair:
    """A role answer refused with a repair turn left: what the model is told about it."""

    message: str
    """The user turn sent back: the schema error and what to do."""


def _output(session: Any, agent: AgentDef, response: CompletionResponse, repairs: int = 0,
            max_repairs: int = 0) -> Result[dict[str, Any]] | Repair:
    """The role's answer checked and logged as its handoff event; a bad answer fails
    closed (MALFORMED_AGENT_MESSAGE or SCHEMA_INVALID) once `max_repairs` repair turns are
    used, before that it is logged as a schema.violation and handed back as a `Repair`."""
    log = session.log
    can_repair = repairs < max_repairs
    where = f"{agent.role} output" + (f" (attempt {repairs + 1} of {max_repairs + 1})"
                                      if max_repairs else "")
    try:
        out = jsontext.loads(response.text)
    except jsontext.JSONDecodeError as exc:
        why = f"{agent.role} output is not JSON ({exc.msg} at char {exc.pos})"
        if can_repair:
            log.append("schema.violation", agent.role, {
                "schema_id": agent.output_schema, "where": where,
                "violations": [{"path": "/", "message": why}]})
            return Repair(_repair_text(agent.output_schema, [f"/: {why}"]))
        return log.fail(DomainError("schema", ErrorCode.MALFORMED_AGENT_MESSAGE,
                                    f"{why}; role outputs must be JSON only"),
                        layer="L3", actor=agent.role)
    checked = log.check(out, agent.output_schema, where=where, actor=agent.role)
    if isinstance(checked, Err):
        if can_repair:
            found = session.schemas.violations(out, agent.output_schema)
            return Repair(_repair_text(agent.output_schema,
                                       [f"{v.path}: {v.message}" for v in found[:10]]))
        return checked
    event = HANDOFF_EVENT.get(agent.output_schema)
    if event is None:  # a role with its own schema (e.g. an L8 persona)
        log.append("role.output", agent.name,
                   {"role": agent.role, "schema_id": agent.output_schema, "output": out})
    else:
        log.append(event, agent.name, out)
    return Ok(out)


def _repair_text(schema_id: str, problems: list[str]) -> str:
    # SCHEMA_INVALID names the refusal in the request, where an auditor looks for it
    return (f"SCHEMA_INVALID: your answer was refused; it does not match the schema "
            f"`{schema_id}`: {'; '.join(problems)}. Answer again with only one JSON object "
            "that matches the schema, nothing else.")


__all__ = ["ROLES", "AgentDef", "ToolCall", "call_role", "load_agents"]

"""L8 fan-out and fan-in: a phase's personas run through L3 (`roles.call_role`), their
outputs are checked and folded into the phase context, and every policy decision on the
way is a `workflow.policy_gated` event.

Before a persona runs, the role-permissions policies decide whether it may (a deny aborts
the cycle), and for an artifact phase the role-permissions and mode-dispatch policies
decide whether it may write its artifact. A granted write gives the persona L1's
read_file and write_file — confined to the artifact's directory — for that one call; a
refused one gives it no tools. Either way its JSON output, and so every later decision,
is the same: modes change what is written, not what is decided.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

from ..errors import DomainError, Err, ErrorCode
from ..roles.agents import call_role
from .activation import Activation, prepare
from .model import Cycle, Persona, Phase, WorkflowRegistry
from .policy import GATE_ORDER, ROUTE_ORDER, Decision, Policy, Reported, aggregate, conservative, decide
from .policy import fingerprint as fingerprint_of
from .registry import AGGREGATE_SCHEMA, FINDINGS_SCHEMA

WRITE_TOOLS = ("read_file", "write_file")
FINDING_KINDS = ("confidence-gating", "severity-routing")


def _escapes(ctx: Any, directory: str) -> str | None:
    """Why the artifact directory, once symlinks are resolved, is not a place tools may
    write (outside the workspace, or a contract or sessions/, which no grant re-opens),
    else None. `ctx` is the session's L1 ToolContext (L8 does not import L1)."""
    root = ctx.workspace.resolve()
    real = (ctx.workspace / directory).resolve()
    if not real.is_relative_to(root):
        return "leads outside the workspace (a symlink)"
    why = ctx.scope.denial(real) or ctx.scope.holds(real)
    return f"leads into a folder that {why}" if why else None


def slug(text: str) -> str:
    """A file-name-safe slug of the prompt's first words (for artifact naming)."""
    words = re.findall(r"[a-z0-9]+", text.lower())[:6]
    return "-".join(words)[:48].strip("-") or "request"


class FanOut:
    """The phase context of a running cycle, and how one phase's personas fill it."""

    def __init__(self, registry: WorkflowRegistry, session: Any, cycle: Cycle, prompt: str,
                 mode: str) -> None:
        self.registry, self.session, self.log = registry, session, session.log
        self.cycle, self.prompt, self.mode = cycle, prompt, mode
        self.phase: str | None = None
        self.generation = 0
        self.runs: dict[str, int] = {}
        self.visited: list[str] = []
        self.completed: list[str] = []
        self.aggregate: dict[str, Any] = {}
        self.artifacts: dict[str, Any] = {}
        self.outputs: dict[str, Any] = {}
        self.grades: list[int] = []
        self.last_output: Any = None  # what the last phase produced: the next one's input

    def context(self, **subject: Any) -> dict[str, Any]:
        """What signals and rules read (policy.SIGNAL_NAMES), plus a rule's subject."""
        return {"prompt": self.prompt, "cycle": self.cycle.id, "phase": self.phase, "mode": self.mode,
                "generation": self.generation, "visited": list(self.visited),
                "completed": list(self.completed), "phase_runs": dict(self.runs),
                "review_aggregate": self.aggregate, "artifacts": self.artifacts,
                "outputs": self.outputs, "grades": list(self.grades), **subject}

    def prepared(self) -> Activation:
        """The context checked and converted to CEL once, for every decision of a batch in
        which it does not change (each adds only its subject: Activation.with_subject)."""
        return prepare(self.context())

    def policies_for(self, phase: Phase) -> list[Policy]:
        """The cycle's policies that apply in `phase`, in the cycle's order."""
        return [self.registry.policies[p] for p in self.cycle.policies
                if not phase.policies or p in phase.policies]

    def next_of(self, phase_id: str) -> str | None:
        """The phase after `phase_id`: its explicit `next`, else the following one; None at the end."""
        explicit = self.registry.phases[phase_id].next
        if explicit is not None:
            return explicit
        i = self.cycle.phases.index(phase_id)
        return self.cycle.phases[i + 1] if i + 1 < len(self.cycle.phases) else None

    def gated(self, d: Decision, subject: str, fp: str | None) -> None:
        """Record one policy decision."""
        payload: dict[str, Any] = {"cycle_id": self.cycle.id, "phase": self.phase, "policy_id": d.policy_id,
                                   "kind": d.kind, "subject": subject, "decision": d.decision,
                                   "reason": d.reason, "rule": d.rule}
        if fp is not None:
            payload["fingerprint"] = fp
        self.log.append("workflow.policy_gated", "workflow", payload)

    def _decide_all(self, base: Activation, policies: list[Policy], kinds: tuple[str, ...],
                    subject: str, fp: str | None = None, **ctx: Any) -> list[str]:
        out = []
        for policy in policies:
            if policy.kind in kinds:
                d = decide(policy, base.with_subject(**ctx))
                self.gated(d, subject, fp)
                out.append(d.decision)
        return out

    # -- fan-out ----------------------------------------------------------------------
    def fan_out(self, phase: Phase) -> tuple[str, str, bool] | None:
        """Run the phase's personas and fold their outputs in; (reason, code, logged) when
        the cycle must abort."""
        if phase.input_schema is not None:
            checked = self.log.check(self.last_output, phase.input_schema, where=f"input of phase {phase.id}",
                                     actor="workflow")
            if isinstance(checked, Err):
                return (f"the input of phase {phase.id!r} is not a valid {phase.input_schema}",
                        checked.error.code, True)
        policies = self.policies_for(phase)
        outputs: list[tuple[Persona, dict[str, Any]]] = []
        base = self.prepared()  # the context does not change until every persona has run
        for pid in phase.personas:
            persona = self.registry.personas[pid]
            who = {"id": persona.id, "role": persona.role, "output_schema": persona.output_schema}
            invoke = self._decide_all(base, policies, ("role-permissions",), f"invoke {persona.id}",
                                      persona=who, action="invoke", path="")
            if conservative(invoke, GATE_ORDER, "allow") == "deny":
                return (f"role-permissions denied invoking persona {persona.id!r} in phase {phase.id!r}",
                        ErrorCode.GATE_DENIED, False)
            out = self._call(phase, persona, who, policies, base)
            if isinstance(out, Err):
                return (f"persona {persona.id!r} failed in phase {phase.id!r}: {out.error}", out.error.code,
                        True)
            outputs.append((persona, out.value))
        for persona, out in outputs:
            self.outputs[persona.id] = out
            if isinstance(out.get("grade"), int) and not isinstance(out.get("grade"), bool):
                self.grades.append(out["grade"])
        if phase.artifact is not None and outputs:
            self.artifacts[phase.artifact] = outputs[0][1]
        if any(p.output_schema == FINDINGS_SCHEMA for p, _ in outputs):
            return self._fan_in(phase, outputs, policies)
        if outputs:
            self.last_output = outputs[-1][1]
        return None

    def _call(self, phase: Phase, persona: Persona, who: dict[str, Any], policies: list[Policy],
              base: Activation) -> Any:
        payload: dict[str, Any] = {
            "workflow": {"cycle": self.cycle.id, "phase": phase.id, "generation": self.generation,
                         "mode": self.mode},
            "persona": {"id": persona.id, "role": persona.role},
            "prompt": self.prompt,
            "context": {"review_aggregate": self.aggregate, "artifacts": self.artifacts},
        }
        if phase.artifact is None:
            return call_role(self.session, persona.agent(), payload)
        template = self.registry.artifacts[phase.artifact]
        path = template.path(cycle=self.cycle.id, session=self.session.session_id, slug=slug(self.prompt),
                             phase=phase.id, generation=self.generation)
        artifact = {"id": template.id, "path": path, "schema": template.schema}
        write = self._decide_all(base, policies, ("role-permissions", "mode-dispatch"), f"write {path}",
                                 persona=who, action="write", path=path, artifact=artifact)
        if conservative(write, GATE_ORDER, "deny") != "allow":
            return call_role(self.session, persona.agent(), payload)
        directory, _, name = path.rpartition("/")
        ctx = self.session.tool_context  # `base`, the prepared decision context, is used up
        escape = _escapes(ctx, directory)
        if escape:  # a symlink planted in the workspace: logged, and the persona gets no tools
            self.session.log.fail(DomainError("gate", ErrorCode.PATH_DENIED, f"artifact directory "
                                              f"{directory!r} {escape}; {path} is not written"),
                                  layer="L1", actor=persona.id)
            return call_role(self.session, persona.agent(), payload)
        payload["write"] = {"artifact": template.id, "directory": directory or ".", "path": name,
                            "template": template.body, "tools": list(WRITE_TOOLS)}
        # Confine the persona's writes to the artifact's directory: the role-permissions
        # decision was about this path, so L1 enforces it rather than trusting the model. The
        # directory is declared by a workflows/ template (a contract), so it is granted as a
        # writable folder for this one call; the deny-list still applies inside it.
        folder = (ctx.workspace / directory).resolve()
        self.session.tool_context = replace(ctx, workspace=ctx.workspace / directory,
                                            scope=ctx.scope.granting(folder))
        try:
            return call_role(self.session, persona.agent(), payload, tools=self._specs(),
                             allowed=frozenset(WRITE_TOOLS))
        finally:
            self.session.tool_context = ctx

    def _specs(self) -> tuple[dict[str, Any], ...]:
        specs = []
        for name in WRITE_TOOLS:
            tool = self.session.tools[name]
            specs.append({"name": name, "description": tool.description,
                          "input_schema": self.session.schemas.resolved(tool.schema_in)})
        return tuple(specs)

    # -- fan-in -----------------------------------------------------------------------
    def _fan_in(self, phase: Phase, outputs: list[tuple[Persona, dict[str, Any]]],
                policies: list[Policy]) -> tuple[str, str, bool] | None:
        """Every finding through the finding policies, in the cycle's order; then one
        review_aggregate_v1 with the decisions merged per fingerprint."""
        found = [(p.id, f, fingerprint_of(f)) for p, out in outputs for f in out["findings"]]
        gates: list[list[str]] = [[] for _ in found]
        routes: list[list[str]] = [[] for _ in found]
        base = self.prepared()
        for policy in policies:
            if policy.kind not in FINDING_KINDS:
                continue
            for i, (pid, f, fp) in enumerate(found):
                d = decide(policy, base.with_subject(finding={**f, "fingerprint": fp}))
                self.gated(d, f"finding {pid}/{f['id']}", fp)
                (gates if policy.kind == "confidence-gating" else routes)[i].append(d.decision)
        reported = [Reported(pid, f, fp, conservative(gates[i], GATE_ORDER, "allow"),
                             conservative(routes[i], ROUTE_ORDER, "manual"))
                    for i, (pid, f, fp) in enumerate(found)]
        agg = aggregate(reported, [p.id for p, _ in outputs])
        checked = self.log.check(agg, AGGREGATE_SCHEMA, where=f"fan-in of phase {phase.id}", actor="workflow")
        if isinstance(checked, Err):
            return (f"the fan-in of phase {phase.id!r} is not a valid {AGGREGATE_SCHEMA}", checked.error.code,
                    True)
        self.aggregate = self.last_output = agg
        return None

"""WorkflowRegistry: loads workflows/ (cycles/ phases/ policies/ personas/<role>/ artifacts/)
from Markdown frontmatter, fail-closed (I-3, I-4).

Every file is checked against its schema (cycle_v1, phase_v1, policy_v1,
persona_frontmatter_v1 — a skill_frontmatter_v1 document —, artifact_template_v1); its id
must equal its file name; every signal is compiled; every reference (phase, policy,
persona, artifact, schema) must resolve; personas are never written inline. Any problem
fails the whole load with ContractError naming file and field: a cycle never runs on a
half-loaded plane. At run time an unknown id is an `Err(UNKNOWN_ID)`.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from weakref import WeakKeyDictionary

import yaml

from ..errors import ContractError, Problem
from ..schemas.registry import SchemaRegistry
from ..skills import frontmatter
from .model import NAMING_VARS, ArtifactTemplate, Cycle, Persona, Phase, WorkflowRegistry, known
from .policy import KIND_NAMES, KINDS, MODES, SIGNAL_NAMES, Policy, Rule
from .signals import Signal, compile_signal

FINDINGS_SCHEMA, AGGREGATE_SCHEMA = "persona_findings_v1", "review_aggregate_v1"
NEEDED_SCHEMAS = ("cycle_v1", "phase_v1", "policy_v1", "persona_frontmatter_v1", "artifact_template_v1",
                  FINDINGS_SCHEMA, AGGREGATE_SCHEMA, "hook_workflow_start_v1", "hook_phase_advance_v1")
"""What the loader and the engine check against: a workspace without them cannot run L8."""
_ROLE = re.compile(r"^[a-z][a-z0-9_-]*$")
_INLINE = "is written inline; a persona lives in workflows/personas/<role>/<id>.md and is named by id"


_LOADED: WeakKeyDictionary[Any, WorkflowRegistry] = WeakKeyDictionary()


def registry_of(rt: Any) -> WorkflowRegistry:
    """The registry of a kernel.Runtime's workspace, loaded once per runtime."""
    if rt not in _LOADED:
        root = rt.workspace.contract_dir("workflows")
        _LOADED[rt] = load_workflows(root, rt.schemas, rt.workspace.shown(root))
    return _LOADED[rt]


def load_workflows(root: Path, schemas: SchemaRegistry, shown_root: str = "workflows") -> WorkflowRegistry:
    """Load and cross-check every workflow file; ContractError lists every problem."""
    missing = [Problem(shown_root, sid, f"no schema {sid!r} is loaded; the workflow plane needs it")
               for sid in NEEDED_SCHEMAS if sid not in schemas]
    if missing:
        raise ContractError(missing)
    L = _Loader(Path(root), schemas, shown_root)
    reg = WorkflowRegistry(L.cycles(), L.phases(), L.policies(), L.personas(), L.artifacts())
    L.cross_check(reg)
    if L.problems:
        raise ContractError(L.problems)
    return reg


def _escapes(naming: str) -> bool:
    """True when an artifact path could leave the workspace or land in sessions/: absolute,
    `..`, a NUL or backslash, or a first folder that is `sessions` or a placeholder (filled
    at run time, so it could be anything)."""
    parts = [p for p in naming.split("/") if p not in ("", ".")]
    return (not parts or naming.startswith("/") or "\\" in naming or "\0" in naming
            or ".." in parts or parts[0] == "sessions" or (len(parts) > 1 and "{" in parts[0]))


class _Loader:
    def __init__(self, root: Path, schemas: SchemaRegistry, shown_root: str) -> None:
        self.root, self.schemas, self.shown_root = root, schemas, shown_root
        self.problems: list[Problem] = []
        self.files: dict[tuple[str, str], str] = {}  # (kind, id) -> shown file

    def _each(self, sub: str, pattern: str, schema_id: str, id_field: str = "id"
              ) -> Iterator[tuple[Path, str, dict[str, Any], str]]:
        for path in sorted((self.root / sub).glob(pattern)):
            shown = f"{self.shown_root}/{path.relative_to(self.root).as_posix()}"
            self._inline(path, shown)
            loaded = frontmatter.load(path, schema_id, self.schemas, shown)
            if isinstance(loaded, Problem):
                self.problems.append(loaded)
                continue
            meta, body = loaded
            stem = path.name[: -len("-template.md")] if sub == "artifacts" else path.stem
            if meta[id_field] != stem:
                self.problems.append(Problem(shown, id_field, f"is {meta[id_field]!r}; it must equal "
                                                              f"the file name {stem!r}"))
                continue
            if (sub, stem) in self.files:
                self.problems.append(Problem(shown, id_field, f"{stem!r} is already defined in "
                                                              f"{self.files[(sub, stem)]}"))
                continue
            self.files[(sub, stem)] = shown
            yield path, shown, meta, body

    def _inline(self, path: Path, shown: str) -> None:
        """Personas written inside a cycle or phase are refused with their own message."""
        try:
            meta, _ = frontmatter.split(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, ValueError, yaml.YAMLError):
            return  # frontmatter.load reports it
        if not isinstance(meta, dict):
            return
        for key in ("personas", "persona", "agents"):
            if key in meta:
                self.problems.append(Problem(shown, key, f"a persona {_INLINE}"))
        for i, item in enumerate(meta.get("agents_invoked") or []):
            if isinstance(item, dict):
                self.problems.append(Problem(shown, f"agents_invoked[{i}]", f"this persona {_INLINE}"))

    def _signal(self, source: Any, shown: str, field: str, extra: frozenset[str] = frozenset()
                ) -> Signal | None:
        got = compile_signal(source, allowed=SIGNAL_NAMES | extra, file=shown, field=field)
        if isinstance(got, Problem):
            self.problems.append(got)
            return None
        return got

    def _schema(self, sid: str | None, shown: str, field: str) -> None:
        if sid is not None and sid not in self.schemas:
            self.problems.append(Problem(shown, field, f"no schema {sid!r} is loaded"))

    def personas(self) -> dict[str, Persona]:
        out: dict[str, Persona] = {}
        for path, shown, meta, body in self._each("personas", "*/*.md", "persona_frontmatter_v1", "name"):
            role = path.parent.name
            if not _ROLE.match(role):
                self.problems.append(Problem(shown, "-", f"role directory {role!r} must match "
                                                         f"{_ROLE.pattern}"))
            elif meta["name"] in out:
                self.problems.append(Problem(shown, "name", f"persona {meta['name']!r} is already "
                                                            f"defined in {out[meta['name']].file}"))
            else:
                self._schema(meta["output_schema"], shown, "output_schema")
                out[meta["name"]] = Persona(meta["name"], role, meta["output_schema"], body, shown)
        return out

    def artifacts(self) -> dict[str, ArtifactTemplate]:
        out: dict[str, ArtifactTemplate] = {}
        for path in sorted((self.root / "artifacts").glob("*.md")):
            if not path.name.endswith("-template.md"):
                self.problems.append(Problem(f"{self.shown_root}/artifacts/{path.name}", "-",
                                             "artifact templates are named <id>-template.md"))
        for _, shown, meta, body in self._each("artifacts", "*-template.md", "artifact_template_v1"):
            naming, problem = meta["naming"], None
            names = set(re.findall(r"\{([^{}]*)\}", naming))
            if names - NAMING_VARS:
                problem = f"unknown placeholder(s) {sorted(names - NAMING_VARS)}; use {sorted(NAMING_VARS)}"
            elif _escapes(naming):
                problem = ("must be a relative path inside the workspace, outside sessions/, whose "
                           "first folder is written out (not a placeholder)")
            if problem:
                self.problems.append(Problem(shown, "naming", problem))
                continue
            self._schema(meta["schema"], shown, "schema")
            if "example" in meta and meta["schema"] in self.schemas:
                found = self.schemas.violations(meta["example"], meta["schema"])
                if found:
                    where = f"example{found[0].path.replace('/', '.')}".rstrip(".")
                    self.problems.append(Problem(shown, where, f"{found[0].message} ({meta['schema']})"))
            out[meta["id"]] = ArtifactTemplate(meta["id"], meta["schema"], naming, body, shown)
        return out

    def policies(self) -> dict[str, Policy]:
        out: dict[str, Policy] = {}
        for _, shown, meta, _ in self._each("policies", "*.md", "policy_v1"):
            kind, vocab, ok = meta["kind"], KINDS[meta["kind"]], True
            rules = []
            for i, r in enumerate(meta["rules"]):
                if r["then"] not in vocab:
                    self.problems.append(Problem(shown, f"rules[{i}].then", f"{r['then']!r} is not a "
                                                 f"{kind} decision; use one of {', '.join(vocab)}"))
                    ok = False
                when = self._signal(r["when"], shown, f"rules[{i}].when", KIND_NAMES[kind])
                ok = ok and when is not None
                if when is not None:
                    rules.append(Rule(when, r["then"], r["reason"]))
            if meta.get("default") is not None and meta["default"] not in vocab:
                self.problems.append(Problem(shown, "default", f"{meta['default']!r} is not a {kind} "
                                             f"decision; use one of {', '.join(vocab)}"))
                ok = False
            if ok:
                out[meta["id"]] = Policy(meta["id"], kind, tuple(rules), meta.get("default"),
                                         meta.get("default_reason"), shown)
        return out

    def phases(self) -> dict[str, Phase]:
        out: dict[str, Phase] = {}
        for _, shown, m, _ in self._each("phases", "*.md", "phase_v1"):
            advance = self._signal(m["advance_signal"], shown, "advance_signal")
            halt = self._signal(m["halt_signal"], shown, "halt_signal") if "halt_signal" in m else None
            for key in ("input_schema", "output_schema"):
                self._schema(m.get(key), shown, key)
            if advance is None or ("halt_signal" in m and halt is None):
                continue
            out[m["id"]] = Phase(m["id"], advance, halt, tuple(m.get("agents_invoked") or ()),
                                 m.get("input_schema"), m.get("output_schema"), m.get("artifact"),
                                 m.get("next"), m.get("rework"), tuple(m.get("policies") or ()), shown)
        return out

    def cycles(self) -> dict[str, Cycle]:
        out: dict[str, Cycle] = {}
        for _, shown, m, _ in self._each("cycles", "*.md", "cycle_v1"):
            exits, bounds = m.get("exit_conditions") or {}, m.get("loop_bounds") or {}
            done = self._signal(exits["done"], shown, "exit_conditions.done") if "done" in exits else None
            modes = tuple(m.get("modes") or MODES)
            default_mode = m.get("default_mode", modes[0])
            if default_mode not in modes:
                self.problems.append(Problem(shown, "default_mode", f"{default_mode!r} is not one of "
                                                                    f"its modes {list(modes)}"))
            if "done" in exits and done is None:
                continue
            out[m["id"]] = Cycle(m["id"], tuple(m["phases"]), m["entry_phase"],
                                 tuple(m.get("policies") or ()), done, bounds.get("max_generations"),
                                 bounds.get("max_oscillations"),
                                 bool(bounds.get("halt_on_grade_regression", False)), modes,
                                 default_mode, shown)
        return out

    def cross_check(self, reg: WorkflowRegistry) -> None:
        """Every reference resolves (dangling ids are load errors, never run-time surprises)."""
        def ref(table: dict[str, Any], what: str, value: str | None, shown: str, field: str) -> bool:
            if value is None or value in table:
                return True
            self.problems.append(Problem(shown, field, f"unknown {what} {value!r}; "
                                                       f"registered: {known(table)}"))
            return False

        for p in reg.phases.values():
            for i, pid in enumerate(p.personas):
                ref(reg.personas, "persona", pid, p.file, f"agents_invoked[{i}]")
            for i, pol in enumerate(p.policies):
                ref(reg.policies, "policy", pol, p.file, f"policies[{i}]")
            ref(reg.phases, "phase", p.next, p.file, "next")
            ref(reg.phases, "phase", p.rework, p.file, "rework")
            if ref(reg.artifacts, "artifact", p.artifact, p.file, "artifact"):
                self._phase_outputs(reg, p)
        for c in reg.cycles.values():
            for i, ph in enumerate(c.phases):
                if ref(reg.phases, "phase", ph, c.file, f"phases[{i}]"):
                    phase = reg.phases[ph]
                    for field in ("next", "rework"):
                        target = getattr(phase, field)
                        if target is not None and target not in c.phases:
                            self.problems.append(Problem(c.file, f"phases[{i}]", f"phase {ph!r} has {field} "
                                                         f"{target!r}, which is not a phase of this cycle"))
                    for pol in phase.policies:
                        if pol not in c.policies:
                            self.problems.append(Problem(c.file, "policies", f"phase {ph!r} applies policy "
                                                         f"{pol!r}, which this cycle does not list"))
            if c.entry_phase not in c.phases:
                self.problems.append(Problem(c.file, "entry_phase", f"{c.entry_phase!r} is not one of its "
                                                                    f"phases {list(c.phases)}"))
            for i, pol in enumerate(c.policies):
                ref(reg.policies, "policy", pol, c.file, f"policies[{i}]")

    def _phase_outputs(self, reg: WorkflowRegistry, p: Phase) -> None:
        """Fan-in needs one kind of output per phase: findings, or one artifact, or one schema."""
        outs = {reg.personas[x].output_schema for x in p.personas if x in reg.personas}
        problem = None
        if FINDINGS_SCHEMA in outs:
            if outs != {FINDINGS_SCHEMA} or p.output_schema not in (None, AGGREGATE_SCHEMA):
                problem = (f"reviewing personas ({FINDINGS_SCHEMA}) fan in to {AGGREGATE_SCHEMA}; "
                           "do not mix them with other outputs")
        elif p.artifact is not None:
            schema = reg.artifacts[p.artifact].schema
            if len(p.personas) != 1 or outs != {schema} or p.output_schema not in (None, schema):
                problem = f"an artifact phase has exactly one persona whose output_schema is {schema!r}"
        elif p.output_schema is not None and outs - {p.output_schema}:
            problem = f"its personas output {sorted(outs)}, not {p.output_schema!r}"
        if problem:
            self.problems.append(Problem(p.file, "agents_invoked", problem))

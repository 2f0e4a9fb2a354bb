"""L5 Markdown-SSOT Skill Runtime: discovery, frontmatter validation, trigger matching.

A SKILL.md whose frontmatter fails skill_frontmatter_v1, or that lies outside its skill
root (a symlinked folder or file pointing out), is skipped with a reason naming file and
field (logged as `skill.skipped` in every session); the others still load.
Triggers match whole words, case-insensitively ("hi" does not fire on "this").
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from pathlib import Path

from ..errors import Problem
from ..schemas.registry import SchemaRegistry
from . import frontmatter


@dataclass(frozen=True)
class Skill:
    """One registered skill."""

    name: str
    """Skill id (frontmatter `name`)."""
    description: str
    """What it does."""
    triggers: tuple[str, ...]
    """Words or phrases that select it."""
    allowed_tools: tuple[str, ...]
    """Its tool scope, handed to L1 dispatch."""
    file: str
    """Where it was loaded from (relative to the workspace)."""
    body: str
    """The Markdown procedure, given to the roles."""
    version: int | None = None
    """Skill version."""


@dataclass(frozen=True)
class SkillRegistry:
    """Skills by name, plus the files that were skipped and why."""

    skills: dict[str, Skill]
    """Registered skills."""
    skipped: tuple[Problem, ...] = ()
    """Invalid SKILL.md files, each with file, field and reason."""

    def __getitem__(self, name: str) -> Skill:
        try:
            return self.skills[name]
        except KeyError:
            raise KeyError(f"unknown skill {name!r}; registered: "
                           f"{', '.join(sorted(self.skills))}") from None

    def select(self, prompt: str) -> tuple[Skill, str] | None:
        """The skill whose trigger appears earliest in the prompt (ties: longer trigger, then
        skill name), and the trigger that matched; None when nothing matches."""
        best: tuple[int, int, str, Skill, str] | None = None
        for skill in self.skills.values():
            for trig in skill.triggers:
                m = _trigger(trig).search(prompt)
                if m:
                    key = (m.start(), -len(trig), skill.name, skill, trig)
                    if best is None or key[:3] < best[:3]:
                        best = key
        return (best[3], best[4]) if best else None


@functools.lru_cache(maxsize=1024)
def _trigger(trig: str) -> re.Pattern[str]:
    """`trig` as a whole word or phrase, any case (compiled once: `select` runs per request)."""
    return re.compile(rf"(?<!\w){re.escape(trig)}(?!\w)", re.IGNORECASE)


def discover(roots: list[Path], schemas: SchemaRegistry, base: Path | None = None) -> SkillRegistry:
    """Scan each root for */SKILL.md, validate, register; skip (with a reason) what fails."""
    skills: dict[str, Skill] = {}
    skipped: list[Problem] = []
    real_base = base.resolve() if base is not None else None  # once: each resolve lstats every part
    for root in roots:
        real_root = Path(root).resolve()
        for path in sorted(Path(root).glob("*/SKILL.md")):
            real = path.resolve()
            if not real.is_relative_to(real_root):
                # A symlink planted in the skill root must not pull in a file from elsewhere.
                shown = _shown(real_root, real_root, real_base) + f"/{path.parent.name}/{path.name}"
                skipped.append(Problem(shown, "-", f"a symlink leading outside {Path(root).name}/; "
                                                   "copy the skill into the folder itself"))
                continue
            shown = _shown(path, real, real_base)
            loaded = frontmatter.load(path, "skill_frontmatter_v1", schemas, shown)
            if isinstance(loaded, Problem):
                skipped.append(loaded)
                continue
            meta, body = loaded
            if not _folder_safe(meta["name"]):
                skipped.append(Problem(shown, "name", f"{meta['name']!r} cannot be a skill name: it "
                                       "must be usable as its folder name (no '/', '\\', '..', "
                                       "control characters)"))
                continue
            if meta["name"] in skills:
                skipped.append(Problem(shown, "name", f"skill {meta['name']!r} is already "
                                       f"registered from {skills[meta['name']].file}"))
                continue
            skills[meta["name"]] = Skill(
                name=meta["name"], description=meta["description"],
                triggers=tuple(meta.get("triggers") or ()),
                allowed_tools=tuple(meta.get("allowed-tools") or ()),
                file=shown, body=body, version=meta.get("version"))
    return SkillRegistry(skills, tuple(skipped))


def _folder_safe(name: str) -> bool:
    """A name that is one path component (skills/<name>/ is where %%skill writes it)."""
    return (bool(name) and name.isprintable() and name not in (".", "..")
            and not any(c in name for c in "/\\") and len(name.encode()) <= 255)


def _shown(path: Path, real: Path, real_base: Path | None) -> str:
    """`path` (resolved: `real`) relative to the resolved base, else as given."""
    if real_base is not None:
        try:
            return real.relative_to(real_base).as_posix()
        except ValueError:
            pass
    return path.as_posix()

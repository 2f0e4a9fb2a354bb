"""L5: Markdown skills; an invalid frontmatter is skipped, never registered."""

from dataclasses import dataclass
from pathlib import Path

import yaml

from .result import Err


@dataclass
class Skill:
    name: str
    triggers: list[str]
    allowed_tools: list[str]
    body: str


class SkillRegistry:
    def __init__(self, root: Path, schemas):
        self.skills: dict[str, Skill] = {}
        self.skipped: list[str] = []
        for path in sorted(Path(root).glob("*/SKILL.md")):
            text = path.read_text(encoding="utf-8")
            head, _, body = text.removeprefix("---\n").partition("\n---\n")
            try:
                meta = yaml.safe_load(head)
            except yaml.YAMLError:
                meta = None
            if not isinstance(meta, dict) or isinstance(schemas.validate(meta, "skill_frontmatter_v1"), Err):
                self.skipped.append(str(path))
                continue
            self.skills[meta["name"]] = Skill(meta["name"], meta.get("triggers", []),
                                              meta.get("allowed-tools", []), body)

    def select(self, prompt: str) -> Skill | None:
        words = prompt.lower().replace(",", " ").split()
        for skill in self.skills.values():
            if any(t in words for t in skill.triggers):
                return skill
        return None

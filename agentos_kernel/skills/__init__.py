"""L5 Markdown-SSOT Skill Runtime: discovering `skills/*/SKILL.md`, validating each frontmatter
against `skill_frontmatter_v1` (an invalid skill is skipped and reported), trigger matching,
and the allowed-tools scope handed to L1.

May import: `schemas`, `store`, `config` and the ground modules.
"""

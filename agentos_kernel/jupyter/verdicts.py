"""What `%replay --verify` and `%%skill` return: verdict views with a plain repr and a rich
`_repr_html_`, built only from reports (no paths, no times), so nbval compares them byte for
byte (display.py holds the other magics' views)."""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import Problem
from ..runs.rerun import RerunReport
from ..store.integrity import VerifyReport
from .layers import esc

_BOX = "border:1px solid #bbb;border-radius:4px;padding:6px 10px;margin:2px 0;font-family:monospace"


def _badge(ok: bool, text: str) -> str:
    color = "#1a7f37" if ok else "#cf222e"
    return (f'<span style="background:{color};color:#fff;padding:1px 6px;border-radius:3px">'
            f"{esc(text)}</span>")


@dataclass(frozen=True)
class RerunView:
    """What `%replay --verify` returns: the re-run's verdict against the recording, and the
    recorded log's own integrity (hash chain, envelope, torn tail) beside it."""

    report: RerunReport
    """Which new session re-ran it, and where (if anywhere) the logs first differ."""
    chain: VerifyReport | None = None
    """integrity.verify_log of the recorded log (None: not checked)."""

    @property
    def verified(self) -> bool:
        """The re-run matches and the recorded log verifies."""
        return self.report.verified and (self.chain is None or self.chain.ok)

    def _chain_line(self) -> str:
        return "" if self.chain is None else f"chain: {chain_verdict(self.chain)}"

    def __repr__(self) -> str:
        return "\n".join(x for x in (self.report.verdict(), self._chain_line()) if x)

    def _repr_html_(self) -> str:
        mark = "✓" if self.verified else "✗"
        chain = f"<br>{esc(self._chain_line())}" if self.chain is not None else ""
        return f'<div style="{_BOX}">{mark} {esc(self.report.verdict())}{chain}</div>'


def chain_verdict(report: VerifyReport) -> str:
    """The integrity verdict without the file's path (reprs hold no paths)."""
    if report.ok:
        return (f"intact ({report.events} events, head {report.head})" if report.chained
                else f"no chain to verify ({report.events} events)")
    return "; ".join(f"{f'line {f.line}: ' if f.line else ''}{f.kind}: {f.message}" for f in report.findings)


@dataclass(frozen=True)
class SkillCheck:
    """What `%%skill` returns: whether the SKILL.md was valid and registered, and if not the
    file and field at fault."""

    ok: bool
    """Valid and registered."""
    file: str
    """Where it is (or would be) written, relative to the workspace."""
    action: str
    """created | replaced | checked (dry run) | not written."""
    name: str | None = None
    """Skill id, when the frontmatter has one."""
    problem: Problem | None = None
    """File, field and message of the first problem."""
    triggers: tuple[str, ...] = ()
    """Words that select it."""
    allowed_tools: tuple[str, ...] = ()
    """Its tool scope."""
    notes: tuple[str, ...] = ()
    """Things worth knowing that are not errors (e.g. a tool that is not registered)."""

    def _lines(self) -> list[str]:
        if not self.ok:
            return [f"skill NOT registered ({self.action}): {self.problem}",
                    *(f"  note: {n}" for n in self.notes)]
        verb = "is valid" if self.action.startswith("checked") else "registered"
        lines = [f"skill {self.name!r} {verb} ({self.action}: {self.file})",
                 f"  triggers: {', '.join(self.triggers) or '(none: it is never selected)'}",
                 f"  allowed-tools: {', '.join(self.allowed_tools) or '(none)'}"]
        return lines + [f"  note: {n}" for n in self.notes]

    def __repr__(self) -> str:
        return "\n".join(self._lines())

    def _repr_html_(self) -> str:
        head, *rest = self._lines()
        badge = _badge(self.ok, "ok" if self.ok else "NOT registered")
        body = "".join(f"<br>{esc(x.strip())}" for x in rest)
        return f'<div class="agentos-skill" style="{_BOX}">{badge} {esc(head)}{body}</div>'

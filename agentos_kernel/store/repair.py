"""L4 integrity, the one write it allows: setting a torn final line aside (`agentos verify
--repair`). Only a log whose complete lines verify (integrity.verify_log) is touched; a
broken chain is evidence and is never repaired."""

from __future__ import annotations

from pathlib import Path

from .integrity import TORN_SUFFIX, VerifyReport


def repair_torn(report: VerifyReport) -> Path | None:
    """Set a torn final line aside: append its bytes to `<log>.torn` and cut the log back to
    its complete lines (a complete last line only gets its missing newline). Only a log whose
    complete lines verify (no blank line among them, not another session's) is touched: a
    broken chain is evidence, never repaired. Returns the `.torn` file written, else None."""
    broken = report.broken  # a blank line, a misplaced log: evidence too
    if broken is not None:
        raise ValueError(f"{report.path}: not repaired: {broken.kind} at line "
                         f"{broken.line}; only a torn final line is set aside")
    if report.torn is None:
        if report.unterminated:
            with report.path.open("ab") as f:
                f.write(b"\n")
        return None
    aside = report.path.with_name(report.path.name + TORN_SUFFIX)
    with report.path.open("r+b") as f:
        f.seek(report.torn.offset)
        torn = f.read()
        with aside.open("ab") as out:  # appended: an earlier repair's bytes are kept too
            out.write(torn + b"\n")
        f.truncate(report.torn.offset)
    return aside

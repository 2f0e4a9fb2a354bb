"""The `agentos` subcommands that check, grade and hand out (audit, conform, lab, grade, notebooks).

Each module named here has `add_commands(sub)` adding its own parsers (thin: parse, call
the library, print). Modules import nothing heavy at module level: `agentos --help`
builds every parser.
"""

from __future__ import annotations

import argparse
from importlib import import_module

COMMAND_MODULES: tuple[str, ...] = (
    "audit",
    "conform",
    "lab",
    "grade",
    "notebooks",
)


def add_commands(sub: argparse._SubParsersAction) -> None:
    """Add every grading subcommand to the `agentos` parser."""
    for name in COMMAND_MODULES:
        import_module(f"{__package__}.{name}").add_commands(sub)

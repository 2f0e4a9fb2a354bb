"""The start of a script that measures a widget's peak traced memory in a fresh interpreter
(the memory guards of tests/test_replay_ondemand.py and tests/test_diff_stream.py): a
workspace made at argv[1], the sizes from argv[2:]."""

from __future__ import annotations


def peak_script(imports: str, body: str) -> str:
    """`imports` (the widget's), the workspace and `sizes` made, then `body`."""
    return f"""
import contextlib, gc, io, sys, tracemalloc
from agentos_kernel.cli.main import main
from agentos_kernel.testing import write_long_session
{imports}
ws = sys.argv[1]
with contextlib.redirect_stdout(io.StringIO()):
    assert main(["init", ws]) == 0
sizes = [int(n) for n in sys.argv[2:]]
{body}"""

"""Build hook: the wheel carries the notebooks as students get them, never the lab sources.

A student's code can read the installed package (a lab kernel in the grader's sandbox may read
the Python installation; on a class hub every student's server runs on it), so the wheel
holds `agentos_kernel/_reference/notebooks` as the student copy: teaching notebooks, every lab
released (solutions stubbed, hidden tests removed), project labs without their solution, and a
manifest (agentos_kernel/labs/notebook/shipped.py). The sdist and a checkout keep the sources.
An editable install reads the repository's notebooks/ and needs none of this.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

TARGET = "agentos_kernel/_reference/notebooks"


class ReleasedNotebooks(BuildHookInterface):
    PLUGIN_NAME = "custom"

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        if self.target_name != "wheel" or version == "editable":
            return
        root = Path(self.root)
        sys.path.insert(0, str(root))  # the package being built, not one installed elsewhere
        try:
            from agentos_kernel.labs.notebook.shipped import write_released
        finally:
            sys.path.remove(str(root))
        self._tmp = tempfile.TemporaryDirectory(prefix="agentos-wheel-")
        out = write_released(root / "notebooks", Path(self._tmp.name) / "notebooks")
        build_data["force_include"][str(out)] = TARGET

    def finalize(self, version: str, build_data: dict[str, Any], artifact_path: str) -> None:
        tmp = getattr(self, "_tmp", None)
        if tmp is not None:
            tmp.cleanup()

"""`%load_ext agentos_kernel` in a fresh kernel loads no pandas, matplotlib or ipywidgets;
they load on first use. Checked in a real ipykernel (not an in-process shell, whose test
harness imports matplotlib itself)."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

HEAVY = ("pandas", "matplotlib", "ipywidgets")
PROBE = f"import json, sys; print(json.dumps(sorted(m for m in {HEAVY!r} if m in sys.modules)))"
# What the library needs only once it runs a request (the kernel may have loaded some itself).
LIBRARY = ("http.client", "ssl", "yaml", "jsonschema_rs", "agentos_kernel.kernel")
PROBE_LIBRARY = f"import json, sys; print(json.dumps(sorted(m for m in {LIBRARY!r} if m in sys.modules)))"


@pytest.fixture
def kernel(tmp_path: Path) -> Iterator[Any]:
    from nbval.kernel import CURRENT_ENV_KERNEL_NAME, start_new_kernel

    # TMPDIR inside tmp_path: the scratch workspace the kernel makes is removed with it.
    km, kc = start_new_kernel(kernel_name=CURRENT_ENV_KERNEL_NAME, cwd=str(tmp_path), startup_timeout=60,
                              env={**os.environ, "TMPDIR": str(tmp_path)})
    try:
        yield kc
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


def run(kc: Any, code: str) -> tuple[str, str, str]:
    """Execute one cell; (status, stdout, stderr)."""
    out: dict[str, str] = {"stdout": "", "stderr": ""}

    def hook(msg: dict[str, Any]) -> None:
        if msg["msg_type"] == "stream":
            out[msg["content"]["name"]] += msg["content"]["text"]

    reply = kc.execute_interactive(code, output_hook=hook, timeout=60)
    return reply["content"]["status"], out["stdout"], out["stderr"]


def test_load_ext_imports_nothing_heavy_until_used(kernel: Any) -> None:
    status, _, _ = run(kernel, PROBE)
    assert status == "ok"
    assert json.loads(run(kernel, PROBE)[1]) == [], "the kernel itself already imported one"
    before = json.loads(run(kernel, PROBE_LIBRARY)[1])
    assert run(kernel, "%load_ext agentos_kernel") == ("ok", "", "")
    assert json.loads(run(kernel, PROBE)[1]) == []
    assert json.loads(run(kernel, PROBE_LIBRARY)[1]) == before, "%load_ext loaded the library"
    setup = ("from agentos_kernel.testing import scratch_workspace\nws = scratch_workspace()\n"
             'run = %agent "hello, greet Ada"\nprint(run.ok)')
    assert run(kernel, setup) == ("ok", "True\n", "")
    assert json.loads(run(kernel, PROBE)[1]) == [], "%agent alone needs none of them"
    loaded = set(json.loads(run(kernel, PROBE_LIBRARY)[1])) - set(before)
    assert loaded == {"yaml", "jsonschema_rs", "agentos_kernel.kernel"}, "no HTTP client offline"
    assert run(kernel, "frame = %events s0001")[0] == "ok"
    assert json.loads(run(kernel, PROBE)[1]) == ["pandas"]
    assert run(kernel, "from agentos_kernel.jupyter import LayerStepper")[0] == "ok"
    assert "ipywidgets" in json.loads(run(kernel, PROBE)[1])

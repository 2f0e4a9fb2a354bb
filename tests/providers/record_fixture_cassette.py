"""Record the shipped fixture cassette, cassettes/anthropic-wire-hello.json.

    python -m tests.providers.record_fixture_cassette

The canonical request "hello, greet Ada" is run on a profile `provider: anthropic, model:
claude-sonnet-4-5` against the loopback server (tests/providers/loopback.py), which answers
in the Messages API's documented wire format with the scripted model behind it, and every
call is recorded. So the cassette is a real-format recording made offline: the requests
are exactly what the Anthropic adapter sends for this workspace, the answers are the
scripted model's (their `model` field says scripted-1). Re-record it after changing
agents/*.md, skills/ or the adapter's request shape: the cassette is keyed by the sha256 of
each request, so `tests/providers/test_fixture_cassette.py` fails until then.
"""

from __future__ import annotations

import contextlib
import io
import os
import tempfile
from pathlib import Path

import yaml

from agentos_kernel.cli.main import main as cli_main
from tests.providers.loopback import loopback_server

REPO = Path(__file__).resolve().parents[2]
CASSETTE = REPO / "cassettes" / "anthropic-wire-hello.json"
MODEL = "claude-sonnet-4-5"
PROMPT = "hello, greet Ada"
KEY_ENV = "AGENTOS_FIXTURE_RECORDING_KEY"


def record(dest: Path = CASSETTE) -> Path:
    with tempfile.TemporaryDirectory() as tmp, loopback_server() as server:
        ws = Path(tmp) / "ws"
        with contextlib.redirect_stdout(io.StringIO()):
            assert cli_main(["init", str(ws)]) == 0
        config = ws / "agentos.yaml"
        doc = yaml.safe_load(config.read_text(encoding="utf-8"))
        doc["profiles"]["anthropic"] = {"provider": "anthropic", "model": MODEL,
                                        "base_url": server.url, "api_key_env": KEY_ENV}
        config.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
        os.environ[KEY_ENV] = "not-a-real-key"
        dest.unlink(missing_ok=True)
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            code = cli_main(["--workspace", str(ws), "run", "--profile", "anthropic", "--record",
                             "--cassette", str(dest), PROMPT])
        if code != 0:
            raise SystemExit(f"recording failed:\n{out.getvalue()}")
    return dest


if __name__ == "__main__":
    print(f"recorded {record()}")

"""Profiles a user can add and go (issue 10): the commented real-model examples in
agentos.yaml (and so in `agentos init`), the key variable each adapter reads, and how
`agentos validate` reports a key that is not exported."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest
import yaml

from agentos_kernel import Ok
from agentos_kernel.config import load_config
from agentos_kernel.kernel import key_env_of
from agentos_kernel.providers.base import CompletionRequest
from agentos_kernel.providers.openai_compat import (
    LocalProvider,
    OpenAICompatProvider,
    OpenAIProvider,
)
from agentos_kernel.schemas.registry import SchemaRegistry
from agentos_kernel.workspace import reference_dir

from ..helpers import Cli
from .loopback import Loopback, loopback_server

EXAMPLES = re.compile(r"# --- real-model examples \(begin\) ---\n(.*?)\n\s*# --- real-model examples \(end\)",
                      re.S)
KEYS = ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "GEMINI_API_KEY")


def uncomment_examples(config: Path) -> dict[str, dict]:
    """Uncomment the example block of an agentos.yaml in place; return the example profiles."""
    text = config.read_text(encoding="utf-8")
    block = EXAMPLES.search(text)
    assert block, f"no real-model example block in {config}"
    live = "\n".join(re.sub(r"^(\s*)# ", r"\1", line) for line in block.group(1).splitlines())
    config.write_text(text.replace(block.group(1), live), encoding="utf-8")
    return yaml.safe_load(textwrap.dedent(live))


@pytest.fixture(autouse=True)
def _no_real_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for key in KEYS:
        monkeypatch.delenv(key, raising=False)


def test_init_ships_the_four_examples_and_they_load(workspace: Path) -> None:
    examples = uncomment_examples(workspace / "agentos.yaml")
    assert set(examples) == {"anthropic", "openai", "gemini", "local", "anthropic-offline"}
    config = load_config(workspace / "agentos.yaml", SchemaRegistry.load(reference_dir() / "schemas"))
    envs = {name: key_env_of(config.profile(name)) for name in examples}
    assert envs == {"anthropic": "ANTHROPIC_API_KEY", "openai": "OPENAI_API_KEY",
                    "gemini": "GEMINI_API_KEY", "local": None, "anthropic-offline": None}
    for name, body in examples.items():
        assert body["model"] and body["provider"] == name.replace("anthropic-offline", "cassette")
        assert ("api_key_env" in body) == (name in ("anthropic", "openai", "gemini"))


def test_validate_an_unset_key_is_a_warning_unless_that_profile_is_run(
        workspace: Path, cli: Cli, monkeypatch: pytest.MonkeyPatch) -> None:
    uncomment_examples(workspace / "agentos.yaml")
    code, out, _ = cli("validate", workspace)  # runs the default profile (scripted)
    assert code == 0, out
    warned = [line for line in out.splitlines() if line.startswith("warning:")]
    assert len(warned) == 3 and all("api_key_env" in w for w in warned)
    assert any("OPENAI_API_KEY is not set" in w and "--profile openai" in w for w in warned)
    code, out, _ = cli("validate", workspace, "--profile", "openai")
    assert code == 1
    assert "profiles.openai.api_key_env: OPENAI_API_KEY is not set" in out
    monkeypatch.setenv("OPENAI_API_KEY", "sk-canary-validate-0000000000")
    code, out, _ = cli("validate", workspace, "--profile", "openai")
    assert code == 0 and "canary" not in out
    code, out, _ = cli("validate", workspace, "--profile", "local")  # no key needed
    assert code == 0
    code, out, _ = cli("validate", workspace, "--profile", "nope")
    assert code == 1 and "no profile 'nope'" in out


def test_openai_compat_reads_openai_api_key_for_openais_endpoint_only() -> None:
    assert OpenAICompatProvider("m").api_key_env == "OPENAI_API_KEY"
    assert OpenAICompatProvider("m", base_url="http://127.0.0.1:8080/v1").api_key_env is None
    assert OpenAICompatProvider("m", base_url="http://127.0.0.1:8080/v1",
                                api_key_env="MY_KEY").api_key_env == "MY_KEY"
    assert OpenAIProvider("m", base_url="http://127.0.0.1:1/v1").api_key_env == "OPENAI_API_KEY"
    assert LocalProvider("m").api_key_env is None
    assert LocalProvider("m").url == "http://127.0.0.1:11434/v1/chat/completions"


def test_openai_endpoint_without_its_key_fails_before_any_call() -> None:
    got = OpenAICompatProvider("m").complete(CompletionRequest(({"role": "user", "content": "hi"},), "m"))
    assert not isinstance(got, Ok)
    assert "OPENAI_API_KEY" in got.error.message and not got.error.retryable


@pytest.fixture
def server() -> Loopback:
    with loopback_server() as srv:
        yield srv


def _budget(provider: OpenAICompatProvider, server: Loopback) -> dict:
    got = provider.complete(CompletionRequest(({"role": "user", "content": "hi"},), "m", max_tokens=64))
    assert isinstance(got, Ok), got
    return {k: v for k, v in server.requests[-1].body.items() if k.startswith("max_")}


def test_output_budget_field_per_endpoint(server: Loopback, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-budget-000000000000")
    url = server.url + "/v1"
    assert _budget(OpenAIProvider("m", base_url=url), server) == {"max_completion_tokens": 64}
    assert server.requests[-1].headers["authorization"] == "Bearer sk-test-budget-000000000000"
    assert _budget(LocalProvider("m", base_url=url), server) == {"max_tokens": 64}
    assert "authorization" not in server.requests[-1].headers
    assert _budget(OpenAICompatProvider("m", base_url=url), server) == {"max_tokens": 64}
    assert OpenAICompatProvider("m").budget_field == "max_completion_tokens"

"""The Provider contract (L2): every adapter must pass this one class.

To add an adapter, add one factory to PROVIDERS that builds it in three conditions:
"healthy", "flaky" (the first `transient` attempts of each call fail transiently, then
it answers) and "down" (every attempt fails). A real adapter does that against recorded
wire fixtures or a loopback server; tests never reach the network.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass, replace

import pytest

from agentos_kernel import Err, ErrorCode, Ok, SchemaRegistry
from agentos_kernel.errors import Result
from agentos_kernel.providers.anthropic import AnthropicProvider
from agentos_kernel.providers.base import (
    CompletionRequest,
    CompletionResponse,
    Provider,
    ProviderFault,
    Usage,
    complete_with_retries,
)
from agentos_kernel.providers.cassette_file import CassetteFile, request_sha256
from agentos_kernel.providers.faults import Fault, FaultPlan
from agentos_kernel.providers.gemini import GeminiProvider
from agentos_kernel.providers.openai_compat import LocalProvider, OpenAICompatProvider, OpenAIProvider
from agentos_kernel.providers.scripted import ScriptedProvider
from agentos_kernel.workspace import reference_dir
from tests.providers.loopback import Loopback, loopback_server

ROLE_SCHEMAS = ("lead_directive_v1", "plan_v1", "worker_report_v1", "review_result_v1")


@dataclass
class ProviderUnderTest:
    make: Callable[[str], Provider]
    """Build the adapter: "healthy", "flaky" or "down"."""
    transient: int
    """How many attempts fail in the "flaky" condition before one succeeds."""


def _scripted() -> ProviderUnderTest:
    def make(condition: str) -> Provider:
        times = {"healthy": 0, "flaky": 2, "down": -1}[condition]
        plan = FaultPlan(condition, (Fault("provider_error", None, times),)) if times else None
        return ScriptedProvider("scripted-1", None, plan, max_retries=2)

    return ProviderUnderTest(make, transient=2)


# The HTTP adapters run against one loopback server per module (started on first use,
# stopped by `_loopback_stopped`); each adapter built gets its own path prefix, so the
# server can fail "the first N attempts" of exactly that adapter.
_LOOPBACK: list[Loopback] = []
_SERVERS = ExitStack()
_PREFIX = itertools.count(1)


def _http(build: Callable[[str, Callable[[float], None]], Provider], status: int) -> ProviderUnderTest:
    def make(condition: str) -> Provider:
        if not _LOOPBACK:
            _LOOPBACK.append(_SERVERS.enter_context(loopback_server()))
        prefix = f"/{condition}-{next(_PREFIX)}"
        times = {"healthy": 0, "flaky": 2, "down": -1}[condition]
        if times:
            _LOOPBACK[0].fail_first[prefix] = (status, times)
        return build(_LOOPBACK[0].url + prefix, lambda s: None)  # back off without sleeping

    return ProviderUnderTest(make, transient=2)


def _openai_compat() -> ProviderUnderTest:
    return _http(lambda url, sleep: OpenAICompatProvider("scripted-1", base_url=url + "/v1",
                                                         max_retries=2, sleep=sleep), 503)


def _anthropic() -> ProviderUnderTest:
    def build(url: str, sleep: Callable[[float], None]) -> Provider:
        return _Keyed(AnthropicProvider("scripted-1", base_url=url, max_retries=2, sleep=sleep,
                                        api_key_env=TEST_KEY_ENV))

    return _http(build, 429)


def _openai() -> ProviderUnderTest:
    def build(url: str, sleep: Callable[[float], None]) -> Provider:
        return _Keyed(OpenAIProvider("scripted-1", base_url=url + "/v1", max_retries=2, sleep=sleep,
                                     api_key_env=TEST_KEY_ENV))

    return _http(build, 429)


def _gemini() -> ProviderUnderTest:
    def build(url: str, sleep: Callable[[float], None]) -> Provider:
        return _Keyed(GeminiProvider("scripted-1", base_url=url, max_retries=2, sleep=sleep,
                                     api_key_env=TEST_KEY_ENV))

    return _http(build, 503)


def _streamed(cls: type[AnthropicProvider | OpenAIProvider | GeminiProvider], path: str,
              status: int) -> Callable[[], ProviderUnderTest]:
    """The same adapter asking for its answer as a stream (the loopback server streams it)."""
    def build(url: str, sleep: Callable[[float], None]) -> Provider:
        return _Keyed(cls("scripted-1", base_url=url + path, max_retries=2, sleep=sleep,
                          api_key_env=TEST_KEY_ENV, stream=True))

    return lambda: _http(build, status)


def _local() -> ProviderUnderTest:
    return _http(lambda url, sleep: LocalProvider("scripted-1", base_url=url + "/v1",
                                                  max_retries=2, sleep=sleep), 500)


def _cassette() -> ProviderUnderTest:
    """Replays calls recorded from the scripted provider: "flaky" ones were recorded from a
    provider that needed 3 attempts (the cassette says so), "down" is an empty cassette."""

    def make(condition: str) -> Provider:
        if condition == "down":
            return CassetteFile("empty.json", calls=[])
        plan = (FaultPlan("flaky", (Fault("provider_error", None, 2),)) if condition == "flaky"
                else None)
        calls = []
        for req in requests(SchemaRegistry.load(reference_dir() / "schemas")):
            if plan is not None:
                plan = FaultPlan("flaky", plan.faults)  # two transient faults before each answer
            got = ScriptedProvider("scripted-1", None, plan, max_retries=2).complete(req).value
            calls.append({"request_sha256": request_sha256(req), "request": req.to_dict(),
                          "response": {**got.to_dict(), "attempts": got.attempts}})
        return CassetteFile(f"{condition}.json", calls=calls)

    return ProviderUnderTest(make, transient=2)


TEST_KEY_ENV = "AGENTOS_TEST_CONTRACT_KEY"


class _Keyed:
    """Sets the test key only while a call runs, so no other test sees it in the environment."""

    def __init__(self, inner: Provider) -> None:
        self.inner, self.name = inner, inner.name

    def complete(self, request: CompletionRequest) -> Result[CompletionResponse]:
        with pytest.MonkeyPatch.context() as mp:
            mp.setenv(TEST_KEY_ENV, "test-key")
            return self.inner.complete(request)


PROVIDERS: dict[str, Callable[[], ProviderUnderTest]] = {
    "scripted": _scripted,
    "openai_compat": _openai_compat,
    "anthropic": _anthropic,
    "openai": _openai,
    "gemini": _gemini,
    "local": _local,
    "cassette": _cassette,
    "anthropic_streamed": _streamed(AnthropicProvider, "", 529),
    "openai_streamed": _streamed(OpenAIProvider, "/v1", 429),
    "gemini_streamed": _streamed(GeminiProvider, "", 503),
}


@pytest.fixture(scope="module", autouse=True)
def _loopback_stopped() -> Iterator[None]:
    yield
    _SERVERS.close()
    _LOOPBACK.clear()


@pytest.fixture(params=sorted(PROVIDERS))
def put(request: pytest.FixtureRequest) -> ProviderUnderTest:
    return PROVIDERS[request.param]()


@pytest.fixture(scope="module")
def schemas() -> SchemaRegistry:
    return SchemaRegistry.load(reference_dir() / "schemas")


def request_for(schema_id: str, payload: dict, tools: tuple[dict, ...] | None = None) -> CompletionRequest:
    """A request shaped as the runtime sends it (system prompt naming the output schema)."""
    return CompletionRequest(
        messages=({"role": "system", "content": f"You are a role.\n\nRespond with JSON matching "
                                                 f"the schema `{schema_id}`."},
                  {"role": "user", "content": json.dumps(payload, sort_keys=True)}),
        model="scripted-1", tools=tools, max_tokens=512)


def echo_tool(schemas: SchemaRegistry) -> dict:
    return {"name": "echo", "description": "Return the given text.",
            "input_schema": schemas.resolved("tool_echo_in_v1")}


def requests(schemas: SchemaRegistry) -> list[CompletionRequest]:
    plan = {"steps": [{"id": "s1", "description": "echo"}], "risks": [], "needs_advisor": False,
            "schema_version": "v1"}
    report = {"output": "Hello, Ada!", "steps_completed": ["s1"], "schema_version": "v1"}
    asked = [
        request_for("lead_directive_v1", {"prompt": "hello, greet Ada"}),
        request_for("plan_v1", {"directive": {"intent": "greet Ada"}, "prompt": "hello, greet Ada"}),
        request_for("worker_report_v1", {"prompt": "hello, greet Ada", "plan": plan},
                    tools=(echo_tool(schemas),)),
        request_for("worker_report_v1", {"prompt": "hello, greet Ada", "plan": plan}),
        request_for("review_result_v1", {"plan": plan, "report": report}),
    ]
    # as the runtime sends them: with the role's schema for the provider's structured outputs
    return [replace(r, output_schema_id=sid, output_schema=schemas.resolved(sid))
            for r in asked for sid in [r.messages[0]["content"].rsplit("`", 2)[1]]]


class TestProviderContract:
    def test_requests_used_here_are_valid_v1_requests(self, schemas: SchemaRegistry) -> None:
        for req in requests(schemas):
            assert isinstance(schemas.validate(req.to_dict(), "completion_request_v1"), Ok)

    def test_returns_ok_completion_response_valid_v1(self, put: ProviderUnderTest,
                                                    schemas: SchemaRegistry) -> None:
        provider = put.make("healthy")
        assert isinstance(provider.name, str) and provider.name
        for req in requests(schemas):
            got = provider.complete(req)
            assert isinstance(got, Ok), got
            assert isinstance(got.value, CompletionResponse)
            checked = schemas.validate(got.value.to_dict(), "completion_response_v1")
            assert isinstance(checked, Ok), checked
            assert got.value.schema_version == "v1"

    def test_usage_is_integer_tokens_and_non_negative_cost(self, put: ProviderUnderTest,
                                                           schemas: SchemaRegistry) -> None:
        provider = put.make("healthy")
        for req in requests(schemas):
            usage = provider.complete(req).value.usage
            for n in (usage.input_tokens, usage.output_tokens):
                assert type(n) is int and n >= 0
            assert isinstance(usage.cost_usd, float | int) and usage.cost_usd >= 0
            assert usage.input_tokens > 0

    def test_same_request_same_response(self, put: ProviderUnderTest, schemas: SchemaRegistry) -> None:
        one, two = put.make("healthy"), put.make("healthy")
        for req in requests(schemas):
            first = one.complete(req).value.to_dict()
            assert one.complete(req).value.to_dict() == first
            assert two.complete(req).value.to_dict() == first

    def test_tool_calls_only_for_tools_offered(self, put: ProviderUnderTest,
                                               schemas: SchemaRegistry) -> None:
        provider = put.make("healthy")
        asked = 0
        for req in requests(schemas):
            resp = provider.complete(req).value
            offered = {t["name"] for t in req.tools or ()}
            assert {c.name for c in resp.tool_calls} <= offered
            if resp.tool_calls:
                asked += 1
                assert resp.finish_reason == "tool_use"
                for call in resp.tool_calls:
                    assert isinstance(schemas.validate(call.args, "tool_echo_in_v1"), Ok)
        assert asked, "no request offering a tool led to a tool call; the check above proved nothing"

    def test_role_outputs_are_json_matching_the_schema_asked_for(self, put: ProviderUnderTest,
                                                                 schemas: SchemaRegistry) -> None:
        provider = put.make("healthy")
        for req in requests(schemas):
            resp = provider.complete(req).value
            if resp.tool_calls:
                continue
            schema_id = req.messages[0]["content"].rsplit("`", 2)[1]
            assert isinstance(schemas.validate(json.loads(resp.text), schema_id), Ok), resp.text

    def test_transient_faults_are_retried_inside_the_adapter(self, put: ProviderUnderTest,
                                                             schemas: SchemaRegistry) -> None:
        got = put.make("flaky").complete(requests(schemas)[0])
        assert isinstance(got, Ok), got
        assert got.value.attempts == put.transient + 1 > 1
        healthy = put.make("healthy").complete(requests(schemas)[0])
        assert healthy.value.attempts == 1
        assert got.value.to_dict() == healthy.value.to_dict()

    def test_exhausted_retries_are_provider_error(self, put: ProviderUnderTest,
                                                  schemas: SchemaRegistry) -> None:
        got = put.make("down").complete(requests(schemas)[0])
        assert isinstance(got, Err)
        assert got.error.code == ErrorCode.PROVIDER_ERROR
        assert got.error.kind == "provider"
        assert got.error.message


# -- the adapter-boundary retry helper every adapter uses ----------------------------------------


def _attempts(outcomes: list[BaseException | None]) -> tuple[Callable, list[int]]:
    calls: list[int] = []
    ok = CompletionResponse("{}", (), "stop", Usage(1, 1), "m")

    def attempt(_req: CompletionRequest) -> CompletionResponse:
        calls.append(1)
        outcome = outcomes[len(calls) - 1]
        if outcome is not None:
            raise outcome
        return ok

    return attempt, calls


def test_retry_backs_off_exponentially_without_sleeping_for_real() -> None:
    attempt, calls = _attempts([ProviderFault("503"), TimeoutError(), None])
    slept: list[float] = []
    got = complete_with_retries(attempt, request_for("lead_directive_v1", {}), max_retries=3,
                                backoff_s=0.5, sleep=slept.append)
    assert isinstance(got, Ok) and got.value.attempts == 3
    assert slept == [0.5, 1.0]
    assert len(calls) == 3


def test_non_retryable_fault_is_not_retried() -> None:
    attempt, calls = _attempts([ProviderFault("bad request", retryable=False), None])
    got = complete_with_retries(attempt, request_for("lead_directive_v1", {}), max_retries=5)
    assert isinstance(got, Err) and got.error.code == ErrorCode.PROVIDER_ERROR
    assert got.error.retryable is False
    assert len(calls) == 1


def test_retries_are_bounded_by_max_retries() -> None:
    attempt, calls = _attempts([ProviderFault("503")] * 10)
    got = complete_with_retries(attempt, request_for("lead_directive_v1", {}), max_retries=2)
    assert isinstance(got, Err) and "3 attempt" in got.error.message
    assert len(calls) == 3


def test_other_exceptions_are_bugs_and_propagate() -> None:
    attempt, calls = _attempts([ValueError("adapter bug")])
    with pytest.raises(ValueError, match="adapter bug"):
        complete_with_retries(attempt, request_for("lead_directive_v1", {}), max_retries=2)
    assert len(calls) == 1

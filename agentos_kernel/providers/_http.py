"""What the HTTP adapters share: the key read from the env var the profile names at call
time, retries inside the adapter, redacted errors, streaming, and the v1 tool-message
helpers. The wire itself is _transport.py (no httpx object but the pooled client leaves it).

A streamed call (the profile's `stream`, default true) reads the answer's server-sent events
as they arrive, hands each piece of text to the session's sink (`on_text`: the runtime sets
it, so a provider never imports a display) and puts the events back together into the very
body the API sends unstreamed (each dialect's `Assembly`), which `from_wire` reads as
always: a streamed answer is the same CompletionResponse, plus how many chunks it came in."""

from __future__ import annotations

import json
import os
import random
import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from contextlib import closing
from dataclasses import replace
from typing import TYPE_CHECKING, Any, ClassVar

from ..errors import DomainError, Err, ErrorCode, Result
from ..store.redaction import Redactor
from ._transport import MAX_ANSWER_BYTES, WHOLE, client, decode_answer, post_json, post_sse, retry_after
from .base import (
    CompletionRequest,
    CompletionResponse,
    ProviderFault,
    StreamedText,
    TextSink,
    complete_with_retries,
)

if TYPE_CHECKING:
    import httpx

    from ..config import RuntimeProfile

def equal_jitter(wait: float) -> float:
    """A backoff wait spread over its upper half (Retry-After, when longer, still wins)."""
    return wait * random.uniform(0.5, 1.0)


def cost(prices: dict[str, float], input_tokens: int, output_tokens: int) -> float:
    """USD from the profile's price table; 0.0 when it names no prices (no guessed rates)."""
    usd = (input_tokens * prices.get("input_per_mtok", 0.0)
           + output_tokens * prices.get("output_per_mtok", 0.0)) / 1e6
    return round(usd, 8)


def tool_message(content: str) -> dict[str, Any]:
    """The runtime's role "tool" message body: {"id", "name", "result"|"error"} (roles.py)."""
    try:
        body = json.loads(content)
    except json.JSONDecodeError:
        body = None
    if not isinstance(body, dict) or not isinstance(body.get("id"), str):
        raise ProviderFault("a tool message is not the runtime's {id, name, result|error} JSON",
                            retryable=False)
    return body


def assistant_tool_calls(content: str) -> list[dict[str, Any]] | None:
    """The calls in an assistant message the runtime wrote as {"tool_calls": [...]}, else None."""
    if not content.startswith("{"):
        return None
    try:
        body = json.loads(content)
    except json.JSONDecodeError:
        return None
    if isinstance(body, dict) and set(body) == {"tool_calls"} and isinstance(body["tool_calls"], list):
        return body["tool_calls"]
    return None


def event_json(data: str) -> dict[str, Any]:
    """One streamed event's JSON object (a garbled one: the next attempt may stream clean)."""
    try:
        doc = json.loads(data)
    except json.JSONDecodeError:
        doc = None
    if not isinstance(doc, dict):
        raise ProviderFault(f"a streamed event is not a JSON object: {data[:120]!r}", retryable=True)
    return doc


class Assembly(ABC):
    """One streamed answer being put back together as the body the API sends unstreamed."""

    done: bool = False
    """The dialect's last event has arrived (a stream that stops before it was cut)."""

    @abstractmethod
    def add(self, event: str, data: str) -> str:
        """Take one server-sent event; return the answer text it adds (may be empty)."""

    @abstractmethod
    def doc(self) -> dict[str, Any]:
        """The whole answer as the unstreamed call's JSON body."""


class HttpAdapter(ABC):
    """What the HTTP adapters share: one endpoint, a key read from the env var the profile
    names, a price table, and retries inside the adapter. Subclasses say how a v1 request
    goes on the wire (`to_wire`), which headers carry the key (`auth_headers`) and how an
    answer comes back (`from_wire`)."""

    name: ClassVar[str]
    default_base_url: ClassVar[str]
    path: ClassVar[str]
    default_key_env: ClassVar[str | None] = None
    """None: no key unless the profile names one (a local server)."""

    def __init__(self, model: str, *, base_url: str | None = None, api_key_env: str | None = None,
                 prices: dict[str, float] | None = None, max_retries: int = 2,
                 timeout_s: float = 60.0, sleep: Callable[[float], None] = time.sleep,
                 redact_patterns: tuple[str, ...] = (), stream: bool = False) -> None:
        self.model = model
        self.url = (base_url or self.default_base_url).rstrip("/") + self.path
        self.api_key_env = api_key_env or self.key_env_default(base_url)
        self.prices = dict(prices or {})
        self.max_retries, self.timeout_s, self._sleep = max_retries, timeout_s, sleep
        self.redact_patterns = redact_patterns
        self.stream = stream
        """Ask for the answer as server-sent events and show its text as it arrives (a
        profile's `stream` defaults to true; an adapter built by hand, to false)."""
        self.on_text: TextSink | None = None
        """Where streamed text goes (set by the runtime for the session; None: nowhere)."""
        self._http: httpx.Client | None = None

    @property
    def http(self) -> httpx.Client:
        """The pooled client, made on first use (kept-alive connections, reused across this
        adapter's calls and threads; closed with the session)."""
        if self._http is None:
            self._http = client(self.timeout_s)
        return self._http

    @classmethod
    def key_env_default(cls, base_url: str | None) -> str | None:
        """The key variable used when the profile names none (None: the server wants no key)."""
        return cls.default_key_env

    @classmethod
    def key_env_of(cls, profile: RuntimeProfile) -> str | None:
        """The environment variable a run on `profile` reads its key from (None: no key)."""
        return profile.api_key_env or cls.key_env_default(profile.base_url)

    @classmethod
    def from_profile(cls, profile: RuntimeProfile) -> HttpAdapter:
        """The registry's factory (kernel.PROVIDERS). No FaultPlan: a real adapter's faults
        come from the wire (tests use a loopback server)."""
        return cls(profile.model, base_url=profile.base_url, api_key_env=profile.api_key_env,
                   prices=profile.prices, max_retries=profile.max_retries,
                   timeout_s=profile.timeout_s, redact_patterns=profile.redact_patterns,
                   stream=profile.stream)

    def complete(self, request: CompletionRequest) -> Result[CompletionResponse]:
        key = None
        if self.api_key_env:
            # Read at call time, not in the factory: a missing key is a logged provider
            # failure of this call, not a reason the workspace cannot load.
            key = os.environ.get(self.api_key_env)
            if not key:
                return Err(DomainError("provider", ErrorCode.PROVIDER_ERROR,
                                       f"environment variable {self.api_key_env} (api_key_env) is "
                                       "not set; export the API key there", retryable=False))
        headers = self.auth_headers(key)
        secrets = (key,) if key else ()

        tries = [0]

        def attempt(req: CompletionRequest) -> CompletionResponse:
            tries[0] += 1
            if self.stream:
                return self._streamed(req, headers, secrets, tries[0])
            doc = post_json(self.http, self.endpoint(req), self.to_wire(req), headers,
                            self.timeout_s, secrets=secrets)
            return self.from_wire(doc, req)

        got = complete_with_retries(attempt, request, max_retries=self.max_retries,
                                    sleep=self._sleep, jitter=equal_jitter)
        if isinstance(got, Err):  # an answer may echo the key or the prompt: redact it all
            redact = Redactor.of(secrets, self.redact_patterns)
            return Err(replace(got.error, message=redact(got.error.message)))
        return got

    def _streamed(self, req: CompletionRequest, headers: dict[str, str],
                  secrets: tuple[str, ...], attempt: int) -> CompletionResponse:
        url, body, whole = self.stream_endpoint(req), self.stream_wire(self.to_wire(req)), None
        assembly, chunks = self.assembly(req), 0
        # closing: a fault raised while reading (an error event) gives the connection back now
        with closing(post_sse(self.http, url, body, headers, self.timeout_s, secrets=secrets)) as events:
            for event, data in events:
                if event == WHOLE:  # the server ignored `stream`: its answer came whole
                    whole = decode_answer(data.encode("utf-8", "surrogateescape"), url, secrets)
                    break
                chunks += 1
                text = assembly.add(event, data)
                if text and self.on_text is not None:
                    self.on_text(StreamedText(text, attempt))
        if whole is None and not assembly.done:
            raise ProviderFault(f"the answer streamed from {url} stopped after {chunks} "
                                "chunk(s), before its last event", retryable=True)
        resp = self.from_wire(whole if whole is not None else assembly.doc(), req)
        if self.on_text is not None:
            self.on_text(StreamedText("" if chunks else resp.text, attempt, final=True))
        return replace(resp, chunks=chunks if whole is None else None)

    def close(self) -> None:
        """Close the kept connections (the session is over; a later call opens a new one)."""
        if self._http is not None:
            self._http.close()
            self._http = None

    def endpoint(self, request: CompletionRequest) -> str:
        """The URL this request is POSTed to (Gemini names the model in it)."""
        return self.url

    def stream_endpoint(self, request: CompletionRequest) -> str:
        """The URL a streamed request is POSTed to."""
        return self.endpoint(request)

    @abstractmethod
    def stream_wire(self, body: dict[str, Any]) -> dict[str, Any]:
        """The request body asking for a stream."""

    @abstractmethod
    def assembly(self, request: CompletionRequest) -> Assembly:
        """A fresh assembly for one streamed answer in this API's dialect."""

    @abstractmethod
    def auth_headers(self, key: str | None) -> dict[str, str]:
        """Headers that carry the key (None when no key is configured)."""

    @abstractmethod
    def to_wire(self, request: CompletionRequest) -> dict[str, Any]:
        """The v1 request in this API's wire format."""

    @abstractmethod
    def from_wire(self, doc: dict[str, Any], request: CompletionRequest) -> CompletionResponse:
        """This API's answer as a v1 CompletionResponse; ProviderFault when it is malformed."""


__all__ = ["MAX_ANSWER_BYTES", "Assembly", "HttpAdapter", "assistant_tool_calls", "cost",
           "event_json", "post_json", "retry_after", "tool_message"]

"""The Provider protocol and the v1 request/response values (completion_*_v1).

An adapter translates to and from its SDK, retries transient faults inside itself
(`complete_with_retries`), and returns `Err(PROVIDER_ERROR)` when retries run out. SDK
objects never leave the adapter. `redact` (redaction.py) runs on anything about to be logged.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Any, Protocol, runtime_checkable

from ..errors import DomainError, Err, ErrorCode, Ok, Result
from ..store.redaction import redact
from ..tools.dispatch import ToolCall
from .frozen_init import quick_init


@quick_init
@dataclass(frozen=True)
class Usage:
    """Token usage and cost of one completion."""

    input_tokens: int
    """Tokens sent."""
    output_tokens: int
    """Tokens received."""
    cost_usd: float = 0.0
    """Price of the call from the profile's price table."""


@quick_init
@dataclass(frozen=True)
class CompletionRequest:
    """The spec's CompletionRequest (completion_request_v1)."""

    messages: tuple[dict[str, str], ...]
    """Conversation: dicts with `role` and `content` strings."""
    model: str
    """Model name from the RuntimeProfile."""
    tools: tuple[dict[str, Any], ...] | None = None
    """Tool specs the model may call: name, description, input_schema."""
    max_tokens: int | None = None
    """Output budget."""
    temperature: float | None = None
    """Sampling temperature."""
    schema_version: str = "v1"
    """Contract version."""
    output_schema_id: str | None = field(default=None, compare=False)
    """Schema id the answer must match, for the provider's structured-output feature (not
    part of the v1 contract: the system prompt names the same schema)."""
    output_schema: dict[str, Any] | None = field(default=None, compare=False, repr=False)
    """That schema with its `$ref`s inlined (providers/structured.py translates it)."""

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"messages": [dict(m) for m in self.messages], "model": self.model}
        if self.tools is not None:
            d["tools"] = [dict(t) for t in self.tools]
        if self.max_tokens is not None:
            d["max_tokens"] = self.max_tokens
        if self.temperature is not None:
            d["temperature"] = self.temperature
        d["schema_version"] = self.schema_version
        return d


@quick_init
@dataclass(frozen=True)
class CompletionResponse:
    """The spec's CompletionResponse (completion_response_v1)."""

    text: str
    """The model's text (role outputs are JSON in here)."""
    tool_calls: tuple[ToolCall, ...]
    """Tools the model asks to call."""
    finish_reason: str
    """stop | tool_use | max_tokens | safety."""
    usage: Usage
    """Tokens and cost."""
    model: str
    """Model that answered."""
    schema_version: str = "v1"
    """Contract version."""
    attempts: int = field(default=1, compare=False)
    """How many tries the adapter needed (not part of the v1 contract; logged beside it)."""
    chunks: int | None = field(default=None, compare=False)
    """Server-sent events the answer arrived in when it was streamed, else None (not part
    of the v1 contract; logged beside it as `chunks`, docs/log-format.md)."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "text": self.text,
            "tool_calls": [{"id": c.id, "name": c.name, "args": c.args} for c in self.tool_calls],
            "finish_reason": self.finish_reason,
            "usage": {"input_tokens": self.usage.input_tokens,
                      "output_tokens": self.usage.output_tokens,
                      "cost_usd": self.usage.cost_usd},
            "model": self.model,
            "schema_version": self.schema_version,
        }


class Provider(Protocol):
    """A model backend. Every implementation passes tests/contract/test_provider.py."""

    # Read-only: an adapter may say it as a class attribute (HttpAdapter's ClassVar) or an
    # instance one; a plain `name: str` member would demand a settable instance attribute.
    @property
    def name(self) -> str:
        """Registry key used in profiles (`scripted`, `anthropic`, ...)."""

    def complete(self, request: CompletionRequest) -> Result[CompletionResponse]:
        """One completion, retried inside the adapter; `Err(PROVIDER_ERROR)` when it gives up."""


@dataclass(frozen=True)
class StreamedText:
    """A piece of a streamed answer's text, for live display only (the log gets the whole
    answer once, in `llm.response`)."""

    text: str
    """The new text (redacted before it reaches a sink: `HeldBack`)."""
    attempt: int
    """Which try of the call it belongs to: a retry starts the answer over."""
    final: bool = False
    """The answer is complete: nothing more comes for this call."""


TextSink = Callable[[StreamedText], None]
"""Who sees an answer's text as it arrives (a live trace, the live stepper)."""


@runtime_checkable
class Streaming(Protocol):
    """A provider that can stream: the runtime hands it a sink for the session (kernel.py);
    it never imports a display."""

    on_text: TextSink | None


@runtime_checkable
class StreamWatcher(Protocol):
    """A watcher (`Runtime.watching`) that also shows streamed text as it arrives."""

    def streamed(self, piece: StreamedText) -> None:
        """Show `piece` (redacted already)."""


class HeldBack:
    """A sink in front of another that redacts streamed text before passing it on. Redacting
    piece by piece would miss a key split across two pieces, so it redacts the whole answer
    so far and holds back its last `hold` characters and any trailing run without
    whitespace (where a key being spelled out would be) until more text, or the end,
    shows what they are."""

    def __init__(self, redact: Callable[[str], str], sink: TextSink, hold: int = 64) -> None:
        self.redact, self.sink, self.hold = redact, sink, hold
        self._raw, self._shown, self._attempt = "", 0, 0

    def __call__(self, piece: StreamedText) -> None:
        if piece.attempt != self._attempt:
            self._raw, self._shown, self._attempt = "", 0, piece.attempt
        self._raw += piece.text
        clean = self.redact(self._raw)
        upto = len(clean)
        if not piece.final:
            run = len(clean) - len(clean.split()[-1]) if clean and not clean[-1].isspace() \
                else len(clean)
            upto = min(len(clean) - self.hold, run, clean.find("-----BEGIN") % (len(clean) + 1))
        new = clean[self._shown:upto] if upto > self._shown else ""
        self._shown = max(self._shown, upto)
        if new or piece.final:
            self.sink(StreamedText(new, piece.attempt, piece.final))
        if piece.final:
            self._raw, self._shown, self._attempt = "", 0, 0


class LiveText:
    """A runtime's streamed text: each session's streaming provider publishes through a
    `HeldBack` (`attach`), whoever watches subscribes (`watching`)."""

    def __init__(self) -> None:
        self.sinks: list[TextSink] = []
        """Called with each piece of a streamed answer's text, redacted."""

    def attach(self, provider: object, redact: Callable[[str], str]) -> None:
        """Give `provider` its sink, if it streams (`redact`: the session log's)."""
        # What isinstance(provider, Streaming) decides for a protocol of one data member,
        # without its ~15 us on every request
        if hasattr(provider, "on_text"):
            held = HeldBack(redact, self._emit)
            # nobody watching (a batch run): no redaction pass per piece
            provider.on_text = lambda piece: held(piece) if self.sinks else None

    @contextmanager
    def watching(self, sink: TextSink | None) -> Iterator[None]:
        """`sink` gets every piece while inside (None: nothing to add)."""
        if sink is not None:
            self.sinks.append(sink)
        try:
            yield
        finally:
            if sink is not None:
                self.sinks.remove(sink)

    def _emit(self, piece: StreamedText) -> None:
        for sink in list(self.sinks):
            sink(piece)


MAX_RETRY_AFTER_S = 60.0
"""The longest Retry-After an adapter waits; a server asking for more ends the call."""


class ProviderFault(Exception):
    """Raised inside an adapter for one failed attempt; `retryable` says if another may work,
    `retry_after` how many seconds the server asked to wait first (Retry-After)."""

    def __init__(self, message: str, *, retryable: bool = True,
                 retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retryable = retryable
        self.retry_after = retry_after


def complete_with_retries(
    attempt: Callable[[CompletionRequest], CompletionResponse],
    request: CompletionRequest,
    *,
    max_retries: int,
    backoff_s: float = 0.5,
    sleep: Callable[[float], None] = lambda s: None,
    jitter: Callable[[float], float] = lambda w: w,
) -> Result[CompletionResponse]:
    """Run `attempt` up to 1 + max_retries times on retryable faults (TimeoutError counts),
    with exponential backoff, or the server's Retry-After when it asks for longer (up to
    MAX_RETRY_AFTER_S: asked for more, the call ends now rather than stall the run); the
    adapter boundary for L2's retry rule."""
    tries = 0
    while True:
        tries += 1
        try:
            resp = attempt(request)
        except (ProviderFault, TimeoutError) as exc:
            retryable = getattr(exc, "retryable", True)
            # jittered, so clients throttled together do not retry together
            wait = jitter(backoff_s * (2 ** (tries - 1)))
            asked = getattr(exc, "retry_after", None)
            why = "timed out" if isinstance(exc, TimeoutError) else str(exc)
            if retryable and tries <= max_retries and asked is not None:
                if asked > MAX_RETRY_AFTER_S:
                    return Err(DomainError(
                        "provider", ErrorCode.PROVIDER_ERROR,
                        f"gave up after {tries} attempt(s): {why}; the server asks to retry "
                        f"after {asked:g}s, more than the {MAX_RETRY_AFTER_S:g}s an adapter "
                        "waits", retryable=True))
                wait = max(wait, asked)
            if retryable and tries <= max_retries:
                sleep(wait)
                continue
            return Err(DomainError("provider", ErrorCode.PROVIDER_ERROR,
                                   f"gave up after {tries} attempt(s): {why}", retryable=retryable))
        return Ok(replace(resp, attempts=tries))


__all__ = [
    "MAX_RETRY_AFTER_S",
    "CompletionRequest",
    "CompletionResponse",
    "HeldBack",
    "LiveText",
    "Provider",
    "ProviderFault",
    "StreamWatcher",
    "StreamedText",
    "Streaming",
    "TextSink",
    "Usage",
    "complete_with_retries",
    "redact",
]

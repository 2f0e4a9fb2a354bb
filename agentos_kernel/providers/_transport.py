"""The one place the HTTP adapters touch the network: httpx, the client the official
Anthropic and OpenAI SDKs are built on. Every transport outcome becomes a ProviderFault (or
TimeoutError) so `complete_with_retries` decides about retries; only plain dicts and
strings leave this module.

One `httpx.Client` per adapter (`client()`): its pool keeps connections alive across calls
(one TLS handshake per session instead of one per call) and drops one the server closed
while idle before reusing it. The environment is read as httpx reads it (`trust_env`):
HTTPS_PROXY / HTTP_PROXY / ALL_PROXY minus NO_PROXY, and SSL_CERT_FILE / SSL_CERT_DIR for
the CA bundle. Timeouts are split: connecting is short (CONNECT_TIMEOUT_S: a host that does
not accept is down), every read, write and pool wait gets the profile's timeout_s, and a
whole answer, streamed or not, must arrive within timeout_s too.
"""

from __future__ import annotations

import email.utils
import json
import time
from collections.abc import Generator
from contextlib import AbstractContextManager
from datetime import UTC, datetime
from typing import Any

import httpx

from ..store.redaction import redact
from .base import ProviderFault

_SNIPPET = 300  # enough of an error body to act on, short enough for an event
MAX_ANSWER_BYTES = 32 << 20
"""A model answer larger than this is refused (a completion is kilobytes)."""
WHOLE = "agentos.whole"
"""The event `post_sse` yields, once, for an answer that came as one JSON body, not a stream."""
CONNECT_TIMEOUT_S = 10.0
"""Longest wait for a TCP (and TLS) connection; never more than the call's timeout_s."""


def client(timeout_s: float) -> httpx.Client:
    """The pooled client an adapter keeps for its session (closed by `HttpAdapter.close`)."""
    return httpx.Client(timeout=httpx.Timeout(timeout_s, connect=min(CONNECT_TIMEOUT_S, timeout_s)),
                        trust_env=True, follow_redirects=False)


def _check_url(url: str) -> None:
    parts = httpx.URL(url)
    if parts.scheme not in ("http", "https") or not parts.host:
        # only http(s): a profile typo must never read a file or reach another scheme
        raise ProviderFault(f"base_url must be http(s): {url}", retryable=False)


def _send(http: httpx.Client, url: str, body: dict[str, Any], headers: dict[str, str],
          accept: str) -> AbstractContextManager[httpx.Response]:
    _check_url(url)
    data = json.dumps(body, ensure_ascii=False).encode("utf-8")
    return http.stream("POST", url, content=data, headers={
        "content-type": "application/json", "accept": accept, **headers})


def post_json(http: httpx.Client, url: str, body: dict[str, Any], headers: dict[str, str],
              timeout_s: float, *, secrets: tuple[str, ...] = ()) -> dict[str, Any]:
    """POST `body` as JSON and return the decoded JSON object.

    429 and 5xx are retryable (rate limits and overloads pass); other 4xx are not (the same
    request would fail again). Connection errors are retryable; timeouts raise TimeoutError,
    which the retry helper counts as transient. Messages are redacted: the key must never
    reach a log through an echoed header or body."""
    deadline = time.monotonic() + timeout_s
    with _faults(url, timeout_s), _send(http, url, body, headers, "application/json") as resp:
        _refuse_error(resp, url, secrets)
        raw = _body(resp, url, deadline, timeout_s)
    return decode_answer(raw, url, secrets)


def decode_answer(raw: bytes, url: str, secrets: tuple[str, ...] = ()) -> dict[str, Any]:
    """A whole answer's body as a JSON object (ProviderFault when it is not one)."""
    try:
        doc = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        # A 200 with a non-JSON body is usually a proxy or gateway page: worth one more try.
        raise ProviderFault(redact(f"non-JSON answer from {url}: {raw[:_SNIPPET]!r}", secrets),
                            retryable=True) from None
    if not isinstance(doc, dict):
        raise ProviderFault(f"answer from {url} is not a JSON object", retryable=False)
    return doc


def post_sse(http: httpx.Client, url: str, body: dict[str, Any], headers: dict[str, str],
             timeout_s: float, *, secrets: tuple[str, ...] = ()) -> Generator[tuple[str, str]]:
    """POST `body` and yield the server-sent events of the answer as (event, data), as they
    arrive (html.spec.whatwg.org "server-sent events": `event:` and `data:` fields, a blank
    line ends an event, `:` lines are comments). timeout_s bounds each wait for more and,
    as for an unstreamed answer, the whole stream (a server dripping events could otherwise
    hold a call for ever). A connection cut mid-stream is a retryable ProviderFault; whether
    a stream that just stops was complete is the dialect's call (each has its own last
    event)."""
    deadline = time.monotonic() + timeout_s
    with _faults(url, timeout_s), _send(http, url, body, headers, "text/event-stream") as resp:
        _refuse_error(resp, url, secrets)
        if "text/event-stream" not in resp.headers.get("content-type", ""):
            # a server that ignores `stream` (some compatible ones do) sends the whole answer
            yield WHOLE, _body(resp, url, deadline, timeout_s).decode("utf-8", "surrogateescape")
            return
        size, event, data = 0, "", list[str]()
        for line in resp.iter_lines():
            if time.monotonic() > deadline:
                raise TimeoutError(f"the answer streamed from {url} took longer than {timeout_s}s")
            size += len(line) + 1
            if size > MAX_ANSWER_BYTES:
                raise ProviderFault(f"answer from {url} is larger than {MAX_ANSWER_BYTES} bytes",
                                    retryable=False)
            if not line:
                if data:
                    yield event or "message", "\n".join(data)
                event, data = "", []
            elif line.startswith(":"):
                continue
            else:
                name, _, value = line.partition(":")
                value = value[1:] if value.startswith(" ") else value
                if name == "event":
                    event = value
                elif name == "data":
                    data.append(value)
        if data:  # a last event without its blank line: the server closed right after it
            yield event or "message", "\n".join(data)


class _faults:
    """Map httpx's exceptions to the retry helper's terms (a context manager, so that the
    streaming generator maps what is raised while it is being read, too)."""

    def __init__(self, url: str, timeout_s: float) -> None:
        self.url, self.timeout_s = url, timeout_s

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: object) -> None:
        url = self.url
        if exc is None or not isinstance(exc, httpx.HTTPError):
            return
        if isinstance(exc, httpx.TimeoutException):
            raise TimeoutError(f"no answer from {url} within {self.timeout_s}s") from None
        if isinstance(exc, httpx.RemoteProtocolError):
            # A body or stream cut short, a garbled status line: the connection broke
            # mid-answer, which the next attempt may not repeat.
            raise ProviderFault(f"broken answer from {url}: {_reason(exc)}",
                                retryable=True) from None
        if isinstance(exc, httpx.ConnectError):
            raise ProviderFault(f"cannot reach {url}: {_reason(exc)}", retryable=True) from None
        # refused, reset, a proxy that failed, TLS: the next attempt may work
        raise ProviderFault(f"connection to {url} failed: {type(exc).__name__}: {_reason(exc)}",
                            retryable=True) from None


def _reason(exc: BaseException) -> str:
    return str(exc).split("\n", 1)[0][:_SNIPPET] or type(exc).__name__


def _refuse_error(resp: httpx.Response, url: str, secrets: tuple[str, ...]) -> None:
    """Raise the ProviderFault for an error status (the start of its body, redacted)."""
    if resp.status_code < 400:
        return
    after = retry_after(resp.headers.get("retry-after"))
    head = b""
    for chunk in resp.iter_bytes():
        head += chunk
        if len(head) >= _SNIPPET:
            break
    text = (head[:_SNIPPET] or b"(no body)").decode("utf-8", "replace")
    status = resp.status_code
    raise ProviderFault(redact(f"HTTP {status} from {url}: {text}", secrets),
                        retryable=status == 429 or status >= 500, retry_after=after)


def _body(resp: httpx.Response, url: str, deadline: float, timeout_s: float) -> bytes:
    """The whole answer within `timeout_s` of the request (the read timeout alone bounds
    each read, so a server dripping bytes could hold a call forever) and at most
    MAX_ANSWER_BYTES (a runaway answer is refused, not buffered)."""
    chunks, size = [], 0
    for chunk in resp.iter_bytes():
        size += len(chunk)
        if size > MAX_ANSWER_BYTES:
            raise ProviderFault(f"answer from {url} is larger than {MAX_ANSWER_BYTES} bytes",
                                retryable=False)
        if time.monotonic() > deadline:
            raise TimeoutError(f"answer from {url} took longer than {timeout_s}s")
        chunks.append(chunk)
    return b"".join(chunks)


def retry_after(value: str | None) -> float | None:
    """Seconds from a Retry-After header (delta-seconds or an HTTP date); None if absent or
    unreadable (then the adapter's own backoff applies)."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        return None
    return max(0.0, (when - datetime.now(UTC)).total_seconds())

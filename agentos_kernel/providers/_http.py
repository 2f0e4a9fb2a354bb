"""The one place the HTTP adapters touch the network: POST JSON with urllib, map every
transport outcome to a ProviderFault (or TimeoutError) so `complete_with_retries` decides
about retries, and hand back plain dicts only (no urllib object leaves this module)."""

from __future__ import annotations

import email.utils
import http.client
import json
import os
import time
import urllib.error
import urllib.request
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, ClassVar

from ..errors import DomainError, Err, ErrorCode, Result
from ..redaction import Redactor, redact
from .base import CompletionRequest, CompletionResponse, ProviderFault, complete_with_retries

if TYPE_CHECKING:
    from ..profile import RuntimeProfile

_SNIPPET = 300  # enough of an error body to act on, short enough for an event
MAX_ANSWER_BYTES = 32 << 20
"""A model answer larger than this is refused (a completion is kilobytes)."""


def post_json(url: str, body: dict[str, Any], headers: dict[str, str], timeout_s: float,
              *, secrets: tuple[str, ...] = ()) -> dict[str, Any]:
    """POST `body` as JSON and return the decoded JSON object.

    429 and 5xx are retryable (rate limits and overloads pass); other 4xx are not (the same
    request would fail again). Connection errors are retryable; timeouts raise TimeoutError,
    which the retry helper counts as transient. Messages are redacted: the key must never
    reach a log through an echoed header or body."""
    if not url.startswith(("http://", "https://")):
        # urllib would also open file:// and ftp:// URLs; a profile typo must not read files.
        raise ProviderFault(f"base_url must be http(s): {url}", retryable=False)
    data = json.dumps(body, ensure_ascii=False).encode("utf-8")
    req = urllib.request.Request(url, data=data, method="POST",
                                 headers={"content-type": "application/json", **headers})
    try:
        deadline = time.monotonic() + timeout_s
        with urllib.request.urlopen(req, timeout=timeout_s) as resp:
            raw = _body(resp, url, deadline, timeout_s)
    except urllib.error.HTTPError as exc:
        status = exc.code
        after = retry_after(exc.headers.get("retry-after") if exc.headers else None)
        text = _read(exc)
        retryable = status == 429 or status >= 500
        raise ProviderFault(redact(f"HTTP {status} from {url}: {text}", secrets),
                            retryable=retryable, retry_after=after) from None
    except TimeoutError:
        raise TimeoutError(f"no answer from {url} within {timeout_s}s") from None
    except http.client.HTTPException as exc:
        # A body cut short (IncompleteRead), a garbled status line: the connection broke
        # mid-answer, which the next attempt may not repeat.
        raise ProviderFault(f"broken answer from {url}: {type(exc).__name__}",
                            retryable=True) from None
    except urllib.error.URLError as exc:
        if isinstance(exc.reason, TimeoutError):
            raise TimeoutError(f"no answer from {url} within {timeout_s}s") from None
        raise ProviderFault(f"cannot reach {url}: {exc.reason}", retryable=True) from None
    except (ConnectionError, OSError) as exc:  # reset mid-read: the next attempt may work
        raise ProviderFault(f"connection to {url} failed: {exc}", retryable=True) from None
    try:
        doc = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        # A 200 with a non-JSON body is usually a proxy or gateway page: worth one more try.
        raise ProviderFault(redact(f"non-JSON answer from {url}: {raw[:_SNIPPET]!r}", secrets),
                            retryable=True) from None
    if not isinstance(doc, dict):
        raise ProviderFault(f"answer from {url} is not a JSON object", retryable=False)
    return doc


def _body(resp: Any, url: str, deadline: float, timeout_s: float) -> bytes:
    """The whole answer within `timeout_s` of the request (the socket timeout alone bounds
    each read, so a server dripping bytes could hold a call forever) and at most
    MAX_ANSWER_BYTES (a runaway answer is refused, not buffered)."""
    chunks, size = [], 0
    while chunk := resp.read1(65536):
        size += len(chunk)
        if size > MAX_ANSWER_BYTES:
            raise ProviderFault(f"answer from {url} is larger than {MAX_ANSWER_BYTES} bytes",
                                retryable=False)
        if time.monotonic() > deadline:
            raise TimeoutError(f"answer from {url} took longer than {timeout_s}s")
        chunks.append(chunk)
    if getattr(resp, "length", None):  # content-length promised more: the connection broke
        raise ProviderFault(f"answer from {url} was cut short ({size} bytes, "
                            f"{resp.length} missing)", retryable=True)
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


def _read(exc: urllib.error.HTTPError) -> str:
    try:
        return exc.read()[:_SNIPPET].decode("utf-8", "replace")
    except OSError:
        return "(no body)"
    finally:
        exc.close()


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
                 redact_patterns: tuple[str, ...] = ()) -> None:
        self.model = model
        self.url = (base_url or self.default_base_url).rstrip("/") + self.path
        self.api_key_env = api_key_env or self.key_env_default(base_url)
        self.prices = dict(prices or {})
        self.max_retries, self.timeout_s, self._sleep = max_retries, timeout_s, sleep
        self.redact_patterns = redact_patterns

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
                   timeout_s=profile.timeout_s, redact_patterns=profile.redact_patterns)

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

        def attempt(req: CompletionRequest) -> CompletionResponse:
            doc = post_json(self.endpoint(req), self.to_wire(req), headers, self.timeout_s,
                            secrets=secrets)
            return self.from_wire(doc, req)

        got = complete_with_retries(attempt, request, max_retries=self.max_retries,
                                    sleep=self._sleep)
        if isinstance(got, Err):  # an answer may echo the key or the prompt: redact it all
            redact = Redactor.of(secrets, self.redact_patterns)
            return Err(replace(got.error, message=redact(got.error.message)))
        return got

    def endpoint(self, request: CompletionRequest) -> str:
        """The URL this request is POSTed to (Gemini names the model in it)."""
        return self.url

    @abstractmethod
    def auth_headers(self, key: str | None) -> dict[str, str]:
        """Headers that carry the key (None when no key is configured)."""

    @abstractmethod
    def to_wire(self, request: CompletionRequest) -> dict[str, Any]:
        """The v1 request in this API's wire format."""

    @abstractmethod
    def from_wire(self, doc: dict[str, Any], request: CompletionRequest) -> CompletionResponse:
        """This API's answer as a v1 CompletionResponse; ProviderFault when it is malformed."""

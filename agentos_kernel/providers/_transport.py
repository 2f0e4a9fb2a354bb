"""The one place the HTTP adapters touch the network: POST JSON over a kept-alive
connection, map every transport outcome to a ProviderFault (or TimeoutError) so
`complete_with_retries` decides about retries, and hand back plain dicts only.

Standard library `http.client`, no httpx or SDK: a completion is one small JSON POST, and
what a client library would add (pooling, split timeouts) is the few lines of `Connections`.
Each adapter holds one pool: a connection per thread and host, reused across calls (one
TLS handshake per session instead of one per call). A kept connection the server closed
while idle is replaced once, silently: that is not a failed attempt. The connect timeout is
short (a host that does not accept is down); the read timeout is the profile's timeout_s,
which also bounds the whole answer.
"""

from __future__ import annotations

import base64
import email.utils
import http.client
import json
import ssl
import threading
import time
import urllib.parse
import urllib.request
from datetime import UTC, datetime
from typing import Any

from ..store.redaction import redact
from .base import ProviderFault

_SNIPPET = 300  # enough of an error body to act on, short enough for an event
MAX_ANSWER_BYTES = 32 << 20
"""A model answer larger than this is refused (a completion is kilobytes)."""
CONNECT_TIMEOUT_S = 10.0
"""Longest wait for a TCP (and TLS) connection; never more than the call's timeout_s."""
_STALE = (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError,
          ConnectionAbortedError)


class Connections:
    """Kept-alive connections by (scheme, host, port), one set per thread."""

    def __init__(self) -> None:
        self._local = threading.local()

    def _held(self) -> dict[tuple[str, str], http.client.HTTPConnection]:
        if not hasattr(self._local, "held"):
            self._local.held = {}
        return self._local.held

    def get(self, scheme: str, netloc: str, timeout_s: float
            ) -> tuple[http.client.HTTPConnection, bool]:
        """A connection to `netloc` and whether it is a kept one (else fresh, not connected).
        The environment's proxy (https_proxy / http_proxy, minus no_proxy) is honoured as
        urllib does: a CONNECT tunnel for https, the absolute URL as target for http."""
        held = self._held()
        conn = held.get((scheme, netloc))
        if conn is not None and conn.sock is not None:
            conn.sock.settimeout(timeout_s)
            return conn, True
        connect = min(CONNECT_TIMEOUT_S, timeout_s)
        proxy, auth = _proxy(scheme, netloc)
        if scheme == "https":
            conn = http.client.HTTPSConnection(proxy or netloc, timeout=connect,
                                               context=ssl.create_default_context())
            if proxy:
                conn.set_tunnel(netloc, headers=auth)
        else:
            conn = http.client.HTTPConnection(proxy or netloc, timeout=connect)
        conn.absolute_target, conn.proxy_headers = (  # type: ignore[attr-defined]
            bool(proxy) and scheme == "http", auth if scheme == "http" else {})
        held[(scheme, netloc)] = conn
        return conn, False

    def drop(self, scheme: str, netloc: str) -> None:
        conn = self._held().pop((scheme, netloc), None)
        if conn is not None:
            conn.close()

    def close(self) -> None:
        """Close this thread's connections."""
        for key in list(self._held()):
            self.drop(*key)


def _proxy(scheme: str, netloc: str) -> tuple[str | None, dict[str, str]]:
    """The proxy's host:port for `scheme`, and its Proxy-Authorization header if the proxy
    URL carries credentials; (None, {}) when no proxy applies."""
    found = urllib.request.getproxies().get(scheme)
    if not found or urllib.request.proxy_bypass(netloc.rsplit(":", 1)[0]):
        return None, {}
    parts = urllib.parse.urlsplit(found if "://" in found else f"http://{found}")
    auth = {}
    if parts.username:
        token = f"{urllib.parse.unquote(parts.username)}:{urllib.parse.unquote(parts.password or '')}"
        auth = {"Proxy-Authorization": "Basic " + base64.b64encode(token.encode()).decode()}
    host = parts.hostname or ""
    return (f"[{host}]" if ":" in host else host) + (f":{parts.port}" if parts.port else ""), auth


def post_json(url: str, body: dict[str, Any], headers: dict[str, str], timeout_s: float,
              *, secrets: tuple[str, ...] = (), pool: Connections | None = None) -> dict[str, Any]:
    """POST `body` as JSON and return the decoded JSON object.

    429 and 5xx are retryable (rate limits and overloads pass); other 4xx are not (the same
    request would fail again). Connection errors are retryable; timeouts raise TimeoutError,
    which the retry helper counts as transient. Messages are redacted: the key must never
    reach a log through an echoed header or body."""
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        # only http(s): a profile typo must never read a file or reach another scheme
        raise ProviderFault(f"base_url must be http(s): {url}", retryable=False)
    pool = pool or Connections()
    target = parts.path + (f"?{parts.query}" if parts.query else "")
    data = json.dumps(body, ensure_ascii=False).encode("utf-8")
    sent = {"content-type": "application/json", "accept": "application/json", **headers}
    deadline = time.monotonic() + timeout_s
    for _ in range(2):  # the second pass only replaces a kept connection found closed
        conn, kept = pool.get(parts.scheme, parts.netloc, timeout_s)
        try:
            if conn.sock is None:
                conn.connect()
                # connected: now the read timeout applies. connect() has just set sock; mypy keeps
                # the `is None` narrowing across that call, hence the ignore
                conn.sock.settimeout(timeout_s)  # type: ignore[attr-defined]
            via = conn.absolute_target  # type: ignore[attr-defined]
            conn.request("POST", url if via else target, body=data,
                         headers={**sent, **conn.proxy_headers})  # type: ignore[attr-defined]
            resp = conn.getresponse()
            status, after = resp.status, retry_after(resp.getheader("retry-after"))
            raw = _body(resp, url, deadline, timeout_s) if status < 400 else _snippet(resp)
        except _STALE as exc:
            pool.drop(parts.scheme, parts.netloc)
            if kept:
                continue
            raise ProviderFault(f"connection to {url} failed: {type(exc).__name__}",
                                retryable=True) from None
        except TimeoutError:
            pool.drop(parts.scheme, parts.netloc)
            raise TimeoutError(f"no answer from {url} within {timeout_s}s") from None
        except http.client.HTTPException as exc:
            # A body cut short (IncompleteRead), a garbled status line: the connection broke
            # mid-answer, which the next attempt may not repeat.
            pool.drop(parts.scheme, parts.netloc)
            raise ProviderFault(f"broken answer from {url}: {type(exc).__name__}",
                                retryable=True) from None
        except ProviderFault:
            pool.drop(parts.scheme, parts.netloc)
            raise
        except OSError as exc:  # refused, unreachable, TLS failure: the next attempt may work
            pool.drop(parts.scheme, parts.netloc)
            raise ProviderFault(f"cannot reach {url}: {exc.strerror or type(exc).__name__}",
                                retryable=True) from None
        if resp.will_close:
            pool.drop(parts.scheme, parts.netloc)
        break
    if status >= 400:
        raise ProviderFault(redact(f"HTTP {status} from {url}: {raw.decode('utf-8', 'replace')}",
                                   secrets),
                            retryable=status == 429 or status >= 500, retry_after=after)
    try:
        doc = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        # A 200 with a non-JSON body is usually a proxy or gateway page: worth one more try.
        raise ProviderFault(redact(f"non-JSON answer from {url}: {raw[:_SNIPPET]!r}", secrets),
                            retryable=True) from None
    if not isinstance(doc, dict):
        raise ProviderFault(f"answer from {url} is not a JSON object", retryable=False)
    return doc


def _body(resp: http.client.HTTPResponse, url: str, deadline: float, timeout_s: float) -> bytes:
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
    if resp.length:  # content-length promised more: the connection broke
        raise ProviderFault(f"answer from {url} was cut short ({size} bytes, "
                            f"{resp.length} missing)", retryable=True)
    resp.close()  # all read: the connection is free for the next request
    return b"".join(chunks)


def _snippet(resp: http.client.HTTPResponse) -> bytes:
    """The start of an error body; the rest is drained if small, so the connection can be
    kept, else the connection is given up (`will_close`)."""
    head = resp.read(_SNIPPET)
    if resp.length is not None and resp.length <= 64 * 1024:
        resp.read()
        resp.close()
    else:
        resp.will_close = True
    return head or b"(no body)"


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

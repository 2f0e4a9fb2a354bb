"""The adapters' transport (issue 10, on httpx since issue 23): one kept-alive connection
reused across calls, a connection the server dropped while idle replaced without costing an
attempt, a short connect timeout beside the profile's read timeout, and the environment's
proxy honoured (httpx's trust_env)."""

from __future__ import annotations

import json
import ssl
from collections.abc import Iterator
from pathlib import Path

import pytest
import trustme

from agentos_kernel import Ok, Runtime
from agentos_kernel.providers._transport import CONNECT_TIMEOUT_S
from agentos_kernel.providers.base import CompletionRequest
from agentos_kernel.providers.openai_compat import LocalProvider

from ..helpers import CANONICAL
from .loopback import Loopback, Reply, loopback_server
from .wire import add_real_profile

HELLO = CompletionRequest(
    ({"role": "system", "content": "Be brief.\n\nRespond with JSON matching the schema `lead_directive_v1`."},
     {"role": "user", "content": json.dumps({"prompt": "hello"})}), "scripted-1")


@pytest.fixture
def server() -> Iterator[Loopback]:
    with loopback_server() as srv:
        yield srv


def test_calls_reuse_one_connection(server: Loopback) -> None:
    provider = LocalProvider("scripted-1", base_url=server.url + "/v1")
    for _ in range(4):
        assert isinstance(provider.complete(HELLO), Ok)
    assert len({r.peer for r in server.requests}) == 1 and len(server.requests) == 4
    other = LocalProvider("scripted-1", base_url=server.url + "/v1")
    assert isinstance(other.complete(HELLO), Ok)
    assert server.requests[-1].peer != server.requests[0].peer  # each adapter its own


def test_an_error_answer_keeps_the_connection(server: Loopback) -> None:
    server.replies.append((503, {"error": "busy"}))
    provider = LocalProvider("scripted-1", base_url=server.url + "/v1", sleep=lambda s: None)
    got = provider.complete(HELLO)
    assert isinstance(got, Ok) and got.value.attempts == 2
    assert len({r.peer for r in server.requests}) == 1


def test_a_connection_dropped_while_idle_is_replaced_without_an_attempt(server: Loopback) -> None:
    provider = LocalProvider("scripted-1", base_url=server.url + "/v1", max_retries=0)
    answer = {"choices": [{"message": {"role": "assistant", "content": "{}"}, "finish_reason": "stop"}],
              "usage": {"prompt_tokens": 1, "completion_tokens": 1}}
    server.replies.append(Reply(200, answer, hang_up=True))
    assert isinstance(provider.complete(HELLO), Ok)
    server.wait_closed(1)  # dropped while the client is idle (not still being closed)
    got = provider.complete(HELLO)  # its kept connection is closed: a fresh one, same attempt
    assert isinstance(got, Ok) and got.value.attempts == 1
    assert len(server.requests) == 2 and server.requests[0].peer != server.requests[1].peer


def test_connect_timeout_is_short_and_read_timeout_is_the_profiles(server: Loopback) -> None:
    provider = LocalProvider("scripted-1", base_url=server.url + "/v1", timeout_s=90.0)
    assert isinstance(provider.complete(HELLO), Ok)
    split = provider.http.timeout
    assert split.connect == CONNECT_TIMEOUT_S < 90.0
    assert split.read == split.write == split.pool == 90.0
    short = LocalProvider("scripted-1", base_url=server.url + "/v1", timeout_s=2.0)
    assert short.http.timeout.connect == 2.0  # never longer than the call may take



def test_the_environments_http_proxy_is_used(server: Loopback, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("http_proxy", server.url)
    monkeypatch.setenv("no_proxy", "")
    monkeypatch.delenv("NO_PROXY", raising=False)
    # an unresolvable host: only the proxy can answer for it
    provider = LocalProvider("scripted-1", base_url="http://models.invalid/v1", max_retries=0)
    got = provider.complete(HELLO)
    assert isinstance(got, Ok), got
    assert server.requests[0].path == "http://models.invalid/v1/chat/completions"
    assert server.requests[0].headers["host"] == "models.invalid"


def test_https_trusts_the_ca_bundle_the_environment_names(tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    ca = trustme.CA()  # a CA of this test's own: no system store trusts it
    tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("127.0.0.1").configure_cert(tls)
    bundle = tmp_path / "ca.pem"
    ca.cert_pem.write_to_path(str(bundle))
    with loopback_server(tls) as srv:
        monkeypatch.setenv("SSL_CERT_FILE", "/etc/ssl/certs/ca-certificates.crt")
        distrusted = LocalProvider("scripted-1", base_url=srv.url + "/v1", max_retries=0)
        refused = distrusted.complete(HELLO)
        assert not isinstance(refused, Ok) and "CERTIFICATE_VERIFY_FAILED" in refused.error.message
        monkeypatch.setenv("SSL_CERT_FILE", str(bundle))
        trusted = LocalProvider("scripted-1", base_url=srv.url + "/v1", max_retries=0)
        assert isinstance(trusted.complete(HELLO), Ok)
        assert srv.url.startswith("https://") and len(srv.requests) == 1


def test_a_session_closes_its_adapters_connections(workspace: Path, server: Loopback) -> None:
    rt = Runtime.from_workspace(workspace, profile=add_real_profile(workspace, "local", server.url))
    session = rt.start_session(CANONICAL)
    with rt.guarded(session):
        assert isinstance(session.provider.complete(HELLO), Ok)
        http = session.provider.http  # kept while the session runs
        assert not http.is_closed
    assert http.is_closed and session.provider._http is None


def test_backoff_is_jittered_and_retry_after_still_wins(server: Loopback) -> None:
    slept: list[float] = []
    provider = LocalProvider("scripted-1", base_url=server.url + "/v1", max_retries=3,
                             sleep=slept.append)
    server.replies.extend([(503, {"error": "busy"})] * 2 + [Reply(429, {"error": "slow"},
                                                                  headers={"retry-after": "3"})])
    assert isinstance(provider.complete(HELLO), Ok)
    assert 0.25 <= slept[0] <= 0.5 and 0.5 <= slept[1] <= 1.0 and slept[2] == 3.0
    waits = set()
    for _ in range(5):
        server.replies.append((503, {"error": "busy"}))
        slept.clear()
        provider.complete(HELLO)
        waits.add(slept[0])
    assert len(waits) > 1  # spread, not one fixed delay for every client


def _answer(text: str) -> dict:
    return {"choices": [{"message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1}}


def test_a_10_mb_answer_is_read_and_a_runaway_one_refused(server: Loopback,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    provider = LocalProvider("scripted-1", base_url=server.url + "/v1", max_retries=2)
    big = "x" * (10 << 20)
    server.replies.append((200, _answer(big)))
    got = provider.complete(HELLO)
    assert isinstance(got, Ok) and len(got.value.text) == 10 << 20
    monkeypatch.setattr("agentos_kernel.providers._transport.MAX_ANSWER_BYTES", 1 << 20)
    server.replies.append((200, _answer("y" * (2 << 20))))
    refused = provider.complete(HELLO)
    assert not isinstance(refused, Ok) and "larger than 1048576 bytes" in refused.error.message
    assert refused.error.retryable is False and len(server.requests) == 2  # not retried
    assert isinstance(provider.complete(HELLO), Ok)  # the connection given up, a new one works

"""The cassette provider: answers a re-run's completion requests with the answers a
recorded session got, call by call (c1, c2, ...), and nothing else.

It is fail-closed: a request that differs from the recorded one (messages, model, tools of
the redacted v1 request), or a call the recording never made, gets a non-retryable
`Err(PROVIDER_ERROR)` "diverged at call cN: ..." instead of an invented answer. A recorded
`llm.error` is answered with the same error.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from ..errors import DomainError, Err, ErrorCode, Ok, Result
from ..schemas.jsondiff import first_difference, rename_session, short
from ..store.events import Event
from ..store.redaction import redact
from ..tools.dispatch import ToolCall
from .base import CompletionRequest, CompletionResponse, Usage

COMPARED = ("messages", "model", "tools")
"""Fields of the v1 request a re-run must send unchanged to get the recorded answer."""


@dataclass(frozen=True)
class _Call:
    """One recorded call: its request and either its response or its error."""

    request: dict[str, Any]
    response: dict[str, Any] | None = None
    error: dict[str, Any] | None = None
    retryable: bool = False


class CassetteProvider:
    """A provider that plays back one recorded session (`CassetteProvider.from_events`)."""

    name = "cassette"

    def __init__(self, calls: dict[str, _Call]) -> None:
        self._calls = calls
        self._n = 0

    @classmethod
    def from_events(cls, events: Iterable[Event], *, rename: tuple[str, str] | None = None
                    ) -> CassetteProvider:
        """The calls of a recorded log. `rename=(old, new)` puts the re-run's session id
        where the recording had its own, as a model asked in the new session would."""
        events = list(events)
        # A failed call's retryable flag is only on the domain.error that follows its llm.error.
        retryable = {e.parent_id: bool(e.payload.get("retryable")) for e in events
                     if e.type == "domain.error" and e.parent_id is not None}
        calls: dict[str, _Call] = {}
        request_ids: dict[str, str] = {}
        for e in events:
            p = rename_session(e.payload, *rename) if rename else e.payload
            cid = p.get("call_id") if isinstance(p, dict) else None
            if e.type == "llm.request" and cid:
                calls[cid] = _Call({k: p[k] for k in COMPARED if k in p})
                request_ids[cid] = e.id
            elif e.type == "llm.response" and cid in calls:
                calls[cid] = _Call(calls[cid].request, response=p)
            elif e.type == "llm.error" and cid in calls:
                calls[cid] = _Call(calls[cid].request, error=p,
                                   retryable=retryable.get(request_ids[cid], False))
        return cls(calls)

    def advance(self, calls: int) -> None:
        """Start after the first `calls` recorded calls: a re-run fork copies its log's
        prefix, so the prefix's calls are never made again (fork.py)."""
        self._n = calls

    def complete(self, request: CompletionRequest) -> Result[CompletionResponse]:
        self._n += 1
        cid = f"c{self._n}"
        recorded = self._calls.get(cid)
        if recorded is None:
            return _diverged(cid, f"the recorded run made {len(self._calls)} call(s); this is one more")
        sent = redact(request.to_dict())  # the log holds the redacted request: compare like with like
        found = first_difference(recorded.request, {k: sent[k] for k in COMPARED if k in sent})
        if found is not None:
            path, was, now = found
            return _diverged(cid, f"request {path}: recorded {short(was)} new {short(now)}")
        if recorded.error is not None:
            return Err(DomainError("provider", str(recorded.error.get("code", ErrorCode.PROVIDER_ERROR)),
                                   str(recorded.error.get("message", "")), retryable=recorded.retryable))
        if recorded.response is None:
            return _diverged(cid, "the recording has its request but no answer (the run ended there)")
        return Ok(_response(recorded.response))


def _response(p: dict[str, Any]) -> CompletionResponse:
    usage = p.get("usage", {})
    return CompletionResponse(
        text=p["text"],
        tool_calls=tuple(ToolCall(c["id"], c["name"], c["args"]) for c in p.get("tool_calls", [])),
        finish_reason=p["finish_reason"],
        usage=Usage(usage.get("input_tokens", 0), usage.get("output_tokens", 0),
                    usage.get("cost_usd", 0.0)),
        model=p["model"], schema_version=p.get("schema_version", "v1"),
        attempts=p.get("attempts", 1))


def _diverged(cid: str, why: str) -> Err:
    return Err(DomainError("provider", ErrorCode.PROVIDER_ERROR, f"diverged at call {cid}: {why}",
                           retryable=False))


__all__ = ["COMPARED", "CassetteProvider"]

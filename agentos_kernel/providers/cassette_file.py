"""Record once, replay for a whole class: a cassette file of completion calls keyed by the
sha256 of the canonical v1 request.

`Recording` wraps a live provider (`agentos run --profile P --record`) and writes every
answered call to the cassette; `provider: cassette` (`CassetteFile`) answers from it,
offline. A request the cassette does not hold is a non-retryable PROVIDER_ERROR naming the
request hash and the file, never a live call: nothing in this module opens a connection.

The file is one JSON document (readable, diffable, small enough to ship with a course):
    {"format": "agentos-cassette-v1", "calls": [{"request_sha256", "request", "response"}]}
Requests are stored redacted (the same built-in patterns the log uses) and hashed redacted,
so a key or card number in a prompt never reaches the file and replay still finds it.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..errors import DomainError, Err, ErrorCode, Ok, Result
from ..store.events import canonical
from ..store.redaction import redact
from .base import CompletionRequest, CompletionResponse, Provider
from .cassette import _response

FORMAT = "agentos-cassette-v1"


def request_sha256(request: CompletionRequest) -> str:
    """The cassette key: sha256 of the canonical (sorted-key JSON), redacted v1 request."""
    return hashlib.sha256(canonical(redact(request.to_dict()))).hexdigest()


class CassetteError(ValueError):
    """A cassette file that cannot be read; the message names the file and the fix."""


def load_calls(path: Path) -> list[dict[str, Any]]:
    """The recorded calls of a cassette file (CassetteError names what is wrong)."""
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise CassetteError(f"cassette {path} does not exist; record it first: agentos run "
                            f"--profile <a real profile> --record {path} \"...\"") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CassetteError(f"cassette {path} is not readable JSON ({exc})") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT or not isinstance(doc.get("calls"), list):
        raise CassetteError(f"cassette {path} is not an {FORMAT} file (expected "
                            '{"format": "' + FORMAT + '", "calls": [...]})')
    for i, call in enumerate(doc["calls"]):
        if not (isinstance(call, dict) and isinstance(call.get("request_sha256"), str)
                and isinstance(call.get("response"), dict)):
            raise CassetteError(f"cassette {path}: calls[{i}] needs request_sha256 and response")
    return doc["calls"]


class CassetteFile:
    """`provider: cassette`: answers each request with the response recorded for its hash.
    The same request asked again gets the next answer recorded for it (or the last one)."""

    name = "cassette"

    def __init__(self, path: Path | str, calls: list[dict[str, Any]] | None = None) -> None:
        """Read the cassette at `path`, or take `calls` already read (`path` then only names it)."""
        self.path = Path(path)
        self.calls = load_calls(self.path) if calls is None else calls
        self._answers: dict[str, list[dict[str, Any]]] = {}
        for call in self.calls:
            self._answers.setdefault(call["request_sha256"], []).append(call["response"])
        self._asked: dict[str, int] = {}

    def complete(self, request: CompletionRequest) -> Result[CompletionResponse]:
        key = request_sha256(request)
        answers = self._answers.get(key)
        if not answers:
            models = sorted({str(c.get("request", {}).get("model")) for c in self.calls})
            hint = (f"; it was recorded with model {', '.join(models)} and this request asks "
                    f"for {request.model!r}" if request.model not in models else "")
            return Err(DomainError(
                "provider", ErrorCode.PROVIDER_ERROR,
                f"cassette miss: no recorded answer for request sha256 {key} in {self.path} "
                f"({len(self.calls)} call(s) recorded{hint}); record this request with "
                f"`agentos run --profile <real profile> --record {self.path}`", retryable=False))
        n = self._asked[key] = self._asked.get(key, 0) + 1
        return Ok(_response(answers[min(n, len(answers)) - 1]))


class Recording:
    """Wraps a live provider: every answered call is added to the cassette file at once
    (written whole to a temp file and renamed, so an interrupted run leaves it readable).
    `scrub` redacts what is stored (the session log's redactor: its key and patterns too)."""

    def __init__(self, inner: Provider, path: Path | str,
                 scrub: Callable[[Any], Any] = redact) -> None:
        self.inner, self.path, self.scrub = inner, Path(path), scrub
        self.name = inner.name
        self.calls = load_calls(self.path) if self.path.exists() else []

    def complete(self, request: CompletionRequest) -> Result[CompletionResponse]:
        got = self.inner.complete(request)
        if isinstance(got, Ok):
            self.calls.append({"request_sha256": request_sha256(request),
                               "request": self.scrub(request.to_dict()),
                               "response": self.scrub({**got.value.to_dict(),
                                                       "attempts": got.value.attempts})})
            self._write()
        return got

    def close(self) -> None:
        """Close the wrapped provider's connections, if it keeps any."""
        close = getattr(self.inner, "close", None)
        if callable(close):
            close()

    def _write(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        data = json.dumps({"format": FORMAT, "calls": self.calls}, indent=1, ensure_ascii=False)
        fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=".cassette-", suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(data + "\n")
            os.replace(tmp, self.path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise


__all__ = ["FORMAT", "CassetteError", "CassetteFile", "Recording", "load_calls", "request_sha256"]

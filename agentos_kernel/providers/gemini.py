"""The Gemini adapter (`provider: gemini`): generateContent over HTTP.

POST {base_url}/v1beta/models/{model}:generateContent with the key in `x-goog-api-key`.
The v1 conversation maps onto `contents` (roles user/model), the system prompt onto
`systemInstruction`, tool calls onto `functionCall` parts and tool results onto
`functionResponse` parts in a user turn. A role's output schema goes out as
`generationConfig.responseSchema` (structured.py) unless tools are offered on that turn.

Streamed: POST ...:streamGenerateContent?alt=sse; each `data:` event is a whole
GenerateContentResponse holding the next parts (text in pieces, a functionCall whole), the
last one with the candidate's finishReason and the usage totals.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from ..tools.dispatch import ToolCall
from ._http import Assembly, HttpAdapter, assistant_tool_calls, cost, event_json, tool_message
from .base import CompletionRequest, CompletionResponse, ProviderFault, Usage
from .structured import gemini_schema

DEFAULT_BASE_URL = "https://generativelanguage.googleapis.com"
FINISH = {"STOP": "stop", "MAX_TOKENS": "max_tokens", "SAFETY": "safety", "RECITATION": "safety",
          "BLOCKLIST": "safety", "PROHIBITED_CONTENT": "safety", "SPII": "safety",
          "IMAGE_SAFETY": "safety"}


class GeminiProvider(HttpAdapter):
    """generateContent with the key from the env var the profile names (GEMINI_API_KEY)."""

    name = "gemini"
    default_base_url = DEFAULT_BASE_URL
    path = "/v1beta/models"
    default_key_env = "GEMINI_API_KEY"

    def __init__(self, model: str, **kw: Any) -> None:
        super().__init__(model, **kw)
        self.signatures: dict[str, str] = {}
        """Call id -> the thoughtSignature its functionCall part came with. Gemini 3 models
        refuse a conversation whose functionCall parts lost theirs (HTTP 400), and the v1
        messages have no place for it, so the adapter keeps it for the session."""

    def endpoint(self, request: CompletionRequest) -> str:
        return f"{self.url}/{request.model}:generateContent"

    def stream_endpoint(self, request: CompletionRequest) -> str:
        return f"{self.url}/{request.model}:streamGenerateContent?alt=sse"

    def stream_wire(self, body: dict[str, Any]) -> dict[str, Any]:
        return body  # the endpoint, not the body, asks for a stream

    def assembly(self, request: CompletionRequest) -> Assembly:
        return Responses()

    def auth_headers(self, key: str | None) -> dict[str, str]:
        return {"x-goog-api-key": key} if key else {}

    def to_wire(self, request: CompletionRequest) -> dict[str, Any]:
        return to_wire(request, self.signatures)

    def from_wire(self, doc: dict[str, Any], request: CompletionRequest) -> CompletionResponse:
        usage = doc.get("usageMetadata") or {}
        tin = int(usage.get("promptTokenCount") or 0)
        # thinking tokens are billed as output
        tout = int(usage.get("candidatesTokenCount") or 0) + int(usage.get("thoughtsTokenCount") or 0)
        model = str(doc.get("modelVersion") or request.model)
        candidates = doc.get("candidates")
        if not candidates:
            if (doc.get("promptFeedback") or {}).get("blockReason"):  # the prompt was blocked
                return CompletionResponse("", (), "safety", Usage(tin, tout, cost(self.prices, tin, tout)),
                                          model)
            raise ProviderFault("generateContent answer has no candidates", retryable=False)
        first = candidates[0]
        parts = (first.get("content") or {}).get("parts") or []
        if not isinstance(parts, list):
            raise ProviderFault("generateContent candidate parts is not a list", retryable=False)
        text = "".join(p.get("text", "") for p in parts if isinstance(p, dict) and not p.get("thought"))
        calls = tuple(_call(p["functionCall"], i, request) for i, p in enumerate(parts)
                      if isinstance(p, dict) and "functionCall" in p)
        fc_parts = [p for p in parts if isinstance(p, dict) and "functionCall" in p]
        for call, part in zip(calls, fc_parts, strict=True):
            if isinstance(part.get("thoughtSignature"), str):
                self.signatures[call.id] = part["thoughtSignature"]
        reason = "tool_use" if calls else FINISH.get(first.get("finishReason") or "STOP", "stop")
        return CompletionResponse(text=text, tool_calls=calls, finish_reason=reason,
                                  usage=Usage(tin, tout, cost(self.prices, tin, tout)), model=model)


class Responses(Assembly):
    """A streamed generateContent answer put back together: text pieces joined into one
    part (thought text apart), other parts kept whole, the last finishReason and usage."""

    def __init__(self) -> None:
        self.head: dict[str, Any] = {}
        self.parts: list[dict[str, Any]] = []
        self.finish: str | None = None

    def add(self, event: str, data: str) -> str:
        doc = event_json(data)
        if "error" in doc:
            raise ProviderFault(f"the stream ended in an error: {doc['error']}", retryable=True)
        for key in ("usageMetadata", "modelVersion", "promptFeedback", "responseId"):
            if key in doc:
                self.head[key] = doc[key]
        if (doc.get("promptFeedback") or {}).get("blockReason"):
            self.done = True
        first = (doc.get("candidates") or [{}])[0]
        if first.get("finishReason"):
            self.finish, self.done = first["finishReason"], True
        shown = []
        for part in (first.get("content") or {}).get("parts") or ():
            last = self.parts[-1] if self.parts else None
            if set(part) <= {"text", "thought"} and last is not None and set(last) <= {"text", "thought"} \
                    and bool(last.get("thought")) == bool(part.get("thought")):
                last["text"] += part.get("text", "")
            else:
                self.parts.append(dict(part))
            if "text" in part and not part.get("thought"):
                shown.append(str(part["text"]))
        return "".join(shown)

    def doc(self) -> dict[str, Any]:
        if not self.parts and self.finish is None:
            return dict(self.head)  # a blocked prompt: no candidates, as unstreamed
        candidate = {"content": {"role": "model", "parts": self.parts}, "index": 0,
                     "finishReason": self.finish}
        return {**self.head, "candidates": [candidate]}


def _call(fc: Any, index: int, request: CompletionRequest) -> ToolCall:
    if not isinstance(fc, dict) or not fc.get("name") or not isinstance(fc.get("args", {}), dict):
        raise ProviderFault("functionCall part without a name or object args", retryable=False)
    args = fc.get("args") or {}
    call_id = fc.get("id")
    if not call_id:
        # Older models send no id: derive one from the turn, so the same request gets the
        # same id (replay) and two calls in one conversation do not share one.
        seed = json.dumps([len(request.messages), index, fc["name"], args], sort_keys=True)
        call_id = "gc_" + hashlib.sha256(seed.encode()).hexdigest()[:16]
    return ToolCall(str(call_id), str(fc["name"]), args)


def to_wire(request: CompletionRequest, signatures: dict[str, str] | None = None) -> dict[str, Any]:
    """completion_request_v1 -> a generateContent request body; `signatures` are the
    thoughtSignatures of earlier function calls, by call id, sent back with them."""
    system = "\n\n".join(m["content"] for m in request.messages if m["role"] == "system")
    names: dict[str, str] = {}
    contents: list[dict[str, Any]] = []
    for m in request.messages:
        if m["role"] == "system":
            continue
        turn = _turn(m, names, signatures or {})
        if contents and contents[-1]["role"] == turn["role"]:  # keep user/model alternating
            contents[-1]["parts"] += turn["parts"]
        else:
            contents.append(turn)
    body: dict[str, Any] = {"contents": contents}
    if system:
        body["systemInstruction"] = {"parts": [{"text": system}]}
    if request.tools:
        body["tools"] = [{"functionDeclarations": [
            {"name": t["name"], "description": t.get("description", ""),
             "parameters": gemini_schema(t.get("input_schema", {"type": "object"}))}
            for t in request.tools]}]
    config: dict[str, Any] = {}
    if request.max_tokens is not None:
        config["maxOutputTokens"] = request.max_tokens
    if request.temperature is not None:
        config["temperature"] = request.temperature
    if request.output_schema is not None and not request.tools:
        config["responseMimeType"] = "application/json"
        config["responseSchema"] = gemini_schema(request.output_schema)
    if config:
        body["generationConfig"] = config
    return body


def _turn(m: dict[str, str], names: dict[str, str], signatures: dict[str, str]) -> dict[str, Any]:
    role, content = m["role"], m["content"]
    if role == "tool":
        body = tool_message(content)
        name = body.get("name") or names.get(body["id"], "tool")
        response = {"result": body["result"]} if "result" in body else {"error": body.get("error")}
        return {"role": "user", "parts": [{"functionResponse": {"name": name, "response": response}}]}
    if role == "assistant":
        calls = assistant_tool_calls(content)
        if calls is not None:
            names.update({c["id"]: c["name"] for c in calls})
            return {"role": "model", "parts": [
                {"functionCall": {"name": c["name"], "args": c.get("args", {})},
                 **({"thoughtSignature": signatures[c["id"]]} if c["id"] in signatures else {})}
                for c in calls]}
        return {"role": "model", "parts": [{"text": content}]}
    return {"role": "user", "parts": [{"text": content}]}

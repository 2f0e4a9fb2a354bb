"""The chat-completions adapters: `openai` (OpenAI's endpoint, key OPENAI_API_KEY),
`local` (any OpenAI-compatible server: Ollama, llama.cpp server, vLLM; no key unless the
profile names one) and `openai_compat` (either, by `base_url`).

No SDK: httpx (_transport.py), the client OpenAI's SDK is built on, and the small wire
format by hand. Nothing but v1 values leaves this module.

Streamed (`stream: true`, `stream_options.include_usage`): `data:` chunks of
`chat.completion.chunk`, each `choices[0].delta` adding `content` or pieces of
`tool_calls` (by `index`: the id and name come first, `function.arguments` in pieces),
`finish_reason` on the last choice chunk, then one chunk with `usage` and no choices, then
`data: [DONE]`.

The output budget: OpenAI deprecated `max_tokens` for chat completions in favour of
`max_completion_tokens`, and its reasoning models (o-series, gpt-5*) refuse `max_tokens`
(platform.openai.com/docs/api-reference/chat/create). Every OpenAI chat model accepts
`max_completion_tokens`, so OpenAI's endpoint always gets it; other servers get
`max_tokens`, the name every compatible server knows.
"""

from __future__ import annotations

import json
from typing import Any

from ..tools.dispatch import ToolCall
from ._http import Assembly, HttpAdapter, assistant_tool_calls, cost, event_json, tool_message
from .base import CompletionRequest, CompletionResponse, ProviderFault, Usage
from .structured import drop_optional_nulls, openai_response_format

DEFAULT_BASE_URL = "https://api.openai.com/v1"
OPENAI_KEY_ENV = "OPENAI_API_KEY"
LOCAL_BASE_URL = "http://127.0.0.1:11434/v1"
"""Ollama's OpenAI-compatible endpoint on its default port."""
FINISH = {"stop": "stop", "tool_calls": "tool_use", "function_call": "tool_use",
          "length": "max_tokens", "content_filter": "safety"}


def is_openai(base_url: str | None) -> bool:
    """True for OpenAI's own endpoint (no base_url, or one on api.openai.com)."""
    return base_url is None or "://api.openai.com" in base_url


class OpenAICompatProvider(HttpAdapter):
    """POST {base_url}/chat/completions; Bearer key from the env var the profile names, or
    OPENAI_API_KEY when the endpoint is OpenAI's (a local server gets no key by default)."""

    name = "openai_compat"
    default_base_url = DEFAULT_BASE_URL
    path = "/chat/completions"
    default_key_env = None

    @classmethod
    def key_env_default(cls, base_url: str | None) -> str | None:
        return OPENAI_KEY_ENV if is_openai(base_url) else cls.default_key_env

    @property
    def budget_field(self) -> str:
        """`max_completion_tokens` on OpenAI's endpoint, else `max_tokens` (module docstring)."""
        return "max_completion_tokens" if "://api.openai.com" in self.url else "max_tokens"

    def auth_headers(self, key: str | None) -> dict[str, str]:
        # No key configured: a local server (Ollama, vLLM) that wants none.
        return {"authorization": f"Bearer {key}"} if key else {}

    def to_wire(self, request: CompletionRequest) -> dict[str, Any]:
        return to_wire(request, self.budget_field)

    def stream_wire(self, body: dict[str, Any]) -> dict[str, Any]:
        return {**body, "stream": True, "stream_options": {"include_usage": True}}

    def assembly(self, request: CompletionRequest) -> Assembly:
        return Chunks()

    def from_wire(self, doc: dict[str, Any], request: CompletionRequest) -> CompletionResponse:
        try:
            choice = doc["choices"][0]
            message = choice["message"]
        except (KeyError, IndexError, TypeError):
            raise ProviderFault("chat completion has no choices[0].message", retryable=False) from None
        calls = tuple(_tool_call(c) for c in message.get("tool_calls") or ())
        reason = FINISH.get(choice.get("finish_reason") or "", "tool_use" if calls else "stop")
        usage = doc.get("usage") or {}
        tin, tout = int(usage.get("prompt_tokens") or 0), int(usage.get("completion_tokens") or 0)
        text = message.get("content") or ""
        if request.output_schema is not None and not calls:
            text = _unstrict(text, request.output_schema)
        return CompletionResponse(text=text, tool_calls=calls,
                                  finish_reason=reason,
                                  usage=Usage(tin, tout, cost(self.prices, tin, tout)),
                                  model=str(doc.get("model") or request.model))


class Chunks(Assembly):
    """A streamed chat completion put back together (choice 0, the only one asked for)."""

    def __init__(self) -> None:
        self.head: dict[str, Any] = {}
        self.text: list[str] = []
        self.calls: dict[int, dict[str, Any]] = {}
        self.finish: str | None = None

    def add(self, event: str, data: str) -> str:
        if data.strip() == "[DONE]":
            self.done = True
            return ""
        chunk = event_json(data)
        if "error" in chunk:  # a server that fails mid-stream says so in a chunk
            raise ProviderFault(f"the stream ended in an error: {chunk['error']}", retryable=True)
        for key in ("id", "model", "usage"):
            if chunk.get(key):
                self.head[key] = chunk[key]
        choice = next((c for c in chunk.get("choices") or () if c.get("index", 0) == 0), None)
        if choice is None:
            return ""
        if choice.get("finish_reason"):
            self.finish = choice["finish_reason"]
        delta = choice.get("delta") or {}
        for piece in delta.get("tool_calls") or ():
            call = self.calls.setdefault(int(piece.get("index", len(self.calls))),
                                         {"type": "function", "function": {"arguments": ""}})
            if piece.get("id"):
                call["id"] = piece["id"]
            fn = piece.get("function") or {}
            if fn.get("name"):
                call["function"]["name"] = fn["name"]
            call["function"]["arguments"] += fn.get("arguments") or ""
        text = delta.get("content") or ""
        self.text.append(text)
        return text

    def doc(self) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant", "content": "".join(self.text) or None}
        if self.calls:
            message["tool_calls"] = [self.calls[i] for i in sorted(self.calls)]
        return {**self.head, "choices": [{"index": 0, "message": message,
                                          "finish_reason": self.finish}]}


class OpenAIProvider(OpenAICompatProvider):
    """`provider: openai`: OpenAI's endpoint, key OPENAI_API_KEY unless the profile names
    another, `max_completion_tokens` for the output budget."""

    name = "openai"

    @classmethod
    def key_env_default(cls, base_url: str | None) -> str | None:
        return OPENAI_KEY_ENV

    @property
    def budget_field(self) -> str:
        return "max_completion_tokens"


class LocalProvider(OpenAICompatProvider):
    """`provider: local`: an OpenAI-compatible server on this machine (Ollama by default);
    no key unless the profile names `api_key_env`."""

    name = "local"
    default_base_url = LOCAL_BASE_URL

    @classmethod
    def key_env_default(cls, base_url: str | None) -> str | None:
        return None

    @property
    def budget_field(self) -> str:
        return "max_tokens"


def to_wire(request: CompletionRequest, budget_field: str = "max_tokens") -> dict[str, Any]:
    """completion_request_v1 -> a chat-completions request body."""
    body: dict[str, Any] = {"model": request.model, "messages": [_message(m) for m in request.messages]}
    if request.tools:
        body["tools"] = [{"type": "function",
                          "function": {"name": t["name"], "description": t.get("description", ""),
                                       "parameters": t.get("input_schema", {"type": "object"})}}
                         for t in request.tools]
    if request.max_tokens is not None:
        body[budget_field] = request.max_tokens
    if request.output_schema is not None and request.output_schema_id:
        body["response_format"] = openai_response_format(request.output_schema_id,
                                                         request.output_schema)
    if request.temperature is not None:
        body["temperature"] = request.temperature
    return body


def _unstrict(text: str, schema: dict[str, Any]) -> str:
    """A strict-mode answer in the role schema's shape (nulls for absent optional fields
    dropped); text that is not JSON is left for the role's own check to refuse."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        return text
    return json.dumps(drop_optional_nulls(value, schema), ensure_ascii=False)


def _message(m: dict[str, str]) -> dict[str, Any]:
    role, content = m["role"], m["content"]
    if role == "tool":
        body = tool_message(content)
        out = body["result"] if "result" in body else {"error": body.get("error")}
        return {"role": "tool", "tool_call_id": body["id"],
                "content": json.dumps(out, ensure_ascii=False, sort_keys=True)}
    if role == "assistant":
        calls = assistant_tool_calls(content)
        if calls is not None:
            return {"role": "assistant", "content": None, "tool_calls": [
                {"id": c["id"], "type": "function",
                 "function": {"name": c["name"],
                              "arguments": json.dumps(c.get("args", {}), ensure_ascii=False)}}
                for c in calls]}
    return {"role": role, "content": content}


def _tool_call(raw: dict[str, Any]) -> ToolCall:
    fn = raw.get("function") or {}
    args_text = fn.get("arguments")
    try:
        # Arguments arrive as a JSON string; some compatible servers send an object already.
        args = args_text if isinstance(args_text, dict) else json.loads(args_text or "{}")
    except (TypeError, json.JSONDecodeError):
        args = None
    if not isinstance(args, dict):
        # The same prompt would most likely produce the same bad arguments: not retryable.
        raise ProviderFault(f"tool call {fn.get('name')!r} has arguments that are not a JSON "
                            "object", retryable=False)
    if not raw.get("id") or not fn.get("name"):
        raise ProviderFault("tool call without id or function name", retryable=False)
    return ToolCall(str(raw["id"]), str(fn["name"]), args)

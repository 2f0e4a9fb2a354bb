"""The Anthropic adapter (`provider: anthropic`): the Messages API over HTTP.

No SDK: httpx (_transport.py), the client Anthropic's SDK is built on. The v1 conversation
is flat role/content strings; the Messages API wants `system` at the top level, tool calls
as `tool_use` blocks and tool results as `tool_result` blocks in a user turn.

Streamed (docs.anthropic.com/en/api/messages-streaming): `message_start` carries the
message with empty content; each block is `content_block_start`, `content_block_delta`s
(`text_delta`, or `input_json_delta` pieces of a tool's input JSON) and
`content_block_stop`; `message_delta` brings stop_reason and the output usage;
`message_stop` ends it. `ping`s may come any time; an `error` event ends it early.
"""

from __future__ import annotations

import json
from typing import Any

from ..tools.dispatch import ToolCall
from ._http import Assembly, HttpAdapter, assistant_tool_calls, cost, event_json, tool_message
from .base import CompletionRequest, CompletionResponse, ProviderFault, Usage
from .structured import OUTPUT_TOOL_PREFIX, output_tool

DEFAULT_BASE_URL = "https://api.anthropic.com"
API_VERSION = "2023-06-01"
DEFAULT_MAX_TOKENS = 1024  # the Messages API requires max_tokens; v1 makes it optional
STOP = {"end_turn": "stop", "stop_sequence": "stop", "tool_use": "tool_use",
        "max_tokens": "max_tokens", "refusal": "safety"}
TRANSIENT = {"overloaded_error", "api_error", "rate_limit_error", "timeout_error"}
"""Error event types a later attempt may not meet (the statuses 529, 500, 429, 504)."""


class AnthropicProvider(HttpAdapter):
    """POST {base_url}/v1/messages with x-api-key from the env var the profile names."""

    name = "anthropic"
    default_base_url = DEFAULT_BASE_URL
    path = "/v1/messages"
    default_key_env = "ANTHROPIC_API_KEY"

    def auth_headers(self, key: str | None) -> dict[str, str]:
        return {"x-api-key": key or "", "anthropic-version": API_VERSION}

    def to_wire(self, request: CompletionRequest) -> dict[str, Any]:
        return to_wire(request)

    def stream_wire(self, body: dict[str, Any]) -> dict[str, Any]:
        return {**body, "stream": True}

    def assembly(self, request: CompletionRequest) -> Assembly:
        out = OUTPUT_TOOL_PREFIX + request.output_schema_id if request.output_schema_id else None
        return Messages(out)

    def from_wire(self, doc: dict[str, Any], request: CompletionRequest) -> CompletionResponse:
        blocks = doc.get("content")
        if not isinstance(blocks, list):
            raise ProviderFault("Messages API answer has no content list", retryable=False)
        text = "".join(b.get("text", "") for b in blocks if b.get("type") == "text")
        calls, answer = [], None
        for b in blocks:
            if b.get("type") != "tool_use":
                continue
            if not b.get("id") or not b.get("name") or not isinstance(b.get("input"), dict):
                raise ProviderFault("tool_use block without id, name or object input",
                                    retryable=False)
            if request.output_schema_id and b["name"] == OUTPUT_TOOL_PREFIX + request.output_schema_id:
                answer = b["input"]  # the forced output tool: its input is the role's answer
                continue
            calls.append(ToolCall(str(b["id"]), str(b["name"]), b["input"]))
        if answer is not None and not calls:
            text = json.dumps(answer, ensure_ascii=False)
        reason = STOP.get(doc.get("stop_reason") or "", "tool_use" if calls else "stop")
        if answer is not None and not calls and reason == "tool_use":
            reason = "stop"  # the answer came as the output tool's input: the turn is done
        usage = doc.get("usage") or {}
        tin, tout = int(usage.get("input_tokens") or 0), int(usage.get("output_tokens") or 0)
        return CompletionResponse(text=text, tool_calls=tuple(calls), finish_reason=reason,
                                  usage=Usage(tin, tout, cost(self.prices, tin, tout)),
                                  model=str(doc.get("model") or request.model))


class Messages(Assembly):
    """A streamed Messages API answer put back together. The forced output tool's input is
    the role's answer (structured output), so its JSON pieces count as answer text."""

    def __init__(self, output_tool: str | None) -> None:
        self.output_tool = output_tool
        self.message: dict[str, Any] = {}
        self.blocks: dict[int, dict[str, Any]] = {}
        self.json: dict[int, str] = {}

    def add(self, event: str, data: str) -> str:
        doc = event_json(data)
        kind = doc.get("type", event)
        if kind == "error":
            err = doc.get("error") or {}
            raise ProviderFault(f"the stream ended in an error: {err.get('type')}: "
                                f"{err.get('message')}", retryable=err.get("type") in TRANSIENT)
        if kind == "message_start":
            self.message = dict(doc.get("message") or {})
            self.message["usage"] = dict(self.message.get("usage") or {})
        elif kind == "content_block_start":
            self.blocks[int(doc["index"])] = dict(doc.get("content_block") or {})
        elif kind == "content_block_delta":
            i, delta = int(doc["index"]), doc.get("delta") or {}
            block = self.blocks.setdefault(i, {"type": "text", "text": ""})
            if delta.get("type") == "text_delta":
                block["text"] = block.get("text", "") + delta.get("text", "")
                return str(delta.get("text", ""))
            if delta.get("type") == "input_json_delta":
                piece = str(delta.get("partial_json", ""))
                self.json[i] = self.json.get(i, "") + piece
                return piece if block.get("name") == self.output_tool else ""
        elif kind == "content_block_stop":
            self._close_input(int(doc["index"]))
        elif kind == "message_delta":
            self.message.update(doc.get("delta") or {})
            self.message["usage"].update(doc.get("usage") or {})
        elif kind == "message_stop":
            self.done = True
        return ""

    def _close_input(self, i: int) -> None:
        block = self.blocks.get(i) or {}
        if block.get("type") != "tool_use" or i not in self.json:
            return
        try:  # an empty input streams no pieces, or one empty piece
            block["input"] = json.loads(self.json.pop(i) or "{}")
        except json.JSONDecodeError:
            raise ProviderFault(f"tool_use block {block.get('name')!r} streamed an input that is "
                                "not JSON", retryable=False) from None

    def doc(self) -> dict[str, Any]:
        return {**self.message, "content": [self.blocks[i] for i in sorted(self.blocks)]}


def to_wire(request: CompletionRequest) -> dict[str, Any]:
    """completion_request_v1 -> a Messages API request body."""
    system = "\n\n".join(m["content"] for m in request.messages if m["role"] == "system")
    messages: list[dict[str, Any]] = []
    for m in request.messages:
        if m["role"] == "system":
            continue
        turn = _turn(m)
        last = messages[-1] if messages else None
        # The API wants user/assistant turns to alternate: tool results that follow one
        # another (and anything else of the same role) go into one turn as blocks.
        if last is not None and last["role"] == turn["role"]:
            last["content"] = _blocks(last["content"]) + _blocks(turn["content"])
        else:
            messages.append(turn)
    body: dict[str, Any] = {"model": request.model, "messages": messages,
                            "max_tokens": request.max_tokens or DEFAULT_MAX_TOKENS}
    if system:
        body["system"] = system
    tools = [{"name": t["name"], "description": t.get("description", ""),
              "input_schema": t.get("input_schema", {"type": "object"})}
             for t in request.tools or ()]
    if request.output_schema is not None and request.output_schema_id:
        # Structured output: the answer is the input of a tool the model must call; with
        # other tools on offer it must call one of them or that one ("any").
        out = output_tool(request.output_schema_id, request.output_schema)
        body["tool_choice"] = {"type": "any"} if tools else {"type": "tool", "name": out["name"]}
        tools.append(out)
    if tools:
        body["tools"] = tools
    if request.temperature is not None:
        body["temperature"] = request.temperature
    return body


def _turn(m: dict[str, str]) -> dict[str, Any]:
    role, content = m["role"], m["content"]
    if role == "tool":
        body = tool_message(content)
        failed = "result" not in body
        out = body.get("error") if failed else body["result"]
        block: dict[str, Any] = {"type": "tool_result", "tool_use_id": body["id"],
                                 "content": json.dumps(out, ensure_ascii=False, sort_keys=True)}
        if failed:
            block["is_error"] = True
        return {"role": "user", "content": [block]}
    if role == "assistant":
        calls = assistant_tool_calls(content)
        if calls is not None:
            return {"role": "assistant", "content": [
                {"type": "tool_use", "id": c["id"], "name": c["name"], "input": c.get("args", {})}
                for c in calls]}
    return {"role": "assistant" if role == "assistant" else "user", "content": content}


def _blocks(content: str | list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{"type": "text", "text": content}] if isinstance(content, str) else content

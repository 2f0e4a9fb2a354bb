"""What the loopback server streams: a whole answer (the body an API sends unstreamed) cut
into the server-sent events that API's streaming dialect sends for it, text and tool-call
arguments in small pieces (so a key or a JSON value is split across events, as a real
stream splits them). Reading the events back must give the same answer."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

PIECE = 7  # characters per text or argument piece


def pieces(text: str) -> list[str]:
    return [text[i:i + PIECE] for i in range(0, len(text), PIECE)]


def dialect(path: str) -> str:
    route = path.split("?", 1)[0]
    if route.endswith("/chat/completions"):
        return "openai"
    return "anthropic" if route.endswith("/v1/messages") else "gemini"


def frames(path: str, doc: dict[str, Any]) -> list[bytes]:
    """`doc` as the SSE frames of the dialect `path` belongs to."""
    kind = dialect(path)
    if kind == "anthropic":
        return [f"event: {e['type']}\ndata: {json.dumps(e)}\n\n".encode() for e in anthropic(doc)]
    events: Iterator[Any] = openai(doc) if kind == "openai" else gemini(doc)
    return [f"data: {e if isinstance(e, str) else json.dumps(e)}\n\n".encode() for e in events]


def openai(doc: dict[str, Any]) -> Iterator[Any]:
    choice = doc["choices"][0]
    message = choice["message"]
    head = {"id": doc.get("id", "chatcmpl-s"), "object": "chat.completion.chunk",
            "model": doc.get("model")}

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {**head, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    yield chunk({"role": "assistant", "content": ""})
    for piece in pieces(message.get("content") or ""):
        yield chunk({"content": piece})
    for i, call in enumerate(message.get("tool_calls") or ()):
        fn = call["function"]
        yield chunk({"tool_calls": [{"index": i, "id": call["id"], "type": "function",
                                     "function": {"name": fn["name"], "arguments": ""}}]})
        for piece in pieces(fn["arguments"]):
            yield chunk({"tool_calls": [{"index": i, "function": {"arguments": piece}}]})
    yield chunk({}, choice.get("finish_reason"))
    yield {**head, "choices": [], "usage": doc.get("usage")}
    yield "[DONE]"


def anthropic(doc: dict[str, Any]) -> Iterator[dict[str, Any]]:
    usage = doc.get("usage") or {}
    start = {k: v for k, v in doc.items() if k not in ("content", "usage")}
    yield {"type": "message_start", "message": {
        **start, "content": [], "stop_reason": None, "stop_sequence": None,
        "usage": {"input_tokens": usage.get("input_tokens", 0), "output_tokens": 1}}}
    yield {"type": "ping"}
    for i, block in enumerate(doc.get("content") or ()):
        if block["type"] == "tool_use":
            yield {"type": "content_block_start", "index": i,
                   "content_block": {**block, "input": {}}}
            for piece in pieces(json.dumps(block["input"])):
                yield {"type": "content_block_delta", "index": i,
                       "delta": {"type": "input_json_delta", "partial_json": piece}}
        else:
            yield {"type": "content_block_start", "index": i,
                   "content_block": {"type": "text", "text": ""}}
            for piece in pieces(block.get("text", "")):
                yield {"type": "content_block_delta", "index": i,
                       "delta": {"type": "text_delta", "text": piece}}
        yield {"type": "content_block_stop", "index": i}
    yield {"type": "message_delta", "delta": {"stop_reason": doc.get("stop_reason"),
                                              "stop_sequence": doc.get("stop_sequence")},
           "usage": {"output_tokens": usage.get("output_tokens", 0)}}
    yield {"type": "message_stop"}


def gemini(doc: dict[str, Any]) -> Iterator[dict[str, Any]]:
    if not doc.get("candidates"):
        yield doc  # a blocked prompt: one event, no candidates
        return
    first = doc["candidates"][0]
    tail = {k: v for k, v in doc.items() if k != "candidates"}
    for part in first["content"]["parts"]:
        split = pieces(part["text"]) if set(part) == {"text"} else [None]
        for piece in split:
            one = {"text": piece} if piece is not None else part
            yield {"candidates": [{"content": {"role": "model", "parts": [one]}, "index": 0}],
                   "modelVersion": doc.get("modelVersion")}
    yield {"candidates": [{"content": {"role": "model", "parts": [{"text": ""}]}, "index": 0,
                           "finishReason": first.get("finishReason", "STOP")}], **tail}

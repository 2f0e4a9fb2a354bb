"""Helpers for the real-format tests: a workspace profile per HTTP provider pointed at the
loopback server, and a prose (not JSON) answer in each provider's documented wire format."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

KEY_ENV = "AGENTOS_TEST_WIRE_KEY"
REAL = ("anthropic", "openai", "gemini", "local")
USAGE = {"openai": {"prompt_tokens": 7, "completion_tokens": 5},
         "anthropic": {"input_tokens": 7, "output_tokens": 5},
         "gemini": {"promptTokenCount": 7, "candidatesTokenCount": 5}}


def base_url(provider: str, url: str) -> str:
    """Where each adapter's endpoint path goes on the loopback server."""
    return url + "/v1" if provider in ("openai", "local", "openai_compat") else url


def add_real_profile(ws: Path, provider: str, url: str, name: str | None = None,
                     **fields: Any) -> str:
    """A `provider` profile against the loopback server at `url`; returns its name."""
    config = ws / "agentos.yaml"
    doc = yaml.safe_load(config.read_text(encoding="utf-8"))
    body: dict[str, Any] = {"provider": provider, "model": "scripted-1",
                            "base_url": base_url(provider, url), **fields}
    if provider != "local":
        body["api_key_env"] = KEY_ENV
    name = name or f"wire-{provider}"
    doc["profiles"][name] = body
    config.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    return name


def prose(provider: str, text: str = "Sure! I will greet Ada for you.") -> dict[str, Any]:
    """A chatty model's answer that is not JSON, in `provider`'s wire format."""
    if provider == "anthropic":
        return {"id": "msg_p", "type": "message", "role": "assistant", "model": "scripted-1",
                "content": [{"type": "text", "text": text}], "stop_reason": "end_turn",
                "stop_sequence": None, "usage": USAGE["anthropic"]}
    if provider == "gemini":
        return {"candidates": [{"content": {"role": "model", "parts": [{"text": text}]},
                                "finishReason": "STOP", "index": 0}],
                "usageMetadata": USAGE["gemini"], "modelVersion": "scripted-1"}
    return {"id": "chatcmpl-p", "object": "chat.completion", "model": "scripted-1",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                         "finish_reason": "stop"}], "usage": USAGE["openai"]}

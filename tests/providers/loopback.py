"""A loopback model server for the HTTP adapters: http.server on 127.0.0.1 (port 0) in a
thread. It records every request and answers either from a per-test queue of canned
(status, body) replies or, when the queue is empty, as a model would: it turns the wire
request back into a v1 request, lets the scripted provider answer it, and encodes that
answer in the same dialect. So a run through an adapter and a scripted run see the same
model, and any loss in the adapter's translation shows up as a different answer.

Nothing here reaches anything but 127.0.0.1; the number of requests served is bounded.
"""

from __future__ import annotations

import json
import ssl
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from agentos_kernel import Ok
from agentos_kernel.providers.base import CompletionRequest, CompletionResponse
from agentos_kernel.providers.scripted import ScriptedProvider

from . import sse

MAX_REQUESTS = 500  # a retry loop that never ends fails the test instead of hanging it


@dataclass(frozen=True)
class Reply:
    """A canned answer with the faults a real backend shows: extra headers (Retry-After), a
    delay before anything is sent (a timeout), a body cut short after `truncate_to` bytes
    while the content-length promises all of it (a dropped connection), or raw bytes."""

    status: int
    body: Any = None
    """A JSON value, or bytes sent as they are."""
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0
    truncate_to: int | None = None
    drip_s: float = 0.0
    """Send the body one byte at a time, this long apart (a server that never quite stops)."""
    raw: bytes | None = None
    """Send these bytes instead of an HTTP response, then hang up (a garbled answer)."""
    hang_up: bool = False
    """Close the connection after this answer without saying so (an idle keep-alive
    connection the server dropped): the client finds out on its next request."""
    cut_after: int | None = None
    """Streamed: send this many events, then drop the connection mid-stream."""
    stop_after: int | None = None
    """Streamed: send this many events, then end the stream cleanly (its last event unsent)."""
    frames: list[bytes] | None = None
    """Streamed: send these frames as they are instead of the body's."""
    event_delay_s: float = 0.0
    """Streamed: wait this long before each event (a model thinking aloud)."""


@dataclass(frozen=True)
class Recorded:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]
    peer: int = 0
    """The client's port: the same port twice is one connection reused."""


@dataclass
class Loopback:
    """The running server: `url`, `requests` seen, `replies` to give before the model answers."""

    url: str
    requests: list[Recorded] = field(default_factory=list)
    replies: list[tuple[int, Any] | Reply] = field(default_factory=list)
    fail_first: dict[str, tuple[int, int]] = field(default_factory=dict)
    """Path prefix -> (status, how many): the first N requests under it get `status` (-1: all)."""
    echo: int = 0
    """Non-zero: answer every request with this status and a body echoing its credentials
    and its last user message (a debugging proxy that leaks what it was sent)."""
    _seen: dict[str, int] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)
    closed: int = 0
    """Connections the server has closed so far."""
    _closing: threading.Condition = field(default_factory=threading.Condition)

    def wait_closed(self, n: int, timeout_s: float = 5.0) -> None:
        """Wait until the server has closed `n` connections: a hang-up is then on the client's
        side of the wire, not still on its way (the handler's thread closes the socket after
        the client may already have read the whole answer)."""
        with self._closing:
            if not self._closing.wait_for(lambda: self.closed >= n, timeout_s):
                raise TimeoutError(f"the loopback server closed {self.closed} of {n} connections")

    def connection_closed(self) -> None:
        with self._closing:
            self.closed += 1
            self._closing.notify_all()

    def answer(self, path: str, headers: dict[str, str], body: dict[str, Any], peer: int = 0
               ) -> tuple[int, Any] | Reply:
        with self.lock:
            self.requests.append(Recorded(path, headers, body, peer))
            if len(self.requests) > MAX_REQUESTS:
                return 400, {"error": "loopback request budget exhausted"}
            prefix = "/" + path.strip("/").split("/")[0]
            n = self._seen[prefix] = self._seen.get(prefix, 0) + 1
            status, times = self.fail_first.get(prefix, (0, 0))
            if status and (times < 0 or n <= times):
                return status, {"error": {"type": "overloaded", "message": f"canned {status}"}}
            if self.replies:
                return self.replies.pop(0)
            if self.echo:
                users = [m for m in body.get("messages", body.get("contents", []))
                         if m.get("role") == "user"]
                return self.echo, {"error": {"authorization": headers.get("authorization"),
                                             "x-api-key": headers.get("x-api-key"),
                                             "x-goog-api-key": headers.get("x-goog-api-key"),
                                             "user": (users[-1].get("content") or users[-1].get("parts"))
                                             if users else None}}
        if path.endswith("/chat/completions"):
            return 200, openai_answer(body)
        if path.endswith("/v1/messages"):
            problem = anthropic_violation(body)
            if problem:  # what the Messages API answers to a broken conversation
                return 400, {"type": "error", "error": {"type": "invalid_request_error",
                                                        "message": problem}}
            return 200, anthropic_answer(body)
        route = path.split("?", 1)[0]
        if route.endswith((":generateContent", ":streamGenerateContent")):
            return 200, gemini_answer(body, route.rsplit("/", 1)[-1].split(":")[0])
        return 404, {"error": f"no route {path}"}


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"  # keep-alive, as real APIs do: adapters reuse connections

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length)
        try:
            body = json.loads(raw or b"{}")
        except json.JSONDecodeError:
            body = {"_raw": raw.decode("utf-8", "replace")}
        got = self.server.loopback.answer(
            self.path, {k.lower(): v for k, v in self.headers.items()}, body, self.client_address[1])
        reply = got if isinstance(got, Reply) else Reply(*got)
        if reply.delay_s:
            time.sleep(reply.delay_s)
        if reply.raw is not None:
            self.wfile.write(reply.raw)
            self.close_connection = True
            return
        raw = reply.body
        if (body.get("stream") or ":streamGenerateContent" in self.path) and reply.status == 200 \
                and isinstance(raw, dict):
            frames = reply.frames if reply.frames is not None else sse.frames(self.path, raw)
            self._stream(reply, frames[:reply.stop_after])
            return
        data = raw if isinstance(raw, bytes) else json.dumps(raw).encode("utf-8")
        self.send_response(reply.status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        for name, value in reply.headers.items():
            self.send_header(name, value)
        self.end_headers()
        try:
            if reply.truncate_to is not None:
                self.wfile.write(data[:reply.truncate_to])
                self.wfile.flush()
                self.close_connection = True  # the rest never comes
                return
            if reply.drip_s:
                for i in range(len(data)):
                    self.wfile.write(data[i:i + 1])
                    self.wfile.flush()
                    time.sleep(reply.drip_s)
                return
            self.wfile.write(data)
            if reply.hang_up:
                self.close_connection = True
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up first (a timeout under test): nothing to answer

    def _stream(self, reply: Reply, frames: list[bytes]) -> None:
        """Send `frames` as a chunked text/event-stream, as the APIs do (or cut it)."""
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("transfer-encoding", "chunked")
        for name, value in reply.headers.items():
            self.send_header(name, value)
        self.end_headers()
        try:
            for i, frame in enumerate(frames):
                if reply.cut_after is not None and i == reply.cut_after:
                    self.wfile.flush()
                    self.close_connection = True  # no last chunk: the stream was cut
                    return
                time.sleep(reply.event_delay_s)
                self.wfile.write(f"{len(frame):x}\r\n".encode() + frame + b"\r\n")
                self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")
        except (BrokenPipeError, ConnectionResetError):
            pass

    def log_message(self, format: str, *args: Any) -> None:
        pass  # keep pytest output clean


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    loopback: Loopback

    def shutdown_request(self, request: Any) -> None:
        super().shutdown_request(request)
        self.loopback.connection_closed()


@contextmanager
def loopback_server(tls: ssl.SSLContext | None = None) -> Iterator[Loopback]:
    """The server, on plain HTTP or, given a server-side `tls` context, on HTTPS."""
    server = _Server(("127.0.0.1", 0), _Handler)
    scheme = "http"
    if tls is not None:
        server.socket = tls.wrap_socket(server.socket, server_side=True)
        scheme = "https"
    server.loopback = Loopback(f"{scheme}://127.0.0.1:{server.server_address[1]}")
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05},
                              daemon=True)
    thread.start()
    try:
        yield server.loopback
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


@pytest.fixture(name="server")
def server_fixture() -> Iterator[Loopback]:
    """The server for one test, as the fixture `server` (a test module imports it to use it)."""
    with loopback_server() as srv:
        yield srv


# -- the model behind the server: wire -> v1 -> scripted -> wire ---------------------------------

_BRAIN = ScriptedProvider("scripted-1", None, None, max_retries=0)


def _think(messages: list[dict[str, str]], tools: list[dict[str, Any]] | None,
           model: str) -> CompletionResponse:
    got = _BRAIN.complete(CompletionRequest(tuple(messages), model, tuple(tools) if tools else None))
    assert isinstance(got, Ok), got
    return got.value


def _tool_body(call_id: str, names: dict[str, str], out: Any, failed: bool) -> str:
    body = {"id": call_id, "name": names.get(call_id, "?"), "error" if failed else "result": out}
    return json.dumps(body, sort_keys=True)


def _calls_json(calls: list[tuple[str, str, Any]]) -> str:
    return json.dumps({"tool_calls": [{"id": i, "name": n, "args": a} for i, n, a in calls]},
                      sort_keys=True)


def openai_answer(body: dict[str, Any]) -> dict[str, Any]:
    names: dict[str, str] = {}
    messages: list[dict[str, str]] = []
    for m in body["messages"]:
        if m["role"] == "assistant" and m.get("tool_calls"):
            calls = [(c["id"], c["function"]["name"], json.loads(c["function"]["arguments"]))
                     for c in m["tool_calls"]]
            names.update({i: n for i, n, _ in calls})
            messages.append({"role": "assistant", "content": _calls_json(calls)})
        elif m["role"] == "tool":
            out = json.loads(m["content"])
            failed = isinstance(out, dict) and set(out) == {"error"}
            messages.append({"role": "tool", "content": _tool_body(
                m["tool_call_id"], names, out["error"] if failed else out, failed)})
        else:
            messages.append({"role": m["role"], "content": m["content"]})
    tools = [{"name": t["function"]["name"], "description": t["function"]["description"],
              "input_schema": t["function"]["parameters"]} for t in body.get("tools") or ()]
    resp = _think(messages, tools, body["model"])
    text = resp.text
    strict = (body.get("response_format") or {}).get("json_schema", {})
    if text and strict.get("strict"):  # strict mode sends every property, null when absent
        text = json.dumps(_all_properties(json.loads(text), strict["schema"]))
    message: dict[str, Any] = {"role": "assistant", "content": text or None}
    if resp.tool_calls:
        message["tool_calls"] = [{"id": c.id, "type": "function",
                                  "function": {"name": c.name, "arguments": json.dumps(c.args)}}
                                 for c in resp.tool_calls]
    return {"id": "chatcmpl-1", "object": "chat.completion", "model": resp.model,
            "choices": [{"index": 0, "message": message,
                         "finish_reason": "tool_calls" if resp.tool_calls else "stop"}],
            "usage": {"prompt_tokens": resp.usage.input_tokens,
                      "completion_tokens": resp.usage.output_tokens,
                      "total_tokens": resp.usage.input_tokens + resp.usage.output_tokens}}


def anthropic_answer(body: dict[str, Any]) -> dict[str, Any]:
    names: dict[str, str] = {}
    messages = [{"role": "system", "content": body["system"]}] if body.get("system") else []
    for m in body["messages"]:
        if isinstance(m["content"], str):
            messages.append({"role": m["role"], "content": m["content"]})
            continue
        for b in m["content"]:
            if b["type"] == "tool_use":
                names[b["id"]] = b["name"]
                messages.append({"role": "assistant",
                                 "content": _calls_json([(b["id"], b["name"], b["input"])])})
            elif b["type"] == "tool_result":
                messages.append({"role": "tool", "content": _tool_body(
                    b["tool_use_id"], names, json.loads(b["content"]), bool(b.get("is_error")))})
            else:
                messages.append({"role": m["role"], "content": b["text"]})
    tools = [t for t in body.get("tools") or () if not t["name"].startswith("submit_")]
    answer_tool = next((t["name"] for t in body.get("tools") or () if t["name"].startswith("submit_")),
                       None)
    resp = _think(messages, tools, body["model"])
    content: list[dict[str, Any]] = []
    if resp.text and answer_tool and not resp.tool_calls:  # a forced tool: the answer is its input
        content.append({"type": "tool_use", "id": "toolu_answer", "name": answer_tool,
                        "input": json.loads(resp.text)})
    elif resp.text:
        content.append({"type": "text", "text": resp.text})
    content += [{"type": "tool_use", "id": c.id, "name": c.name, "input": c.args}
                for c in resp.tool_calls]
    used_tool = any(b["type"] == "tool_use" for b in content)
    return {"id": "msg_1", "type": "message", "role": "assistant", "model": resp.model,
            "content": content, "stop_reason": "tool_use" if used_tool else "end_turn",
            "stop_sequence": None,
            "usage": {"input_tokens": resp.usage.input_tokens,
                      "output_tokens": resp.usage.output_tokens}}


def _all_properties(value: Any, schema: dict[str, Any]) -> Any:
    """What a strict-mode model sends: every property of every object, null when absent."""
    if isinstance(value, dict) and "properties" in schema:
        return {k: _all_properties(value.get(k), sub) for k, sub in schema["properties"].items()}
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        return [_all_properties(v, schema["items"]) for v in value]
    return value


def gemini_answer(body: dict[str, Any], model: str) -> dict[str, Any]:
    names: dict[str, list[str]] = {}  # function name -> ids of its calls not answered yet
    system = body.get("systemInstruction", {}).get("parts", [{}])[0].get("text")
    messages = [{"role": "system", "content": system}] if system else []
    for turn in body["contents"]:
        for part in turn["parts"]:
            if "functionCall" in part:
                fc = part["functionCall"]
                call_id = f"t{sum(len(v) for v in names.values()) + 1}"
                names.setdefault(fc["name"], []).append(call_id)
                messages.append({"role": "assistant",
                                 "content": _calls_json([(call_id, fc["name"], fc.get("args", {}))])})
            elif "functionResponse" in part:
                fr = part["functionResponse"]
                call_id = names.get(fr["name"], ["?"])[0]
                resp = fr["response"]
                failed = "error" in resp
                messages.append({"role": "tool", "content": _tool_body(
                    call_id, {call_id: fr["name"]}, resp["error"] if failed else resp["result"],
                    failed)})
            else:
                messages.append({"role": "assistant" if turn["role"] == "model" else "user",
                                 "content": part["text"]})
    tools = [{"name": f["name"], "description": f["description"],
              "input_schema": _json_schema(f["parameters"])}
             for t in body.get("tools") or () for f in t["functionDeclarations"]]
    resp = _think(messages, tools, model)
    parts: list[dict[str, Any]] = [{"text": resp.text}] if resp.text else []
    parts += [{"functionCall": {"name": c.name, "args": c.args}} for c in resp.tool_calls]
    return {"candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP",
                            "index": 0}],
            "usageMetadata": {"promptTokenCount": resp.usage.input_tokens,
                              "candidatesTokenCount": resp.usage.output_tokens,
                              "totalTokenCount": resp.usage.input_tokens + resp.usage.output_tokens},
            "modelVersion": resp.model}


def _json_schema(node: Any) -> Any:
    """A Gemini Schema back as JSON Schema, enough for the scripted model to fill arguments."""
    if isinstance(node, dict):
        return {k: (v.lower() if k == "type" else _json_schema(v)) for k, v in node.items()
                if k not in ("propertyOrdering", "nullable")}
    if isinstance(node, list):
        return [_json_schema(v) for v in node]
    return node


def anthropic_violation(body: dict[str, Any]) -> str | None:
    """The Messages API's rule for tool use, as it enforces it: turns alternate user and
    assistant starting with user; every tool_result block answers a tool_use block of the
    assistant turn just before it, and every tool_use is answered in the next user turn."""
    messages = body.get("messages") or []
    for i, m in enumerate(messages):
        if m.get("role") != ("user" if i % 2 == 0 else "assistant"):
            return f"messages.{i}: roles must alternate between user and assistant, starting with user"
        blocks = m["content"] if isinstance(m["content"], list) else []
        results = {b["tool_use_id"] for b in blocks if b.get("type") == "tool_result"}
        prev = messages[i - 1]["content"] if i else []
        asked = {b["id"] for b in prev if isinstance(prev, list) and b.get("type") == "tool_use"}
        if results - asked:
            return (f"messages.{i}.content: unexpected `tool_use_id` found in `tool_result` blocks: "
                    f"{sorted(results - asked)}. Each `tool_result` block must have a corresponding "
                    "`tool_use` block in the previous message.")
        uses = {b["id"] for b in blocks if b.get("type") == "tool_use"}
        nxt = messages[i + 1]["content"] if i + 1 < len(messages) else None
        answered = ({b.get("tool_use_id") for b in nxt if isinstance(b, dict)}
                    if isinstance(nxt, list) else set())
        if uses and nxt is not None and uses - answered:
            return (f"messages.{i + 1}: `tool_use` ids were found without `tool_result` blocks "
                    f"immediately after: {sorted(uses - answered)}")
    return None

"""Streaming on the HTTP adapters (issue 23): run by hand, never in the test suite.

    python bench/bench_stream.py [--calls 200] [--delay-ms 20]

Against the loopback server of tests/providers (127.0.0.1 only), an OpenAI-compatible
adapter on one pooled httpx client:
- per-call latency, median over `--calls` calls, unstreamed vs streamed, of a 600-character
  answer sent at once (what the transport and the SSE reading cost);
- the same answer sent as a model writes it, one event every `--delay-ms` (7 characters an
  event): when the first text reaches the session's sink (through HeldBack, as in a run)
  and when the answer is whole, streamed vs unstreamed (the spinner case).
"""

from __future__ import annotations

import argparse
import statistics
import time

from agentos_kernel.providers.base import CompletionRequest, HeldBack, StreamedText
from agentos_kernel.providers.openai_compat import LocalProvider
from agentos_kernel.store.redaction import Redactor
from tests.providers.loopback import Loopback, Reply, loopback_server

ASK = CompletionRequest(({"role": "user", "content": "u"},), "m")
TEXT = ("The reviewer found two problems in the plan and sent it back; " * 10)[:600]
ANSWER = {"model": "m", "choices": [{"index": 0, "finish_reason": "stop",
                                     "message": {"role": "assistant", "content": TEXT}}],
          "usage": {"prompt_tokens": 1, "completion_tokens": 150}}


def latency(srv: Loopback, stream: bool, calls: int) -> float:
    provider = LocalProvider("m", base_url=srv.url + "/v1", stream=stream)
    times = []
    for _ in range(calls):
        srv.replies.append((200, ANSWER))
        start = time.perf_counter()
        provider.complete(ASK)
        times.append(time.perf_counter() - start)
    provider.close()
    return statistics.median(times) * 1000


def first_text(srv: Loopback, stream: bool, delay_s: float) -> tuple[float, float]:
    provider = LocalProvider("m", base_url=srv.url + "/v1", stream=stream)
    first: list[float] = []

    def shown(piece: StreamedText) -> None:
        if piece.text and not first:
            first.append(time.perf_counter())
    provider.on_text = HeldBack(Redactor.of(()), shown)
    srv.replies.append(Reply(200, ANSWER, event_delay_s=delay_s,
                             delay_s=0.0 if stream else delay_s * (len(TEXT) // 7 + 4)))
    start = time.perf_counter()
    provider.complete(ASK)
    end = time.perf_counter()
    provider.close()
    return ((first[0] if first else end) - start), end - start


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--calls", type=int, default=200)
    ap.add_argument("--delay-ms", type=float, default=20.0)
    args = ap.parse_args()
    with loopback_server() as srv:
        latency(srv, False, 20), latency(srv, True, 20)  # warm up
        plain, streamed = latency(srv, False, args.calls), latency(srv, True, args.calls)
        print(f"per call, median of {args.calls}: unstreamed {plain:.2f} ms, "
              f"streamed {streamed:.2f} ms ({len(TEXT) // 7 + 4} events)")
        for stream in (False, True):
            shown, whole = first_text(srv, stream, args.delay_ms / 1000)
            print(f"{'streamed  ' if stream else 'unstreamed'}: first text after {shown:.2f} s, "
                  f"answer whole after {whole:.2f} s")


if __name__ == "__main__":
    main()

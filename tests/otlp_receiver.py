"""A loopback OTLP/HTTP trace receiver for the tests: a tiny http.server on 127.0.0.1 that
decodes each POST to /v1/traces as an `ExportTraceServiceRequest` (opentelemetry-proto) and
keeps it, answering as a collector does. Nothing leaves the machine."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

PATH = "/v1/traces"


@dataclass
class Received:
    """What the receiver was sent."""

    url: str
    """Its traces endpoint, http://127.0.0.1:<port>/v1/traces."""
    requests: list[ExportTraceServiceRequest] = field(default_factory=list)
    """Every export request, decoded, in arrival order."""
    content_types: list[str] = field(default_factory=list)
    """The Content-Type of each request."""

    def spans(self) -> list[Any]:
        """Every span received (opentelemetry.proto.trace.v1.Span messages)."""
        return [span for req in self.requests for rs in req.resource_spans
                for ss in rs.scope_spans for span in ss.spans]

    def service_names(self) -> set[str]:
        return {a.value.string_value for req in self.requests for rs in req.resource_spans
                for a in rs.resource.attributes if a.key == "service.name"}


@contextmanager
def otlp_receiver() -> Iterator[Received]:
    """Serve on a free 127.0.0.1 port until the block ends."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    got = Received(f"http://127.0.0.1:{server.server_address[1]}{PATH}")
    server.received = got  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, daemon=True, name="otlp-receiver")
    thread.start()
    try:
        yield got
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def closed_port_url() -> str:
    """A traces URL on 127.0.0.1 where nothing listens (a port taken, then let go)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}{PATH}"


class _Handler(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        if self.path != PATH:
            self.send_error(404)
            return
        req = ExportTraceServiceRequest()
        req.ParseFromString(body)
        got: Received = self.server.received  # type: ignore[attr-defined]
        got.requests.append(req)
        got.content_types.append(self.headers.get("Content-Type", ""))
        reply = ExportTraceServiceResponse().SerializeToString()
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)

    def log_message(self, format: str, *args: Any) -> None:  # quiet: pytest shows failures
        pass

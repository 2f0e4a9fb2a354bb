"""A JupyterHub started from deploy/jupyterhub_config.py for a test, and the HTTP / kernel
websocket calls a student's browser would make (tests/test_jupyterhub.py). Loopback only."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.cookiejar import CookieJar
from pathlib import Path
from typing import Any

CONFIG = Path(__file__).resolve().parents[1] / "deploy" / "jupyterhub_config.py"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


@dataclass
class Reply:
    """One HTTP answer."""

    status: int
    """Its status code."""
    body: str
    """Its body as text."""
    headers: dict[str, str] = field(default_factory=dict)
    """Its headers."""

    def json(self) -> Any:
        return json.loads(self.body)


@dataclass
class Hub:
    """A running hub: its URL, state dir, admin token and process."""

    url: str
    """http://127.0.0.1:PORT (the proxy, where students connect)."""
    state: Path
    """AGENTOS_HUB_DIR: sqlite db, cookie secret, homes/<user>."""
    admin_token: str
    """The agentos-admin service's token."""
    proc: subprocess.Popen[bytes]
    """The jupyterhub process."""
    log: Path
    """Its stdout and stderr."""

    def call(self, method: str, path: str, token: str | None = None, body: Any = None,
             form: dict[str, str] | None = None, opener: Any = None) -> Reply:
        data = None
        headers = {"Authorization": f"token {token}"} if token else {}
        if body is not None:
            data, headers["Content-Type"] = json.dumps(body).encode(), "application/json"
        elif form is not None:
            data = urllib.parse.urlencode(form).encode()
            headers["Content-Type"] = "application/x-www-form-urlencoded"
        req = urllib.request.Request(self.url + path, data=data, headers=headers, method=method)
        try:
            with (opener or urllib.request.build_opener(_NoRedirect)).open(req, timeout=60) as r:
                return Reply(r.status, r.read().decode(errors="replace"), dict(r.headers))
        except urllib.error.HTTPError as exc:
            return Reply(exc.code, exc.read().decode(errors="replace"), dict(exc.headers))

    def log_tail(self, n: int = 4000) -> str:
        return self.log.read_text(errors="replace")[-n:] if self.log.exists() else ""

    def login(self, user: str, password: str) -> Reply:
        """POST /hub/login as the login form does (with its _xsrf cookie and field)."""
        jar = CookieJar()
        opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar), _NoRedirect)
        self.call("GET", "/hub/login", opener=opener)
        xsrf = next((c.value for c in jar if c.name == "_xsrf"), "")
        reply = self.call("POST", "/hub/login?next=", form={"username": user, "password": password,
                                                           "_xsrf": xsrf}, opener=opener)
        reply.headers["cookies"] = " ".join(sorted(c.name for c in jar))
        return reply

    def user_token(self, user: str) -> str:
        reply = self.call("POST", f"/hub/api/users/{user}/tokens", self.admin_token,
                          {"note": "agentos hub test", "expires_in": 900})
        assert reply.status == 201, (reply.status, reply.body)
        return str(reply.json()["token"])

    def start_server(self, user: str, token: str, timeout: float = 120) -> None:
        reply = self.call("POST", f"/hub/api/users/{user}/server", token)
        assert reply.status in (201, 202), (reply.status, reply.body, self.log_tail())
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            model = self.call("GET", f"/hub/api/users/{user}", self.admin_token).json()
            server = (model.get("servers") or {}).get("")
            if server and server.get("ready"):
                return
            time.sleep(0.5)
        raise AssertionError(f"{user}'s server not ready after {timeout}s:\n{self.log_tail()}")

    def run_in_kernel(self, user: str, token: str, cells: list[str], timeout: float = 120) -> list[str]:
        """Start a kernel on the user's server and run each cell; each cell's text output
        (streams, results, errors) as one string."""
        reply = self.call("POST", f"/user/{user}/api/kernels", token, {"name": "python3"})
        assert reply.status == 201, (reply.status, reply.body, self.log_tail())
        kid = reply.json()["id"]
        ws = self.url.replace("http://", "ws://") + f"/user/{user}/api/kernels/{kid}/channels"
        try:
            return asyncio.run(asyncio.wait_for(_execute(ws, token, user, cells), timeout))
        finally:
            self.call("DELETE", f"/user/{user}/api/kernels/{kid}", token)


async def _execute(url: str, token: str, user: str, cells: list[str]) -> list[str]:
    from tornado.httpclient import HTTPRequest
    from tornado.websocket import websocket_connect

    conn = await websocket_connect(HTTPRequest(url, headers={"Authorization": f"token {token}"}))
    session, outs = uuid.uuid4().hex, []
    try:
        for code in cells:
            mid = uuid.uuid4().hex
            conn.write_message(json.dumps({
                "header": {"msg_id": mid, "username": user, "session": session, "msg_type": "execute_request",
                           "version": "5.3"},
                "parent_header": {}, "metadata": {}, "channel": "shell", "buffers": [],
                "content": {"code": code, "silent": False, "store_history": True, "user_expressions": {},
                            "allow_stdin": False, "stop_on_error": True}}))
            text: list[str] = []
            idle = replied = False
            while not (idle and replied):
                raw = await conn.read_message()
                if raw is None:
                    raise AssertionError(f"the kernel websocket closed while running {code!r}")
                msg = json.loads(raw)
                if msg.get("parent_header", {}).get("msg_id") != mid:
                    continue
                kind, content = msg["msg_type"], msg["content"]
                if kind == "stream":
                    text.append(content["text"])
                elif kind in ("execute_result", "display_data"):
                    text.append(content["data"].get("text/plain", ""))
                elif kind == "error":
                    text.append(f"{content['ename']}: {content['evalue']}")
                elif kind == "status" and content["execution_state"] == "idle":
                    idle = True
                elif kind == "execute_reply":
                    replied = True
            outs.append("".join(text))
    finally:
        conn.close()
    return outs


@contextlib.contextmanager
def running_hub(state: Path, password: str, admin_token: str, pg_admin_dsn: str | None,
                timeout: float = 90) -> Iterator[Hub]:
    """Start `jupyterhub -f deploy/jupyterhub_config.py` on free loopback ports; stop it, its
    proxy, the students' servers and their kernels afterwards, even when the test failed."""
    import psutil

    state.mkdir(parents=True, exist_ok=True)
    port = free_port()
    env = {**os.environ, "AGENTOS_HUB_DIR": str(state), "AGENTOS_HUB_IP": "127.0.0.1",
           "AGENTOS_HUB_PORT": str(port), "AGENTOS_HUB_INTERNAL_PORT": str(free_port()),
           "AGENTOS_HUB_PROXY_API_PORT": str(free_port()), "AGENTOS_HUB_PASSWORD": password,
           "AGENTOS_HUB_ADMIN_TOKEN": admin_token, "CONFIGPROXY_AUTH_TOKEN": uuid.uuid4().hex}
    env.pop("AGENTOS_HUB_PG_ADMIN_DSN", None)
    if pg_admin_dsn:
        env["AGENTOS_HUB_PG_ADMIN_DSN"] = pg_admin_dsn
    log = state / "hub.log"
    with log.open("wb") as out:
        proc = subprocess.Popen([sys.executable, "-m", "jupyterhub", "-f", str(CONFIG)], cwd=state,
                                env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    hub = Hub(f"http://127.0.0.1:{port}", state, admin_token, proc, log)
    try:
        deadline = time.monotonic() + timeout
        while not (_up(port) and hub.call("GET", "/hub/api/", admin_token).status == 200):
            if proc.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"the hub did not start (exit {proc.poll()}):\n{hub.log_tail()}")
            time.sleep(0.3)
        yield hub
    finally:
        family = _family(psutil, proc.pid)
        proc.send_signal(signal.SIGTERM)  # the hub stops the servers and the proxy it started
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)
        for p in family:  # whatever did not stop with it
            with contextlib.suppress(psutil.Error):
                p.kill()
        _, alive = psutil.wait_procs(family, timeout=10)
        if alive:  # a teardown error in the report, never a process left behind silently
            raise AssertionError(f"still running after the hub stopped: {[p.pid for p in alive]}")


def _up(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


def _family(psutil: Any, pid: int) -> list[Any]:
    try:
        return psutil.Process(pid).children(recursive=True)
    except psutil.Error:
        return []

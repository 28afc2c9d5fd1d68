"""A real HTTP server on 127.0.0.1 (ephemeral port) in a thread, for testing remote retrievers.

``FakeServer(respond)`` starts one; ``respond(request)`` returns a
:class:`Reply` (status, JSON body, optional stall before answering). Every
request is recorded in ``requests`` and ``max_active`` is the most requests
handled at once. :meth:`FakeServer.close` releases stalled handlers, shuts the
server down and joins every thread. Standard library only.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["FakeServer", "Reply", "Request"]


@dataclass
class Reply:
    status: int = 200
    body: Any = None
    stall: float = 0.0  # seconds to wait before answering (released at teardown)
    headers: dict[str, str] = field(default_factory=dict)


@dataclass
class Request:
    path: str
    headers: dict[str, str]
    body: Any
    attempt: int  # 1 for the first request with this body's query_id, 2 for its retry...


class FakeServer:
    def __init__(self, respond: Callable[[Request], Reply]) -> None:
        self.respond = respond
        self.requests: list[Request] = []
        self.release = threading.Event()
        self.lock = threading.Lock()
        self.active = 0
        self.max_active = 0
        self._attempts: dict[str, int] = {}
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # keep test output clean
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                try:
                    body = json.loads(raw)
                except ValueError:
                    body = raw.decode("utf-8", "replace")
                with server.lock:
                    server.active += 1
                    server.max_active = max(server.max_active, server.active)
                    qid = str(body.get("query_id", "")) if isinstance(body, dict) else ""
                    server._attempts[qid] = server._attempts.get(qid, 0) + 1
                    request = Request(self.path, dict(self.headers), body, server._attempts[qid])
                    server.requests.append(request)
                try:
                    reply = server.respond(request)
                    if reply.stall:
                        server.release.wait(reply.stall)
                    payload = (
                        reply.body
                        if isinstance(reply.body, bytes)
                        else json.dumps(reply.body).encode()
                    )
                    self.send_response(reply.status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(payload)))
                    for name, value in reply.headers.items():
                        self.send_header(name, value)
                    self.end_headers()
                    self.wfile.write(payload)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client timed out and left
                finally:
                    with server.lock:
                        server.active -= 1

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = False  # so server_close() joins the handler threads
        self.thread = threading.Thread(
            target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self.thread.start()

    @property
    def url(self) -> str:
        port = self.httpd.server_address[1]
        return f"http://127.0.0.1:{port}"

    def close(self) -> None:
        self.release.set()
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(timeout=5)
        assert not self.thread.is_alive()

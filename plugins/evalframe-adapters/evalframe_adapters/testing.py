"""A real HTTP server on 127.0.0.1 (ephemeral port) in a thread, for testing remote retrievers.

``FakeServer(respond)`` starts one; ``respond(request)`` returns a
:class:`Reply` (status, JSON body, optional stall before answering). Every
request that arrives whole is recorded in ``requests`` (a client that
leaves before its body is through sent none), ``max_active`` is the most requests
handled at once and ``connections`` the TCP connections accepted. With
``keep_alive=True`` it speaks HTTP/1.1 and keeps connections open between
requests, as a production server does. :meth:`FakeServer.close` releases
stalled handlers, shuts the server down and joins every thread. Standard
library only.
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
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
    def __init__(self, respond: Callable[[Request], Reply], *, keep_alive: bool = False) -> None:
        self.respond = respond
        self.connections = 0
        self._open: set[socket.socket] = set()
        self.requests: list[Request] = []
        self.request_times: list[float] = []  # time.monotonic() when each request arrived
        self.release = threading.Event()
        self.lock = threading.Lock()
        self.active = 0
        self.max_active = 0
        self._attempts: dict[str, int] = {}
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1" if keep_alive else "HTTP/1.0"

            def setup(self) -> None:
                super().setup()
                with server.lock:
                    server.connections += 1
                    server._open.add(self.connection)

            def finish(self) -> None:
                with server.lock:
                    server._open.discard(self.connection)
                super().finish()

            def log_message(self, *args: Any) -> None:  # keep test output clean
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                if len(raw) < length:
                    # the client gave up before its body was through (its own timeout, on
                    # a busy machine): no request arrived, and none is recorded
                    self.close_connection = True
                    return
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
                    server.request_times.append(time.monotonic())
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
        with self.lock:  # kept-alive connections would hold their handler threads
            for sock in self._open:
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(timeout=5)
        assert not self.thread.is_alive()

"""A tiny HTTP server on loopback for tests of outbound calls: each request is answered by a function of the handler."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

# (status, headers, body) for one request; the handler gives the method, path and headers, its body already read.
Answer = Callable[[BaseHTTPRequestHandler], tuple[int, dict[str, str], bytes]]


@contextmanager
def loopback_server(answer: Answer) -> Iterator[int]:
    """Serve on 127.0.0.1 at a free port (yielded) until the block ends."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802
            self._reply()

        def do_POST(self) -> None:  # noqa: N802
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            self._reply()

        def _reply(self) -> None:
            status, headers, body = answer(self)
            self.send_response(status)
            for name, value in {**headers, "Content-Length": str(len(body))}.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        yield int(httpd.server_address[1])
    finally:
        httpd.shutdown()
        httpd.server_close()

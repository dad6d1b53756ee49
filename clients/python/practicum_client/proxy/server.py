"""Serving an ASGI app with uvicorn: blocking (the CLI), or on a thread for the length of a `with` block."""

from __future__ import annotations

import logging
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import uvicorn

log = logging.getLogger("practicum_client.proxy")


def bind_warning(host: str) -> str | None:
    """A warning (also logged) when `host` listens on every interface: anyone on the network who learns the token
    can then spend the upstream's key through this proxy. None for a specific address."""
    if host.strip("[]") not in ("0.0.0.0", "::", ""):
        return None
    message = (
        f"the proxy listens on every interface ({host or 'all'}): anyone who can reach this machine and has the token "
        "can call the upstream through it; listen on 127.0.0.1 unless that is what you want"
    )
    log.warning(message)
    return message


def serve(app: Any, *, host: str, port: int) -> None:
    """Until interrupted (Ctrl-C / SIGTERM, which uvicorn handles). No access log: a request line can carry a key in
    its query string (some providers take `?key=`), and the proxy logs no key."""
    bind_warning(host)
    uvicorn.run(app, host=host, port=port, log_level="info", access_log=False, lifespan="on")


@contextmanager
def serving(app: Any, *, host: str = "127.0.0.1", port: int = 0, timeout_s: float = 10.0) -> Iterator[str]:
    """`app` served on a thread; yields its root URL (`http://host:port`, a free port when `port` is 0)."""
    listener = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind((host, port))
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", access_log=False, lifespan="on"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [listener]}, name="practicum-asgi", daemon=True)
    thread.start()
    deadline = time.monotonic() + timeout_s
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            listener.close()
            raise RuntimeError(f"the server on {host}:{port} did not start")
        time.sleep(0.01)
    bound = listener.getsockname()
    try:
        yield f"http://{host if ':' not in host else f'[{host}]'}:{bound[1]}"
    finally:
        server.should_exit = True
        thread.join(timeout=timeout_s)
        listener.close()

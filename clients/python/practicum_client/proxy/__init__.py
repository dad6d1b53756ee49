"""An OpenAI-compatible recording proxy: `practicum proxy --upstream URL` between a harness and its model endpoint
records every conversation, with its tool calls, as an episode, with no change to the harness but its base URL.

    proxy = RecordingProxy(Client(), "https://api.openai.com/v1", project="acme", upstream_key=os.environ["OPENAI_API_KEY"])
    with proxy.running() as base_url:       # http://127.0.0.1:PORT/v1
        OpenAI(base_url=base_url, api_key=proxy.token).chat.completions.create(...)   # the proxy's token; its own key upstream
    # leaving the block uploads what is left (proxy.episode_ids)

app.py forwards and records, recorder.py groups calls into conversations and uploads them, stream.py reassembles
streamed answers, server.py serves it with uvicorn (the `proxy` extra).
"""

from __future__ import annotations

import secrets
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import httpx

from practicum_client.client import Client
from practicum_client.proxy.app import ProxyApp
from practicum_client.proxy.recorder import Recorder, Uploader

__all__ = ["ProxyApp", "Recorder", "RecordingProxy", "Uploader"]


class RecordingProxy:
    def __init__(
        self,
        client: Client,
        upstream: str,
        *,
        project: str | None = None,
        idle_s: float = 60.0,
        env: str | None = None,
        interval_s: float = 2.0,
        transport: httpx.AsyncBaseTransport | None = None,
        token: str | None = None,
        upstream_key: str | None = None,
        forward_credentials: bool = False,
    ) -> None:
        """`idle_s`: a conversation no request has continued for this long is finished and uploaded.
        `env`: the environment name its episodes are filed under (the server's default for chat records otherwise).
        `token`: what callers present (X-Practicum-Proxy-Token, or as their api_key); generated when not given, see
        `.token`. `upstream_key` / `forward_credentials`: the upstream's key, or pass the caller's (ProxyApp)."""
        if idle_s <= 0:
            raise ValueError(f"idle_s={idle_s}: must be above 0")
        self.uploader = Uploader(client, project=project or client.project, interval_s=interval_s)
        self.recorder = Recorder(self.uploader.put, idle_s=idle_s, env=env)
        self.token = token or secrets.token_urlsafe(24)
        self.app = ProxyApp(
            upstream,
            self.recorder,
            token=self.token,
            upstream_key=upstream_key,
            forward_credentials=forward_credentials,
            transport=transport,
        )
        self.stopped = threading.Event()
        self.reaper = threading.Thread(target=self._reap, name="practicum-proxy-idle", daemon=True)
        self.reaper.start()

    @property
    def episode_ids(self) -> list[int]:
        return self.uploader.episode_ids

    def _reap(self) -> None:
        while not self.stopped.wait(min(self.recorder.idle_s, 1.0)):
            self.recorder.close_idle()

    def close(self, timeout_s: float = 30.0) -> bool:
        """Finish every open conversation and upload what is buffered; True when all of it was delivered in time."""
        self.stopped.set()
        self.reaper.join(timeout=2.0)
        self.recorder.close_idle(everything=True)
        return self.uploader.close(timeout_s)

    def serve(self, *, host: str = "127.0.0.1", port: int = 8787) -> None:
        from practicum_client.proxy.server import serve

        try:
            serve(self.app, host=host, port=port)
        finally:
            self.close()

    @contextmanager
    def running(self, *, host: str = "127.0.0.1", port: int = 0) -> Iterator[str]:
        """Served on a thread; yields the base URL to give a harness (`.../v1`). Closes the proxy on leaving."""
        from practicum_client.proxy.server import serving

        try:
            with serving(self.app, host=host, port=port) as root:
                yield f"{root}/v1"
        finally:
            self.close()

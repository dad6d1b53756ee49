"""practicum-client against a real server: pytest-django's live_server (a threaded HTTP server on loopback, on the
test database), alice's key, and transports that lose answers or die mid-upload the way networks and processes do."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from practicum_client import Client, RetryPolicy
from tests.clients.network import Network

FAST_RETRY = RetryPolicy(retries=3, backoff_s=0.01, max_backoff_s=0.05)


@pytest.fixture
def server_key(live_server: Any, alice: Any, project_a: Any, key_for: Any) -> str:
    return str(key_for(alice, project_a))


@pytest.fixture
def connect(live_server: Any, server_key: str) -> Iterator[Callable[..., Client]]:
    """connect(network=None, key=None) -> a Client of alice's project on the live server."""
    made: list[Client] = []

    def make(network: Network | None = None, key: str | None = None) -> Client:
        client = Client(live_server.url, key or server_key, retry=FAST_RETRY, transport=network)
        made.append(client)
        return client

    yield make
    for client in made:
        client.close()

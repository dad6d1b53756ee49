"""practicum-client: send trajectories and training runs from any harness or trainer to a Practicum server.

from practicum_client import Client
client = Client("http://127.0.0.1:8000", "prk_...")
client.episodes.upload("runs/results.jsonl", format="auto")
"""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"

from practicum_client._http import RetryPolicy  # noqa: E402  (after __version__, which _http reads)
from practicum_client.client import Client  # noqa: E402
from practicum_client.errors import PracticumError, TransportError  # noqa: E402
from practicum_client.loop import finish, init, log_metrics, should_stop  # noqa: E402
from practicum_client.runs import ExternalRun  # noqa: E402

__all__ = [
    "Client",
    "ExternalRun",
    "PracticumCallback",
    "PracticumError",
    "RetryPolicy",
    "TransportError",
    "__version__",
    "finish",
    "init",
    "log_metrics",
    "should_stop",
]


def __getattr__(name: str) -> Any:
    if name == "PracticumCallback":  # imports transformers: only when asked for
        from practicum_client.callback import PracticumCallback

        return PracticumCallback
    raise AttributeError(f"module 'practicum_client' has no attribute {name!r}")

"""The client: one HTTP session and the resources on it."""

from __future__ import annotations

from types import TracebackType

import httpx

from practicum_client._http import Http, RetryPolicy
from practicum_client.config import settings_resolve
from practicum_client.datasets import Datasets
from practicum_client.episodes import Episodes
from practicum_client.evaluations import Evaluations
from practicum_client.runs import Runs


class Client:
    """`Client(url, key)`; either may come from PRACTICUM_URL / PRACTICUM_API_KEY or the config file instead
    (practicum_client.config). `project` is the default project slug for writes (a project key needs none)."""

    def __init__(
        self,
        url: str | None = None,
        key: str | None = None,
        *,
        project: str | None = None,
        timeout_s: float = 60.0,
        retry: RetryPolicy | None = None,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        settings = settings_resolve(url=url, key=key, project=project)
        self.url = settings.url
        self.project = settings.project
        self.http = Http(settings.url, settings.key, timeout_s=timeout_s, retry=retry, transport=transport)
        self.episodes = Episodes(self.http, self.project)
        self.datasets = Datasets(self.http)
        self.evaluations = Evaluations(self.http, self.project)
        self.runs = Runs(self.http, self.project)

    def close(self) -> None:
        self.http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None, trace: TracebackType | None) -> None:
        self.close()

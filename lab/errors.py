"""Domain errors: raised by services, answered by the API and the pages with their code and HTTP status."""

from __future__ import annotations

from typing import Any


class DomainError(Exception):
    status = 400

    def __init__(self, code: str, message: str, *, status: int | None = None, **details: Any) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.details = details
        if status is not None:
            self.status = status

    def as_json(self) -> dict[str, Any]:
        return {"error": {"code": self.code, "message": self.message, **self.details}}


class NotFound(DomainError):
    status = 404


class Forbidden(DomainError):
    status = 403


class Conflict(DomainError):
    status = 409


class RateLimited(DomainError):
    """429 `rate_limited`; the API answers with Retry-After: `retry_after` seconds."""

    status = 429

    def __init__(self, message: str, *, retry_after: int, **details: Any) -> None:
        super().__init__("rate_limited", message, retry_after=retry_after, **details)
        self.retry_after = retry_after

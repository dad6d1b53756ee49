"""Errors the client raises: the server's own code and message, or why no answer came back."""

from __future__ import annotations

from typing import Any

import httpx


class PracticumError(Exception):
    """The server refused a request: `code` and `message` are its own ({"error": {"code", "message", ...}}),
    `status` the HTTP status, `details` the rest of its error object (`fields` naming the offending input, ...)."""

    def __init__(self, code: str, message: str, *, status: int = 0, details: dict[str, Any] | None = None) -> None:
        super().__init__(f"{code}: {message}" + (f" (HTTP {status})" if status else ""))
        self.code = code
        self.message = message
        self.status = status
        self.details = details or {}


class TransportError(PracticumError):
    """No answer: the server could not be reached, or the connection failed, after every retry."""


def error_from_response(response: httpx.Response) -> PracticumError:
    """The server's error object as an exception; a body that is not one (a proxy's page) keeps its first characters."""
    try:
        body = response.json()
    except ValueError:
        body = None
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict) and "code" in error:
        details = {k: v for k, v in error.items() if k not in ("code", "message")}
        return PracticumError(str(error["code"]), str(error.get("message", "")), status=response.status_code, details=details)
    return PracticumError(f"http_{response.status_code}", response.text[:300] or response.reason_phrase, status=response.status_code)

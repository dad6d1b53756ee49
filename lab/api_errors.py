"""One JSON error shape for every API failure: {"error": {"code", "message", ...}}."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import PermissionDenied
from django.http import Http404
from rest_framework import exceptions
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from lab.errors import DomainError, RateLimited


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    if isinstance(exc, DomainError):
        headers = {"Retry-After": str(exc.retry_after)} if isinstance(exc, RateLimited) else None
        return Response(exc.as_json(), status=exc.status, headers=headers)
    # DRF's own get_object_or_404 and permission checks raise Django's exceptions; they get the same shape.
    if isinstance(exc, Http404):
        exc = exceptions.NotFound(str(exc) or None)
    elif isinstance(exc, PermissionDenied):
        exc = exceptions.PermissionDenied(str(exc) or None)
    response = drf_exception_handler(exc, context)
    if response is None:
        return None
    if isinstance(exc, exceptions.ValidationError):
        response.data = {"error": {"code": "invalid", "message": "The request has invalid fields.", "fields": response.data}}
    elif isinstance(exc, exceptions.APIException):
        detail = response.data.get("detail", str(exc)) if isinstance(response.data, dict) else str(exc)
        response.data = {"error": {"code": exc.default_code, "message": str(detail)}}
    return response

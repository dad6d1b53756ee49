"""Reading an API request's parameters and body.

Unknown query parameters are refused (400), so a misspelt filter is an error rather than a silently
unfiltered answer. What each operation takes is read off the OpenAPI schema, which therefore has to be
complete: a parameter a view reads but the schema does not declare would be refused here."""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from typing import Any

from rest_framework import exceptions, permissions
from rest_framework.request import Request

from lab.edge import int_param
from lab.errors import DomainError

_METHODS = ("get", "post", "put", "patch", "delete")


def body_object(request: Request) -> Mapping[str, Any]:
    """The request body as a JSON object (a form body reads as one too); a list or a scalar is a 400 naming `body`."""
    if not isinstance(request.data, dict):
        raise DomainError("invalid_body", "send a JSON object", fields=["body"])
    return request.data


def body_field(body: Mapping[str, Any], name: str, kind: type, default: Any) -> Any:
    """`body[name]` when it is a `kind` (a bool is no int), `default` when absent; else a 400 naming the field."""
    value = body.get(name, default)
    if not isinstance(value, kind) or isinstance(value, bool) and kind is not bool:
        raise DomainError("invalid_config", f"{name}={value!r}: must be a {kind.__name__}", fields=[name])
    return value


def query_int(request: Request, name: str, *, default: int, low: int, high: int) -> int:
    """The query parameter `name` as an int within [low, high]; `default` when it is absent or empty."""
    raw = request.query_params.get(name)
    if raw in (None, ""):
        return default
    return int_param(raw, name=name, low=low, high=high)


class UnknownQueryParameter(exceptions.APIException):
    status_code = 400
    default_code = "unknown_parameter"
    default_detail = "Unknown query parameter."


@functools.cache
def _operations() -> list[tuple[re.Pattern[str], str, frozenset[str]]]:
    """(path regex, METHOD, query parameter names) per operation; built once per process (about a second)."""
    from drf_spectacular.generators import SchemaGenerator

    schema = SchemaGenerator().get_schema(request=None, public=True)
    operations = []
    for path, item in schema["paths"].items():
        # Routes answer with and without the trailing slash; `{id}` is one path segment.
        regex = re.compile("^" + re.sub(r"\\\{[^}/]+\\\}", "[^/]+", re.escape(path.rstrip("/"))) + "/?$")
        for method in _METHODS:
            if method in item:
                parameters = [*item.get("parameters", []), *item[method].get("parameters", [])]
                operations.append((regex, method.upper(), frozenset(p["name"] for p in parameters if p.get("in") == "query")))
    # A literal segment wins over a placeholder: /diagnoses/credit/ is not /diagnoses/{id}/.
    return sorted(operations, key=lambda operation: operation[0].pattern.count("[^/]+"))


def query_parameters_allowed(method: str, path: str) -> frozenset[str] | None:
    """The query parameters the operation at `method path` declares; None when no operation matches."""
    for regex, operation_method, names in _operations():
        if operation_method == method and regex.match(path):
            return names
    return None


class KnownQueryParameters(permissions.BasePermission):
    """Runs with the permission checks, after authentication: an anonymous caller learns nothing from it."""

    def has_permission(self, request: Request, view: Any) -> bool:
        given = set(request.query_params.keys())
        if not given:
            return True
        allowed = query_parameters_allowed(request.method or "", request.path_info)
        unknown = sorted(given - allowed) if allowed is not None else []
        if unknown:
            names = ", ".join(sorted(allowed or ())) or "none"
            raise UnknownQueryParameter(
                f"unknown query parameter(s) {', '.join(repr(u[:50]) for u in unknown[:5])}; this operation takes: {names}"
            )
        return True

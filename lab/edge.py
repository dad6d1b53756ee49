"""Checks at the edge that every surface shares, so hostile input is a 400 naming the field, never a 500.

PostgreSQL refuses NUL characters in text and in JSON, and lone UTF-16 surrogates cannot be encoded at all;
integers past int64 overflow every integer column. These helpers and `BadInputMiddleware` stop such values
before they reach a query.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from typing import Any

from django.http import HttpRequest, HttpResponse, HttpResponseBase, JsonResponse

from lab.errors import DomainError

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
MAX_JSON_DEPTH = 64  # request bodies and JSON form fields; stored trajectories have their own, lower bound
_BAD_TEXT = re.compile("[\x00\ud800-\udfff]")


def text_problem(value: str) -> str | None:
    """Why `value` cannot be stored as text, or None."""
    found = _BAD_TEXT.search(value)
    if found is None:
        return None
    return "contains a NUL character" if found.group() == "\x00" else "contains a lone UTF-16 surrogate"


def fields_check(model: Any, **values: Any) -> None:
    """DomainError naming the first text value that its column of `model` cannot hold: too long for the
    column's max_length (PostgreSQL refuses it; SQLite would quietly keep it), or NUL / a lone surrogate."""
    for name, value in values.items():
        if not isinstance(value, str):
            continue
        limit = getattr(model._meta.get_field(name), "max_length", None)
        if limit is not None and len(value) > limit:
            raise DomainError("too_long", f"{name} is {len(value)} characters long; at most {limit}", path=name, fields=[name])
        why = text_problem(value)
        if why:
            raise DomainError("invalid_text", f"{name} {why}", path=name, fields=[name])


def int_param(raw: Any, *, name: str, low: int = INT64_MIN, high: int = INT64_MAX, code: str = "invalid_parameter") -> int:
    """`raw` (a query or form value) as an int within [low, high], else DomainError naming `name`."""
    text = str(raw).strip()
    try:
        value = int(text) if len(text) <= 40 else None
    except ValueError:
        value = None
    if value is None:
        raise DomainError(code, f"{name}={str(raw)[:50]!r} is not an integer", path=name)
    if not low <= value <= high:
        raise DomainError(code, f"{name}={value} is outside [{low}, {high}]", path=name)
    return value


def id_param(raw: Any, *, name: str) -> int:
    """`raw` (a JSON value or a query value) as a row id: digits only, so `true`, `1.0`, `+1` and `1_0` are refused."""
    if isinstance(raw, bool) or not isinstance(raw, (int, str)) or not str(raw).isdigit():
        raise DomainError("invalid_parameter", f"{name} must be an id, got {raw!r}", path=name)
    return int_param(raw, name=name, low=1)


def float_param(raw: Any, *, name: str, code: str = "invalid_parameter") -> float:
    """`raw` as a finite float, else DomainError naming `name` (NaN and infinities compare false with everything)."""
    try:
        value = float(str(raw))
    except ValueError:
        raise DomainError(code, f"{name}={str(raw)[:50]!r} is not a number", path=name) from None
    if not math.isfinite(value):
        raise DomainError(code, f"{name}={raw!r} is not a finite number", path=name)
    return value


def json_problem(value: Any, *, path: str = "body", max_depth: int = MAX_JSON_DEPTH) -> tuple[str, str] | None:
    """(path, why) for the first value PostgreSQL could not store or that nests too deep; None if all is well.

    Iterative, so a value deep enough to break a recursive walk is reported rather than crashing it.
    """
    stack: list[tuple[Any, str, int]] = [(value, path, 0)]
    while stack:
        item, where, depth = stack.pop()
        if depth > max_depth:
            return where, f"nested deeper than {max_depth} levels"
        if isinstance(item, str):
            why = text_problem(item)
            if why:
                return where, why
        elif isinstance(item, float) and not math.isfinite(item):
            return where, f"{item} is not a finite number"
        elif isinstance(item, int) and not isinstance(item, bool) and not INT64_MIN <= item <= INT64_MAX:
            return where, f"{item} is outside the 64-bit integer range"
        elif isinstance(item, dict):
            for key, sub in item.items():
                why = text_problem(str(key))
                if why:
                    return f"{where}.{key!r}", f"key {why}"
                stack.append((sub, f"{where}.{key}", depth + 1))
        elif isinstance(item, list):
            stack.extend((sub, f"{where}[{i}]", depth + 1) for i, sub in enumerate(item))
    return None


def json_loads_checked(raw: str | bytes, *, path: str) -> Any:
    """Parse JSON text from a client: NaN/Infinity, over-deep nesting, NUL and lone surrogates are DomainErrors."""

    def refuse_constant(name: str) -> Any:
        raise DomainError("invalid_json", f"{path}: {name} is not a finite number", path=path)

    try:
        value = json.loads(raw, parse_constant=refuse_constant)
    except RecursionError:
        raise DomainError("invalid_json", f"{path}: nested deeper than {MAX_JSON_DEPTH} levels", path=path) from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise DomainError("invalid_json", f"{path} is not valid JSON: {exc}", path=path) from None
    problem = json_problem(value, path=path)
    if problem:
        raise DomainError("invalid_json", f"{problem[0]}: {problem[1]}", path=problem[0])
    return value


def form_problem(data: Any) -> tuple[str, str] | None:
    """(field, why) for the first key or value of a QueryDict holding a NUL character; None if all is well.

    Such a value can be nothing but an attack or a bug, PostgreSQL cannot store it, and every view would
    otherwise have to remember to look for it.
    """
    for key, values in data.lists():
        for text in (key, *values):
            why = text_problem(str(text))
            if why:
                return key[:50].replace("\x00", "\\x00"), why
    return None


def form_check(data: Any) -> None:
    """DomainError (400) naming the first field of `data` that holds a NUL character."""
    problem = form_problem(data)
    if problem is not None:
        raise DomainError("invalid_parameter", f"{problem[0]} {problem[1]}", path=problem[0])


class BadInputMiddleware:
    """Answers 400 to a query string holding a NUL character, on every page and API path, before any view runs.

    Request bodies are checked after authentication instead: by `console_view` for pages and forms, and by
    the API's parsers (lab.api_parsers) for JSON and form bodies.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponseBase]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        problem = form_problem(request.GET)
        if problem is not None:
            field, why = problem
            error = DomainError("invalid_parameter", f"{field} {why}", path=field)
            if request.path.startswith("/api/"):
                return JsonResponse(error.as_json(), status=400)
            return HttpResponse(f"Bad request: {error.message}", status=400, content_type="text/plain; charset=utf-8")
        return self.get_response(request)

"""The API's JSON parser: what PostgreSQL cannot store, or what nests too deep, is a 400 before any view runs."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rest_framework import exceptions
from rest_framework.parsers import FormParser, JSONParser, MultiPartParser

from lab.edge import form_check, json_loads_checked
from lab.errors import DomainError


class StrictJSONParser(JSONParser):
    def parse(self, stream: Any, media_type: str | None = None, parser_context: Mapping[str, Any] | None = None) -> Any:
        raw = stream.read() if stream is not None else b""
        try:
            return json_loads_checked(raw, path="body")
        except DomainError as exc:
            raise exceptions.ParseError(exc.message) from None


class StrictFormParser(FormParser):
    def parse(self, stream: Any, media_type: str | None = None, parser_context: Mapping[str, Any] | None = None) -> Any:
        data = super().parse(stream, media_type, parser_context)
        try:
            form_check(data)
        except DomainError as exc:
            raise exceptions.ParseError(exc.message) from None
        return data


class StrictMultiPartParser(MultiPartParser):
    """Checks the form fields; the files are the uploads, which the ingest pipeline checks."""

    def parse(self, stream: Any, media_type: str | None = None, parser_context: Mapping[str, Any] | None = None) -> Any:
        parsed = super().parse(stream, media_type, parser_context)
        try:
            form_check(parsed.data)
        except DomainError as exc:
            raise exceptions.ParseError(exc.message) from None
        return parsed

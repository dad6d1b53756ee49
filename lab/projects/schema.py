"""OpenAPI description of project API keys, so clients and the schema fuzz test see how to authenticate."""

from __future__ import annotations

from typing import Any

from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.utils import OpenApiParameter

# Endpoints that act in one project take it from the query (or the body) unless the API key names it already.
PROJECT_PARAMETER = OpenApiParameter("project", str, description="The project's slug or id; an API key's own project by default.")


class ApiKeyScheme(OpenApiAuthenticationExtension):  # type: ignore[no-untyped-call]
    target_class = "lab.projects.auth.ApiKeyAuthentication"
    name = "apiKeyAuth"

    def get_security_definition(self, auto_schema: Any) -> dict[str, str]:
        return {"type": "http", "scheme": "bearer", "description": "A project API key: `Authorization: Bearer <key>`."}

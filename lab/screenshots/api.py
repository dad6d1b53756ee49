"""GET /api/v1/screenshots/<sha256>?project=<slug>: one stored screenshot's PNG, to members of its project.

The episode viewer's thumbnails load from here (session auth); a program reads them with its API key. A project
the caller cannot see, or a digest the project does not hold, answers 404 alike; a malformed digest 400.
"""

from __future__ import annotations

from django.http import HttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework.request import Request
from rest_framework.views import APIView

from lab.projects.models import Role
from lab.projects.permissions import write_project
from lab.projects.schema import PROJECT_PARAMETER
from lab.screenshots.services import screenshot_png

_READ_ROLES = frozenset(Role)  # every member may look


class ScreenshotView(APIView):
    @extend_schema(
        operation_id="screenshot_get",
        tags=["episodes"],
        parameters=[PROJECT_PARAMETER],
        responses={
            (200, "image/png"): OpenApiResponse(OpenApiTypes.BINARY, description="The PNG bytes."),
            400: OpenApiTypes.OBJECT,
            404: OpenApiTypes.OBJECT,
        },
    )
    def get(self, request: Request, sha256: str) -> HttpResponse:
        project = write_project(request, request.query_params.get("project"), roles=_READ_ROLES, action="read screenshots")
        response = HttpResponse(screenshot_png(project=project, sha256=sha256), content_type="image/png")
        # The bytes behind a digest never change: a browser may keep them as long as it likes (but not share them).
        response["Cache-Control"] = "private, max-age=31536000, immutable"
        return response

"""The console's reports by API: /api/v1/fidelity (the fidelity page's JSON) and /api/v1/environments (what this
installation runs: every environment the registry discovered, with what it provides)."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from environments import registry
from lab.console.fidelity import fidelity_for, fidelity_params
from lab.projects.permissions import visible_projects


class FidelityReportView(APIView):
    """Human user sessions against a simulator's (lab.console.fidelity): the same JSON the fidelity page shows.

    `project` is required; `human_<filter>` and `sim_<filter>` choose the two sets (episode filters), `sim_user_agent`
    the agent config in the user slot, `max_episodes` bounds each set. A bad parameter answers 400 naming it."""

    @extend_schema(
        operation_id="fidelity_report",
        tags=["reports"],
        responses=OpenApiTypes.OBJECT,
        parameters=[OpenApiParameter(name, str, required=name == "project") for name in fidelity_params()],
    )
    def get(self, request: Request) -> Response:
        return Response(fidelity_for(projects=visible_projects(request), params=request.query_params))


def environment_list() -> list[dict[str, object]]:
    """Every environment with registered tasks, as the registry discovered it: its tasks, anchors and what else it
    provides (the same for every caller: an installation's environments are not a project's)."""
    return [
        {
            "env": meta.env,
            "tasks": [task.id for task in registry.list_tasks(meta.env)],
            "playable": meta.playable,
            "anchors": sorted(meta.anchors),
            "default_anchor": meta.default_anchor,
            "analyzer": bool(meta.analyzer),
            "calibration": bool(meta.calibration),
            "screen": bool(meta.screen),
        }
        for meta in registry.list_envs()
    ]


class EnvironmentListView(APIView):
    """The environments this installation runs (`environment_list`), by name."""

    @extend_schema(operation_id="environment_list", tags=["reports"], responses=OpenApiTypes.OBJECT)
    def get(self, request: Request) -> Response:
        return Response({"environments": environment_list()})

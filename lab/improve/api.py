"""Improvement loops over the API: start one from an evaluation, follow it, resume it, promote its checkpoint.

    POST /api/v1/loops/                  {"project", "evaluation": id, "episodes": [ids] (default: every failing one),
                                          "config": {diagnoser, sources, recipe, recipe_config, base_model, dev_seeds,
                                          test_seeds, ...} (lab.improve.config), "name"}   -> 201, queued
    GET  /api/v1/loops/  /api/v1/loops/<id>/                  with "lineage": the chain of stages and what each made
    POST /api/v1/loops/<id>/resume/      a failed loop, again from the stage it failed in
    POST /api/v1/loops/<id>/promote/     the chosen checkpoint as a new agent config -> {"agent": {...}}
    POST /api/v1/loops/<id>/cancel/      a queued or running loop (and the rollouts and run it started); 409
                                         illegal_transition for a finished or failed one
    GET  /api/v1/loops/failing/?evaluation=<id>      the failing episodes an evaluation offers to a loop

Writes need the owner or researcher role in the loop's project; bad input answers 400 naming the field, a plan that
would train or select on the test split 400 with code test_leakage naming the task and seed.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from lab.api_params import body_field, body_object
from lab.edge import id_param
from lab.improve.models import ImprovementLoop, LoopDataset
from lab.improve.selectors import loop_get, loop_lineage, loop_list
from lab.improve.services import failing_episodes, loop_cancel, loop_create, loop_promote, loop_resume
from lab.projects.permissions import visible_projects, writable, write_project
from lab.projects.schema import PROJECT_PARAMETER
from lab.rollouts.selectors import evaluation_get


class LoopDatasetSerializer(serializers.ModelSerializer):
    class Meta:
        model = LoopDataset
        fields = ["id", "version", "sources", "counts", "lines", "size_bytes", "content_hash", "episode_ids", "diagnosis_ids", "created_at"]
        read_only_fields = fields


class ImprovementLoopSerializer(serializers.ModelSerializer):
    project: serializers.SlugRelatedField = serializers.SlugRelatedField(slug_field="slug", read_only=True)
    agent: serializers.SlugRelatedField = serializers.SlugRelatedField(slug_field="name", read_only=True)
    promoted_agent: serializers.SlugRelatedField = serializers.SlugRelatedField(slug_field="name", read_only=True)
    dataset = LoopDatasetSerializer(read_only=True)
    lineage = serializers.SerializerMethodField()

    class Meta:
        model = ImprovementLoop
        fields = [
            "id",
            "project",
            "name",
            "agent",
            "evaluation",
            "stage",
            "status",
            "progress",
            "error",
            "config",
            "episode_ids",
            "stages",
            "diagnosis_job",
            "dataset",
            "run",
            "dev_evaluations",
            "checkpoint",
            "baseline_evaluation",
            "test_evaluation",
            "report",
            "promoted_agent",
            "created_at",
            "started_at",
            "ended_at",
            "lineage",
        ]
        read_only_fields = fields

    def get_lineage(self, loop: ImprovementLoop) -> list[dict[str, Any]]:
        return loop_lineage(loop)


@extend_schema(tags=["loops"])
class ImprovementLoopViewSet(viewsets.ReadOnlyModelViewSet):
    serializer_class = ImprovementLoopSerializer

    def get_queryset(self) -> Any:
        return loop_list(projects=visible_projects(self.request))

    def get_object(self) -> ImprovementLoop:
        return loop_get(projects=visible_projects(self.request), pk=self.kwargs["pk"])

    @extend_schema(request=OpenApiTypes.OBJECT, responses={201: ImprovementLoopSerializer}, parameters=[PROJECT_PARAMETER])
    def create(self, request: Request) -> Response:
        body = body_object(request)
        project = write_project(request, request.query_params.get("project") or body.get("project"), action="start improvement loops")
        evaluation = evaluation_get(
            projects=visible_projects(request).filter(pk=project.pk), pk=id_param(body.get("evaluation"), name="evaluation")
        )
        loop = loop_create(
            project=project,
            evaluation=evaluation,
            config=body_field(body, "config", dict, {}),
            episode_ids=body.get("episodes"),
            name=body_field(body, "name", str, ""),
            user=request.user,
        )
        return Response(ImprovementLoopSerializer(loop).data, status=status.HTTP_201_CREATED)

    @extend_schema(request=None, responses={200: ImprovementLoopSerializer})
    @action(detail=True, methods=["post"])
    def resume(self, request: Request, pk: str) -> Response:
        loop = loop_resume(loop=writable(request, self.get_object(), action="resume improvement loops"))
        return Response(ImprovementLoopSerializer(loop).data)

    @extend_schema(request=None, responses={200: ImprovementLoopSerializer})
    @action(detail=True, methods=["post"])
    def cancel(self, request: Request, pk: str) -> Response:
        loop = loop_cancel(loop=writable(request, self.get_object(), action="cancel improvement loops"))
        return Response(ImprovementLoopSerializer(loop_get(projects=visible_projects(request), pk=loop.pk)).data)

    @extend_schema(request=None, responses={200: OpenApiTypes.OBJECT})
    @action(detail=True, methods=["post"])
    def promote(self, request: Request, pk: str) -> Response:
        agent = loop_promote(loop=writable(request, self.get_object(), action="promote checkpoints"), user=request.user)
        return Response(
            {
                "loop": int(pk),
                "agent": {"id": agent.pk, "name": agent.name, "kind": agent.kind, "model": agent.model, "checkpoint": agent.checkpoint_id},
            }
        )

    @extend_schema(parameters=[OpenApiParameter("evaluation", int, required=True)], responses={200: OpenApiTypes.OBJECT})
    @action(detail=False, methods=["get"])
    def failing(self, request: Request) -> Response:
        evaluation = evaluation_get(
            projects=visible_projects(request), pk=id_param(request.query_params.get("evaluation"), name="evaluation")
        )
        rows = [
            {"id": e.pk, "task": e.task.key, "seed": e.seed, "composite": e.composite, "steps": e.step_count}
            for e in failing_episodes(evaluation)
        ]
        return Response({"evaluation": evaluation.pk, "episodes": rows})

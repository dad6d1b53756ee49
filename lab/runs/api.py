"""Training runs over the API: launch, cancel, metric series, checkpoints, and evaluating a checkpoint.

    POST /api/v1/runs/                       {"project", "recipe", "base_model", "config": {...}, "dataset": {filters}, "name"}
    POST /api/v1/runs/<id>/cancel/
    GET  /api/v1/runs/<id>/metrics/?name=loss&name=lr        {name: {"steps": [...], "values": [...]}}
    GET  /api/v1/runs/<id>/checkpoints/
    POST /api/v1/runs/<id>/evaluate-checkpoint/  (lab.rollouts.api: an evaluation, so rollouts serves it)

External runs (lab.runs.external), trained elsewhere and reported here:
    POST /api/v1/runs/external/              {"name", "recipe" (the trainer's label), "base_model", "config"}  -> running
    POST /api/v1/runs/<id>/metrics/          {"metrics": [{"step", "values": {name: number}}], "progress"}
                                             -> {"recorded", "status", "should_stop"}
    POST /api/v1/runs/<id>/checkpoints/      {"step", "path", "eval_results"}
    POST /api/v1/runs/<id>/finish/           {"status": "finished" | "failed", "error"}

Launching, reporting, cancelling and evaluating need the owner or researcher role in the run's project. Bad input is
answered 400 with {"error": {"code", "message", "fields": [...]}} naming the offending field.
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
from lab.projects.permissions import visible_projects, writable, write_project
from lab.projects.schema import PROJECT_PARAMETER
from lab.runs.external import external_checkpoint_report, external_metrics_report, external_run_create, external_run_finish
from lab.runs.models import Checkpoint, TrainingRun
from lab.runs.selectors import run_get, run_list, run_metric_series
from lab.runs.services import run_cancel, run_create
from lab.trajectories.imports import upload_provenance


class CheckpointSerializer(serializers.ModelSerializer):
    class Meta:
        model = Checkpoint
        fields = ["id", "step", "path", "eval_results", "created_at"]


class TrainingRunSerializer(serializers.ModelSerializer):
    project: serializers.SlugRelatedField = serializers.SlugRelatedField(slug_field="slug", read_only=True)
    checkpoints = CheckpointSerializer(many=True, read_only=True)

    class Meta:
        model = TrainingRun
        fields = [
            "id",
            "project",
            "name",
            "recipe",
            "config",
            "base_model",
            "dataset_spec",
            "episode_ids",
            "dataset_hash",
            "status",
            "progress",
            "provenance",
            "error",
            "created_at",
            "started_at",
            "ended_at",
            "checkpoints",
        ]
        read_only_fields = fields


@extend_schema(tags=["runs"])
class TrainingRunViewSet(viewsets.ReadOnlyModelViewSet):
    serializer_class = TrainingRunSerializer

    def get_queryset(self) -> Any:
        return run_list(projects=visible_projects(self.request))

    def get_object(self) -> TrainingRun:
        return run_get(projects=visible_projects(self.request), pk=self.kwargs["pk"])

    @extend_schema(request=OpenApiTypes.OBJECT, responses={201: TrainingRunSerializer}, parameters=[PROJECT_PARAMETER])
    def create(self, request: Request) -> Response:
        body = body_object(request)
        project = write_project(request, request.query_params.get("project") or body.get("project"), action="start training runs")
        run = run_create(
            project=project,
            recipe=body_field(body, "recipe", str, ""),
            base_model=body_field(body, "base_model", str, ""),
            config=body_field(body, "config", dict, {}),
            dataset_filters=body_field(body, "dataset", dict, {}),
            include_partial=body_field(body, "include_partial", bool, False),
            name=body_field(body, "name", str, ""),
            user=request.user,
        )
        return Response(TrainingRunSerializer(run).data, status=status.HTTP_201_CREATED)

    @extend_schema(request=OpenApiTypes.OBJECT, responses={201: TrainingRunSerializer}, parameters=[PROJECT_PARAMETER])
    @action(detail=False, methods=["post"])
    def external(self, request: Request) -> Response:
        """Start an external run: trained elsewhere, reported here (its tier is the key's: external or upload)."""
        body = body_object(request)
        project = write_project(request, request.query_params.get("project") or body.get("project"), action="report training runs")
        run = external_run_create(
            project=project,
            name=body_field(body, "name", str, ""),
            recipe=body_field(body, "recipe", str, ""),
            base_model=body_field(body, "base_model", str, ""),
            config=body_field(body, "config", dict, {}),
            user=request.user,
            provenance=upload_provenance(request.auth),
        )
        return Response(TrainingRunSerializer(run).data, status=status.HTTP_201_CREATED)

    @extend_schema(request=OpenApiTypes.OBJECT, responses=OpenApiTypes.OBJECT)
    @action(detail=True, methods=["post"])
    def finish(self, request: Request, pk: str) -> Response:
        """An external run's trainer says it ended: {"status": "finished" | "failed", "error"}."""
        run = writable(request, self.get_object(), action="report training runs")
        body = body_object(request)
        run = external_run_finish(run=run, status=body_field(body, "status", str, ""), error=body_field(body, "error", str, ""))
        return Response(TrainingRunSerializer(run).data)

    @extend_schema(request=None)
    @action(detail=True, methods=["post"])
    def cancel(self, request: Request, pk: str) -> Response:
        run = run_cancel(run=writable(request, self.get_object(), action="cancel training runs"))
        return Response(TrainingRunSerializer(run).data)

    @extend_schema(parameters=[OpenApiParameter("name", str, many=True)], responses=OpenApiTypes.OBJECT)
    @action(detail=True, methods=["get"])
    def metrics(self, request: Request, pk: str) -> Response:
        run = self.get_object()
        return Response(run_metric_series(run=run, names=request.query_params.getlist("name") or None))

    @extend_schema(request=OpenApiTypes.OBJECT, responses=OpenApiTypes.OBJECT)
    @metrics.mapping.post
    def metrics_report(self, request: Request, pk: str) -> Response:
        """An external run's metrics; the answer's `should_stop` is the console's cancel flag."""
        run = writable(request, self.get_object(), action="report training runs")
        body = body_object(request)
        return Response(
            external_metrics_report(run=run, metrics=body.get("metrics"), progress=body.get("progress"), body_bytes=len(request.body))
        )

    @extend_schema(responses=CheckpointSerializer(many=True))
    @action(detail=True, methods=["get"])
    def checkpoints(self, request: Request, pk: str) -> Response:
        run = self.get_object()
        return Response(CheckpointSerializer(run.checkpoints.order_by("step"), many=True).data)

    @extend_schema(request=OpenApiTypes.OBJECT, responses={201: CheckpointSerializer})
    @checkpoints.mapping.post
    def checkpoint_report(self, request: Request, pk: str) -> Response:
        """An external run's checkpoint: {"step", "path" (where the trainer keeps it), "eval_results": {...}}."""
        run = writable(request, self.get_object(), action="report training runs")
        body = body_object(request)
        checkpoint = external_checkpoint_report(
            run=run, step=body.get("step"), path=body.get("path", ""), eval_results=body.get("eval_results", {})
        )
        return Response(CheckpointSerializer(checkpoint).data, status=status.HTTP_201_CREATED)

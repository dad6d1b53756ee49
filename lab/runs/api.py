"""Training runs, read-only over the API (launching is the runs issue's)."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, viewsets

from lab.projects.permissions import visible_projects
from lab.runs.models import Checkpoint, TrainingRun


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
            "id", "project", "name", "recipe", "config", "base_model", "dataset_spec", "episode_ids", "dataset_hash",
            "status", "progress", "error", "created_at", "started_at", "ended_at", "checkpoints",
        ]  # fmt: skip
        read_only_fields = fields


@extend_schema(tags=["runs"])
class TrainingRunViewSet(viewsets.ReadOnlyModelViewSet):
    serializer_class = TrainingRunSerializer

    def get_queryset(self) -> Any:
        return TrainingRun.objects.filter(project__in=visible_projects(self.request)).prefetch_related("checkpoints")

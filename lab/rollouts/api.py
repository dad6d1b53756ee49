"""Evaluations, read-only over the API here; the rollouts issue adds launching."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, viewsets

from lab.projects.permissions import visible_projects
from lab.rollouts.models import Evaluation


class EvaluationSerializer(serializers.ModelSerializer):
    project: serializers.SlugRelatedField = serializers.SlugRelatedField(slug_field="slug", read_only=True)
    agent = serializers.CharField(source="agent.name", read_only=True)

    class Meta:
        model = Evaluation
        fields = ["id", "project", "agent", "task_set", "seeds", "status", "progress", "aggregate", "checkpoint", "created_at", "ended_at"]
        read_only_fields = fields


@extend_schema(tags=["evaluations"])
class EvaluationViewSet(viewsets.ReadOnlyModelViewSet):
    serializer_class = EvaluationSerializer

    def get_queryset(self) -> Any:
        return Evaluation.objects.filter(project__in=visible_projects(self.request)).select_related("agent", "project")

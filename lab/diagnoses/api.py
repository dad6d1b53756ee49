"""Diagnoses API: members read; owners, researchers and experts write."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, viewsets

from lab.diagnoses.models import Diagnosis
from lab.diagnoses.services import diagnosis_create, diagnosis_validate
from lab.projects.models import ANNOTATE_ROLES
from lab.projects.permissions import require_role, visible_projects
from lab.trajectories.selectors import episode_get


class DiagnosisSerializer(serializers.ModelSerializer):
    episode = serializers.IntegerField(source="episode_id")

    class Meta:
        model = Diagnosis
        fields = [
            "id", "episode", "step_index", "category", "explanation", "evidence_steps", "correction", "origin",
            "author_model", "confidence", "verification", "verification_result", "created_at",
        ]  # fmt: skip
        read_only_fields = ["id", "origin", "verification", "verification_result", "created_at"]


@extend_schema(tags=["diagnoses"])
class DiagnosisViewSet(viewsets.ModelViewSet):
    serializer_class = DiagnosisSerializer

    def get_queryset(self) -> Any:
        diagnoses = Diagnosis.objects.filter(episode__project__in=visible_projects(self.request)).select_related("episode")
        params = self.request.query_params
        if params.get("episode"):
            diagnoses = diagnoses.filter(episode_id=params["episode"]) if params["episode"].isdigit() else diagnoses.none()
        for name in ("category", "origin", "verification"):
            if params.get(name):
                diagnoses = diagnoses.filter(**{name: params[name]})
        return diagnoses

    def perform_create(self, serializer: Any) -> None:
        data = serializer.validated_data
        episode = episode_get(projects=visible_projects(self.request), pk=data.pop("episode_id"))
        require_role(request=self.request, project=episode.project, roles=ANNOTATE_ROLES, action="write diagnoses")
        serializer.instance = diagnosis_create(episode=episode, author=self.request.user, **data)

    def perform_update(self, serializer: Any) -> None:
        diagnosis = serializer.instance
        require_role(request=self.request, project=diagnosis.episode.project, roles=ANNOTATE_ROLES, action="change diagnoses")
        data = serializer.validated_data
        if "episode_id" in data and data["episode_id"] != diagnosis.episode_id:
            raise serializers.ValidationError({"episode": "a diagnosis cannot move to another episode"})
        merged = {k: data.get(k, getattr(diagnosis, k)) for k in ("step_index", "category", "evidence_steps", "correction", "confidence")}
        diagnosis_validate(episode=diagnosis.episode, **merged)
        data.pop("episode_id", None)
        serializer.save()

    def perform_destroy(self, instance: Diagnosis) -> None:
        require_role(request=self.request, project=instance.episode.project, roles=ANNOTATE_ROLES, action="delete diagnoses")
        instance.delete()

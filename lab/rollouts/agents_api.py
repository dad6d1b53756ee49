"""Agent configurations over the API (/api/v1/agents/): CRUD scoped to the project, as tasks are.

An agent is what rollouts run, so its checks live with them: the endpoint it may call (lab.trajectories.endpoints)
and the model path it may read (lab.runs.paths), on create and on every PATCH against the merged values.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema
from rest_framework import serializers

from lab.errors import DomainError
from lab.projects.schema import PROJECT_PARAMETER
from lab.rollouts.teams import agent_settings_check, secrets_check, team_validate
from lab.runs.paths import agent_config_check
from lab.trajectories.api import ProjectScopedViewSet
from lab.trajectories.endpoints import endpoint_connection
from lab.trajectories.models import AgentConfig


class AgentConfigSerializer(serializers.ModelSerializer):
    project: serializers.SlugRelatedField = serializers.SlugRelatedField(slug_field="slug", read_only=True)

    class Meta:
        model = AgentConfig
        fields = [
            "id",
            "project",
            "name",
            "kind",
            "model",
            "endpoint",
            "sampling",
            "harness",
            "team",
            "checkpoint",
            "disabled_reason",
            "created_at",
        ]
        read_only_fields = ["id", "project", "disabled_reason", "created_at"]

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        try:
            agent_settings_check(attrs)
            secrets_check(attrs)
        except DomainError as exc:
            raise serializers.ValidationError({exc.details["path"]: exc.message}) from None
        # A PATCH is checked as the agent it would leave behind: its own values merged over the stored ones.
        merged = {
            field: attrs[field] if field in attrs else getattr(self.instance, field, default)
            for field, default in (("kind", ""), ("endpoint", ""), ("sampling", {}))
        }
        try:
            endpoint_connection(kind=str(merged["kind"]), endpoint=str(merged["endpoint"] or ""), sampling=merged["sampling"])
        except DomainError as exc:
            raise serializers.ValidationError({exc.details.get("path", "endpoint"): exc.message}) from None
        attrs["disabled_reason"] = ""  # the values just passed today's checks, so the agent may run again
        return attrs

    # The project is known only at save (the view passes it, or it is the instance's): weights paths are checked here,
    # on create and on every PATCH, against the values the row will hold.
    # So are a team's roles: named agents are looked up in that project only.
    def create(self, validated_data: dict[str, Any]) -> AgentConfig:
        project = validated_data["project"]
        agent_config_check(project=project, values=validated_data)
        validated_data["team"] = team_validate(project=project, team=validated_data.get("team"), agent_name=validated_data["name"])
        return super().create(validated_data)

    def update(self, instance: AgentConfig, validated_data: dict[str, Any]) -> AgentConfig:
        values = {name: getattr(instance, name) for name in ("kind", "model", "checkpoint", "name", "team")} | validated_data
        agent_config_check(project=instance.project, values=values)
        validated_data["team"] = team_validate(project=instance.project, team=values["team"], agent_name=values["name"])
        return super().update(instance, validated_data)


@extend_schema(tags=["agents"], parameters=[PROJECT_PARAMETER])
class AgentConfigViewSet(ProjectScopedViewSet):
    queryset = AgentConfig.objects.select_related("project")
    serializer_class = AgentConfigSerializer

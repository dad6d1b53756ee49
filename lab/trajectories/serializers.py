"""API representations of tasks, agent configs and episodes."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from lab.trajectories.models import AgentConfig, Episode, Task

_SECRET_KEYS = ("api_key", "apikey", "key", "token", "secret", "password", "authorization")


class TaskSerializer(serializers.ModelSerializer):
    project: serializers.SlugRelatedField = serializers.SlugRelatedField(slug_field="slug", read_only=True)

    class Meta:
        model = Task
        fields = ["id", "project", "env", "env_version", "key", "split", "spec", "pass_threshold", "description", "created_at"]
        read_only_fields = ["id", "project", "created_at"]

    def validate_pass_threshold(self, value: float) -> float:
        if not 0.0 <= value <= 1.0:
            raise serializers.ValidationError(f"{value} is outside [0, 1]")
        return value


class AgentConfigSerializer(serializers.ModelSerializer):
    project: serializers.SlugRelatedField = serializers.SlugRelatedField(slug_field="slug", read_only=True)

    class Meta:
        model = AgentConfig
        fields = ["id", "project", "name", "kind", "model", "endpoint", "sampling", "harness", "checkpoint", "created_at"]
        read_only_fields = ["id", "project", "created_at"]

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        # Keys belong in the environment or settings, never in a stored config that exports would carry.
        for field in ("sampling", "harness"):
            for key in attrs.get(field, {}) or {}:
                if str(key).lower() in _SECRET_KEYS:
                    raise serializers.ValidationError({field: f"{key!r} looks like a secret; set it in the environment instead"})
        kind, endpoint = attrs.get("kind"), attrs.get("endpoint", "")
        if kind == "openai" and endpoint and not endpoint.startswith(("http://", "https://")):
            raise serializers.ValidationError({"endpoint": f"{endpoint!r} is not an http(s) URL"})
        return attrs


class EpisodeSerializer(serializers.ModelSerializer):
    project: serializers.SlugRelatedField = serializers.SlugRelatedField(slug_field="slug", read_only=True)
    env = serializers.CharField(source="task.env", read_only=True)
    task = serializers.CharField(source="task.key", read_only=True)
    agent = serializers.CharField(source="agent.name", read_only=True, default=None)
    claimed_source = serializers.SerializerMethodField(help_text="What an upload's header claimed to be, when the server did not grant it.")

    class Meta:
        model = Episode
        fields = [
            "id", "project", "env", "task", "agent", "seed", "source", "provenance", "claimed_source", "parent", "branch_step", "status",
            "termination_reason", "score", "composite", "passed", "reward", "started_at", "ended_at",
            "metrics", "content_hash", "step_count", "created_at",
        ]  # fmt: skip
        read_only_fields = fields

    def get_claimed_source(self, episode: Episode) -> str | None:
        claimed = (episode.meta or {}).get("claimed_source")
        return str(claimed) if claimed is not None else None

"""API representations of tasks, agent configs and episodes."""

from __future__ import annotations

from rest_framework import serializers

from environments.core import TERMINATION_REASONS
from lab.trajectories.models import Episode, Task


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


class EpisodeSerializer(serializers.ModelSerializer):
    project: serializers.SlugRelatedField = serializers.SlugRelatedField(slug_field="slug", read_only=True)
    env = serializers.CharField(source="task.env", read_only=True)
    task = serializers.CharField(source="task.key", read_only=True)
    agent = serializers.CharField(source="agent.name", read_only=True, default=None)
    claimed_source = serializers.SerializerMethodField(help_text="What an upload's header claimed to be, when the server did not grant it.")
    # Empty while the episode runs; the schema must say so, or every running episode is off-schema.
    termination_reason = serializers.ChoiceField(choices=list(TERMINATION_REASONS), allow_blank=True, read_only=True)

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


class EpisodeStepsPageSerializer(serializers.Serializer):
    count = serializers.IntegerField()
    offset = serializers.IntegerField()
    next_offset = serializers.IntegerField(allow_null=True)
    steps = serializers.ListField(child=serializers.DictField())


class StoredEpisodeSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    created = serializers.BooleanField()
    content_hash = serializers.CharField()
    provenance = serializers.CharField()


class EpisodeUploadResultSerializer(serializers.Serializer):
    episodes = StoredEpisodeSerializer(many=True)
    report = serializers.DictField()


class ImportJobSerializer(serializers.Serializer):
    """What `imports.import_job_json` answers for an upload job."""

    id = serializers.IntegerField()
    url = serializers.CharField()
    status = serializers.CharField()
    filename = serializers.CharField()
    format = serializers.CharField()
    episode_ids = serializers.ListField(child=serializers.IntegerField())
    report = serializers.DictField()
    error = serializers.JSONField(allow_null=True, help_text="Why the job failed (code, message, ...), else null.")


class EpisodeImportRequestSerializer(serializers.Serializer):
    file = serializers.FileField(help_text="JSON, JSONL or zip, in any supported format.")
    format = serializers.CharField(required=False, help_text="auto (default) or a format name.")
    project = serializers.CharField(required=False, help_text="The project's slug or id, when the key is not tied to one.")

"""API representations of tasks, agent configs and episodes."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from environments.core import TERMINATION_REASONS
from lab.trajectories.models import SET_APART, Episode, EpisodeStatus, Task

LIFE_CYCLES = ["running", "finished", "failed", "cancelled", "abandoned"]


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
    life_cycle = serializers.ChoiceField(
        choices=LIFE_CYCLES,
        read_only=True,
        help_text="Where the episode stands, the name every console page shows (Episode.life_cycle): `status`, except that a "
        "finished episode someone stopped reads cancelled. The end reason is termination_reason.",
    )
    counted = serializers.SerializerMethodField(
        help_text="Whether success rates count it: a scored, finished episode. Cancelled and abandoned ones are counted apart."
    )
    session = serializers.SerializerMethodField(help_text="A person's play session (source human): seat, player, budget used, last move.")

    class Meta:
        model = Episode
        fields = [
            "id",
            "project",
            "env",
            "task",
            "agent",
            "seed",
            "source",
            "provenance",
            "claimed_source",
            "parent",
            "branch_step",
            "status",
            "life_cycle",
            "termination_reason",
            "counted",
            "score",
            "composite",
            "passed",
            "reward",
            "started_at",
            "ended_at",
            "metrics",
            "content_hash",
            "step_count",
            "created_at",
            "session",
        ]
        read_only_fields = fields

    def get_counted(self, episode: Episode) -> bool:
        return episode.status == EpisodeStatus.FINISHED and episode.life_cycle not in SET_APART and episode.composite is not None

    @extend_schema_field(
        {
            "type": "object",
            "nullable": True,
            "properties": {
                "id": {"type": "integer"},
                "seat": {"type": "string"},
                "player": {"type": "string"},
                "agent": {"type": "string", "nullable": True},
                "budget_used": {"type": "integer"},
                "last_active_at": {"type": "string", "format": "date-time"},
                "life_cycle": {"type": "string", "enum": LIFE_CYCLES},
            },
        }
    )
    def get_session(self, episode: Episode) -> dict[str, Any] | None:
        session = getattr(episode, "human_session", None) if episode.source == "human" else None
        if session is None:
            return None
        # The session's own status says active/finished/abandoned; the API, like every page, names the episode's life cycle.
        return {
            "id": session.pk,
            "seat": session.role,
            "player": session.user.get_username(),
            "agent": session.agent.name if session.agent_id else None,
            "budget_used": session.budget_used,
            "last_active_at": session.last_active_at,
            "life_cycle": episode.life_cycle,
        }

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

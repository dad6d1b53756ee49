"""Diagnoses: why an episode failed, where, and what would have fixed it — from a person, a model or a rule."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from lab.trajectories.models import Episode

# The fixed taxonomy, with the definitions shown beside the form and given to diagnosing models.
CATEGORIES: dict[str, str] = {
    "misread_observation": "The agent misread or misremembered what a tool result or the feed said.",
    "wrong_tool": "The agent used a tool that cannot achieve what it intended.",
    "wrong_arguments": "The right tool, called with wrong or harmful arguments.",
    "ignored_alert": "The agent ignored a warning, alert or news item that called for action.",
    "planning_error": "The plan itself was wrong: bad priorities, timing or trade-offs.",
    "loop_repetition": "The agent repeated the same actions without progress.",
    "premature_end": "The agent ended the episode or stopped acting too early.",
    "environment_error": "The environment or infrastructure failed, not the agent.",
    "task_bug": "The task, its scoring or its verifier is wrong.",
    "other": "None of the above; the explanation says what.",
}


class Origin(models.TextChoices):
    HUMAN = "human"
    MODEL = "model"
    RULE = "rule"


class Verification(models.TextChoices):
    UNVERIFIED = "unverified"
    RUNNING = "running"
    VERIFIED = "verified"
    REFUTED = "refuted"
    FAILED = "failed"


class Diagnosis(models.Model):
    episode = models.ForeignKey(Episode, on_delete=models.CASCADE, related_name="diagnoses")
    step_index = models.PositiveIntegerField(help_text="The first error step.")
    category = models.CharField(max_length=32, choices=[(k, k) for k in CATEGORIES])
    explanation = models.TextField()
    evidence_steps = models.JSONField(default=list, blank=True, help_text="Indices of steps that support the diagnosis.")
    correction = models.JSONField(null=True, blank=True, help_text="A proposed tool call: {name, arguments}.")
    origin = models.CharField(max_length=8, choices=Origin.choices, default=Origin.HUMAN)
    author = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    author_model = models.CharField(max_length=200, blank=True, help_text="The agent config or rule that wrote it.")
    confidence = models.FloatField(null=True, blank=True)
    verification = models.CharField(max_length=12, choices=Verification.choices, default=Verification.UNVERIFIED)
    verification_result = models.JSONField(null=True, blank=True)
    child_episodes = models.ManyToManyField(Episode, blank=True, related_name="verifies")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]
        verbose_name_plural = "diagnoses"

    def __str__(self) -> str:
        return f"{self.category} at step {self.step_index} of episode {self.episode_id}"

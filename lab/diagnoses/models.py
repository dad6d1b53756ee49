"""Diagnoses: why an episode failed, where, and what would have fixed it — from a person, a model or a rule."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from environments.diagnosis.taxonomy import CATEGORIES
from lab.jobs import Job
from lab.projects.models import Project
from lab.trajectories.models import AgentConfig, Episode

# The fixed taxonomy lives with the pure-Python diagnosers, which give it to diagnosing models.
__all__ = ["CATEGORIES", "Diagnosis", "DiagnosisAttempt", "DiagnosisJob", "Origin", "Verification"]


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


class DiagnosisJob(Job):
    """A batch over many episodes: diagnose (by a model or a rule), label pivotal steps, verify by replay."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="diagnosis_jobs")
    episode_ids = models.JSONField(default=list)
    agent = models.ForeignKey(
        AgentConfig,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="diagnosis_jobs",
        help_text="The model diagnoser; empty for rule diagnoses or verify-only jobs.",
    )
    rule_anchor = models.CharField(max_length=64, blank=True, help_text="The anchor of rule diagnoses, e.g. smart-triage.")
    pivotal_anchor = models.CharField(max_length=64, blank=True, help_text="Label pivotal steps with this anchor; empty skips it.")
    verify = models.BooleanField(default=True)
    done = models.PositiveIntegerField(default=0)
    total = models.PositiveIntegerField(default=0)
    summary = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"diagnosis job {self.pk} ({self.done}/{self.total}, {self.status})"


class DiagnosisAttempt(models.Model):
    """One answer of a model or rule diagnoser. A valid one links the diagnosis made from it; a bad one keeps
    the answer and what was wrong with it, and is never a Diagnosis."""

    episode = models.ForeignKey(Episode, on_delete=models.CASCADE, related_name="diagnosis_attempts")
    job = models.ForeignKey(DiagnosisJob, null=True, blank=True, on_delete=models.SET_NULL, related_name="attempts")
    origin = models.CharField(max_length=8, choices=Origin.choices)
    author_model = models.CharField(max_length=200, blank=True)
    diagnosis = models.OneToOneField(Diagnosis, null=True, blank=True, on_delete=models.SET_NULL, related_name="attempt")
    error = models.TextField(blank=True, help_text="Why the answer was refused; empty when it became a diagnosis.")
    answer = models.JSONField(default=dict, blank=True, help_text="The raw answer as it came.")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.origin} attempt on episode {self.episode_id}: {'ok' if self.ok else self.error[:60]}"

    @property
    def ok(self) -> bool:
        return self.diagnosis_id is not None

"""Evaluations: an agent × a task set × seeds, fanned out as rollouts and aggregated."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from lab.projects.models import Project
from lab.runs.models import JobStatus
from lab.trajectories.models import AgentConfig, Episode


class Evaluation(models.Model):
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="evaluations")
    agent = models.ForeignKey(AgentConfig, on_delete=models.PROTECT, related_name="evaluations")
    task_set = models.CharField(max_length=128, help_text='e.g. "storebench/eval" or one task id.')
    seeds = models.JSONField(default=list)
    status = models.CharField(max_length=12, choices=JobStatus.choices, default=JobStatus.QUEUED)
    progress = models.FloatField(default=0.0)
    aggregate = models.JSONField(default=dict, blank=True)
    episodes = models.ManyToManyField(Episode, blank=True, related_name="evaluations")
    checkpoint = models.ForeignKey("runs.Checkpoint", null=True, blank=True, on_delete=models.SET_NULL, related_name="evaluations")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(auto_now_add=True)
    ended_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.agent} on {self.task_set}"


class RolloutJob(models.Model):
    """One episode of an agent on a task and seed, run by a Celery task; the Episode it writes is `episode`.

    The job outlives worker crashes: a retried task finds the episode it started and resumes it by replay.
    """

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="rollouts")
    agent = models.ForeignKey(AgentConfig, on_delete=models.PROTECT, related_name="rollouts")
    task = models.ForeignKey("trajectories.Task", on_delete=models.PROTECT, related_name="rollouts")
    seed = models.BigIntegerField()
    evaluation = models.ForeignKey(Evaluation, null=True, blank=True, on_delete=models.CASCADE, related_name="rollouts")
    episode = models.OneToOneField(Episode, null=True, blank=True, on_delete=models.SET_NULL, related_name="rollout")
    status = models.CharField(max_length=12, choices=JobStatus.choices, default=JobStatus.QUEUED)
    queue = models.CharField(max_length=16, default="cpu")
    cancel_requested = models.BooleanField(default=False)
    attempts = models.PositiveIntegerField(default=0, help_text="Task starts; more than one means it was resumed after a crash.")
    error = models.TextField(blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    ended_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["evaluation", "status"]), models.Index(fields=["project", "status"])]

    def __str__(self) -> str:
        return f"rollout {self.pk}: {self.agent} on {self.task} seed {self.seed} ({self.status})"

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

"""Evaluations: an agent × a task set × seeds, fanned out as rollouts and aggregated."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from lab.jobs import Job
from lab.projects.models import Project
from lab.trajectories.models import AgentConfig, Episode


class Evaluation(Job):
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="evaluations")
    agent = models.ForeignKey(AgentConfig, on_delete=models.PROTECT, related_name="evaluations")
    task_set = models.CharField(max_length=128, help_text='e.g. "storebench/eval" or one task id.')
    seeds = models.JSONField(default=list)
    # The per-episode options it was launched with (checked against the environment's options_schema). With an
    # attack setting, its rollouts run both conditions: these options and the same without the attack.
    options = models.JSONField(default=dict, blank=True)
    progress = models.FloatField(default=0.0)
    aggregate = models.JSONField(default=dict, blank=True)
    episodes = models.ManyToManyField(Episode, blank=True, related_name="evaluations")
    checkpoint = models.ForeignKey("runs.Checkpoint", null=True, blank=True, on_delete=models.SET_NULL, related_name="evaluations")

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.agent} on {self.task_set}"


class RolloutJob(Job):
    """One episode of an agent on a task and seed, run by a Celery task; the Episode it writes is `episode`.

    The job outlives worker crashes: a retried task finds the episode it started and resumes it by replay.
    """

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="rollouts")
    agent = models.ForeignKey(AgentConfig, on_delete=models.PROTECT, related_name="rollouts")
    task = models.ForeignKey("trajectories.Task", on_delete=models.PROTECT, related_name="rollouts")
    seed = models.BigIntegerField()
    options = models.JSONField(default=dict, blank=True, help_text="Per-episode options passed to the environment.")
    evaluation = models.ForeignKey(Evaluation, null=True, blank=True, on_delete=models.CASCADE, related_name="rollouts")
    episode = models.OneToOneField(Episode, null=True, blank=True, on_delete=models.SET_NULL, related_name="rollout")
    queue = models.CharField(max_length=16, default="cpu")
    cancel_requested = models.BooleanField(default=False)
    attempts = models.PositiveIntegerField(default=0, help_text="Task starts; more than one means it was resumed after a crash.")

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["evaluation", "status"]), models.Index(fields=["project", "status"])]

    def __str__(self) -> str:
        return f"rollout {self.pk}: {self.agent} on {self.task} seed {self.seed} ({self.status})"


class Comparison(models.Model):
    """Role configurations compared: a base agent and its variants (critic on/off, harness levels, consultation
    costs: each an agent config) evaluated on the same task set and seeds, one Evaluation each.

    `variants` keeps, in launch order with the base first, {"name", "agent", "evaluation", "team"}: the team each
    agent config had at launch, so the comparison still says what was compared after an agent is edited."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="comparisons")
    task_set = models.CharField(max_length=128)
    seeds = models.JSONField(default=list)
    variants = models.JSONField(default=list)
    evaluations = models.ManyToManyField(Evaluation, related_name="comparisons")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"comparison {self.pk}: {', '.join(v['name'] for v in self.variants)} on {self.task_set}"

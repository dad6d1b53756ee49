"""Training runs, their checkpoints and their metrics."""

from __future__ import annotations

from django.db import models

from lab.jobs import Job
from lab.projects.models import Project
from lab.trajectories.models import Provenance


class TrainingRun(Job):
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="runs")
    name = models.CharField(max_length=200)
    recipe = models.CharField(
        max_length=32, help_text="A key of training.RECIPES (sft, grpo, opd, ...); for an external run, its trainer's label (trl-sft, ...)."
    )
    config = models.JSONField(default=dict)
    base_model = models.CharField(max_length=500)
    dataset_spec = models.JSONField(default=dict, blank=True, help_text="The filters that selected the episodes.")
    episode_ids = models.JSONField(default=list, blank=True, help_text="The episodes frozen at launch.")
    dataset_hash = models.CharField(max_length=64, blank=True)
    progress = models.FloatField(default=0.0)
    provenance = models.CharField(
        max_length=8,
        choices=Provenance.choices,
        default=Provenance.RECORDED,
        help_text="recorded: the lab's worker trains it; external/upload: a trainer elsewhere reports it (lab.runs.external).",
    )

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.name} ({self.recipe})"

    @property
    def reported(self) -> bool:
        """Trained elsewhere: its metrics and checkpoints are the trainer's word, and its checkpoints are not on this server."""
        return self.provenance != Provenance.RECORDED


class Checkpoint(models.Model):
    run = models.ForeignKey(TrainingRun, on_delete=models.CASCADE, related_name="checkpoints")
    step = models.PositiveIntegerField()
    path = models.CharField(max_length=500)
    eval_results = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["run", "step"]
        constraints = [models.UniqueConstraint(fields=["run", "step"], name="unique_checkpoint_step")]

    def __str__(self) -> str:
        return f"{self.run} @ {self.step}"


class RunMetric(models.Model):
    run = models.ForeignKey(TrainingRun, on_delete=models.CASCADE, related_name="metrics")
    step = models.PositiveIntegerField()
    name = models.CharField(max_length=64)
    value = models.FloatField()

    class Meta:
        ordering = ["run", "name", "step"]
        indexes = [models.Index(fields=["run", "name", "step"])]

    def __str__(self) -> str:
        return f"{self.name}={self.value} @ {self.step}"

"""Improvement loops: from a failing evaluation to a promoted checkpoint, one stage after another, with lineage.

An ImprovementLoop names everything each stage made (the diagnosis job, the frozen dataset, the training run, the
dev evaluations of each checkpoint, the chosen checkpoint, the test evaluations, the promoted agent), so its page
and the API show the whole chain. A LoopDataset is the frozen training data of one loop: its JSONL file, the
sha256 of its bytes, the episodes and diagnoses it came from, and a version number per project.
"""

from __future__ import annotations

from django.db import models

from lab.jobs import Job
from lab.projects.models import Project
from lab.trajectories.models import AgentConfig


class Stage(models.TextChoices):
    SELECT = "select"
    DIAGNOSE = "diagnose"
    DATASET = "dataset"
    TRAIN = "train"
    CHECKPOINT = "checkpoint"
    REPORT = "report"
    PROMOTE = "promote"
    DONE = "done"


# The stages a loop runs by itself, in order; promotion waits for a researcher's click (or `improve promote`).
AUTOMATIC_STAGES = (Stage.SELECT, Stage.DIAGNOSE, Stage.DATASET, Stage.TRAIN, Stage.CHECKPOINT, Stage.REPORT)


class ImprovementLoop(Job):
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="improvement_loops")
    name = models.CharField(max_length=200)
    agent = models.ForeignKey(
        AgentConfig, on_delete=models.PROTECT, related_name="improvement_loops", help_text="The starting agent: the source evaluation's."
    )
    evaluation = models.ForeignKey(
        "rollouts.Evaluation",
        on_delete=models.PROTECT,
        related_name="improvement_loops",
        help_text="The source evaluation whose failing episodes the loop starts from.",
    )
    stage = models.CharField(max_length=12, choices=Stage.choices, default=Stage.SELECT)
    progress = models.FloatField(default=0.0, help_text="Of the current stage, 0..1.")
    config = models.JSONField(default=dict, help_text="The validated loop configuration (lab.improve.config.LoopConfig).")
    episode_ids = models.JSONField(default=list, help_text="The failing episodes picked for diagnosis.")
    stages = models.JSONField(default=dict, blank=True, help_text="Per stage: status, started/ended times and what it did.")
    diagnosis_job = models.ForeignKey("diagnoses.DiagnosisJob", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    dataset = models.ForeignKey("improve.LoopDataset", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    run = models.ForeignKey("runs.TrainingRun", null=True, blank=True, on_delete=models.SET_NULL, related_name="improvement_loops")
    dev_evaluations = models.JSONField(default=dict, blank=True, help_text="{checkpoint id: evaluation id} on the dev seeds.")
    checkpoint = models.ForeignKey(
        "runs.Checkpoint",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        help_text="The checkpoint chosen on the dev seeds.",
    )
    baseline_evaluation = models.ForeignKey("rollouts.Evaluation", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    test_evaluation = models.ForeignKey("rollouts.Evaluation", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    report = models.JSONField(default=dict, blank=True)
    promoted_agent = models.ForeignKey(AgentConfig, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"loop {self.pk}: {self.name} ({self.stage}, {self.status})"


class LoopDataset(models.Model):
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="loop_datasets")
    loop = models.ForeignKey(ImprovementLoop, on_delete=models.CASCADE, related_name="datasets")
    version = models.PositiveIntegerField(help_text="1, 2, ... per project.")
    sources = models.JSONField(default=dict, help_text="{source: weight} as the loop asked.")
    counts = models.JSONField(default=dict, help_text="{source: {examples, lines}}: examples found and lines written (weighted).")
    episode_ids = models.JSONField(default=list, help_text="Every episode a line came from (a recovery line: its corrected branch).")
    diagnosis_ids = models.JSONField(default=list, help_text="The verified diagnoses whose recovery views are in it.")
    path = models.CharField(max_length=500)
    content_hash = models.CharField(max_length=64, help_text="sha256 of the JSONL file's bytes.")
    size_bytes = models.PositiveBigIntegerField(default=0)
    lines = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-version"]
        constraints = [models.UniqueConstraint(fields=["project", "version"], name="unique_loop_dataset_version")]

    def __str__(self) -> str:
        return f"dataset v{self.version} of loop {self.loop_id} ({self.lines} lines, {self.content_hash[:12]})"

"""Tasks, agent configurations, and episodes with their steps: the faithful storage of trajectory records.

An Episode row holds a record's header; Step rows hold its steps, one field per record field
(environments/trajectory.py); a SharedContext row holds a header value many episodes share, once.
`services.episode_to_record` turns them back into the record, unchanged.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone

from environments.core import TERMINATION_REASONS
from environments.records import ScoreDict
from environments.trajectory import SOURCES, STEP_SOURCES
from lab.jobs import Job
from lab.projects.models import Project


class Split(models.TextChoices):
    TRAIN = "train"
    DEV = "dev"
    TEST = "test"


class Task(models.Model):
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="tasks")
    env = models.CharField(max_length=64, help_text="Environment name, e.g. storebench.")
    env_version = models.CharField(max_length=32, blank=True)
    key = models.CharField(max_length=128, help_text="Task key within the environment, e.g. supplier-collapse.")
    split = models.CharField(max_length=8, choices=Split.choices, default=Split.TEST)
    spec = models.JSONField(default=dict, blank=True)
    pass_threshold = models.FloatField(default=0.5)
    description = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["env", "key"]
        constraints = [models.UniqueConstraint(fields=["project", "env", "env_version", "key"], name="unique_task_per_project")]

    def __str__(self) -> str:
        return f"{self.env}/{self.key}"

    @property
    def task_id(self) -> str:
        return f"{self.env}/{self.key}"


class AgentKind(models.TextChoices):
    SCRIPTED = "scripted"
    HF = "hf"
    VLLM = "vllm"
    OPENAI = "openai"
    HUMAN = "human"
    EXTERNAL = "external"


class AgentConfig(models.Model):
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="agents")
    name = models.CharField(max_length=128)
    kind = models.CharField(max_length=16, choices=AgentKind.choices)
    model = models.CharField(max_length=500, blank=True, help_text="A from_pretrained path, a model name, or an anchor's name.")
    endpoint = models.CharField(
        max_length=500,
        blank=True,
        help_text="openai agents: the name of an endpoint the operator declared (empty: openai), or a free URL where allowed.",
    )
    sampling = models.JSONField(default=dict, blank=True, help_text="temperature, top_p, max_tokens, seed, ...")
    harness = models.JSONField(default=dict, blank=True, help_text="context window, turn limit, stop conditions, ...")
    checkpoint = models.ForeignKey("runs.Checkpoint", null=True, blank=True, on_delete=models.SET_NULL, related_name="agents")
    team = models.JSONField(
        default=dict,
        blank=True,
        help_text='The roles around this agent (environments.roles): {"critic": {"agent": ..., "every": 5}, "consultant": {...}, '
        '"harness_level": ..., "slots": {...}}; a role\'s agent is a config or the name of another agent of the project.',
    )
    disabled_reason = models.TextField(
        blank=True, help_text="Why the agent may not run (its endpoint is no longer allowed); empty when it may."
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]
        constraints = [models.UniqueConstraint(fields=["project", "name"], name="unique_agent_name_per_project")]

    def __str__(self) -> str:
        return self.name


class Provenance(models.TextChoices):
    """How far the lab can vouch for an episode. Set by the server from how the episode arrived, never read
    from the payload (lab.trajectories.services: episode_start and episodes_ingest's `provenance`)."""

    RECORDED = "recorded", "recorded"  # the server ran it: rollouts, human sessions, anchors, branches
    EXTERNAL = "external", "external"  # reported through an API key the operator flagged as an external integration
    UPLOAD = "upload", "upload"  # anything else sent to the API


# The tiers that leaderboards and evaluations count unless asked otherwise.
SCORED_TIERS = (Provenance.RECORDED,)
UNVERIFIED_TIERS = (Provenance.EXTERNAL, Provenance.UPLOAD)


class EpisodeStatus(models.TextChoices):
    RUNNING = "running"
    FINISHED = "finished"
    FAILED = "failed"
    ABANDONED = "abandoned"


# Endings that say nothing about how well the agent (or person) did: kept out of success rates, counted apart.
SET_APART = ("cancelled", "abandoned")


class Episode(models.Model):
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="episodes")
    task = models.ForeignKey(Task, on_delete=models.PROTECT, related_name="episodes")
    agent = models.ForeignKey(AgentConfig, null=True, blank=True, on_delete=models.SET_NULL, related_name="episodes")
    seed = models.BigIntegerField(null=True, blank=True)
    source = models.CharField(max_length=8, choices=[(s, s) for s in SOURCES])
    provenance = models.CharField(max_length=8, choices=Provenance.choices, default=Provenance.UPLOAD)
    parent = models.ForeignKey("self", null=True, blank=True, on_delete=models.SET_NULL, related_name="children")
    branch_step = models.PositiveIntegerField(null=True, blank=True)
    status = models.CharField(max_length=12, choices=EpisodeStatus.choices, default=EpisodeStatus.FINISHED)
    termination_reason = models.CharField(max_length=32, blank=True, choices=[(r, r) for r in TERMINATION_REASONS])
    score = models.JSONField(null=True, blank=True)
    composite = models.FloatField(null=True, blank=True)
    passed = models.BooleanField(null=True, blank=True)
    reward = models.FloatField(null=True, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    ended_at = models.DateTimeField(null=True, blank=True)
    metrics = models.JSONField(default=dict, blank=True)
    meta = models.JSONField(default=dict, blank=True, help_text="Header fields beyond the columns: versions, policy, harness, tools.")
    raw = models.JSONField(null=True, blank=True, help_text="The original uploaded payload, as it came.")
    content_hash = models.CharField(max_length=64, blank=True)
    step_count = models.PositiveIntegerField(default=0)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [
            models.Index(fields=["project", "-created_at"]),
            models.Index(fields=["project", "task", "-composite"]),
            models.Index(fields=["project", "status"]),
            models.Index(fields=["project", "source"]),
            models.Index(fields=["project", "provenance"]),
        ]
        constraints = [
            models.UniqueConstraint(
                fields=["project", "content_hash"], condition=~models.Q(content_hash=""), name="unique_content_per_project"
            )
        ]

    def __str__(self) -> str:
        return f"episode {self.pk} ({self.task}, seed {self.seed})"

    @property
    def life_cycle(self) -> str:
        """Where the episode stands, one name on every page: running, finished, failed, cancelled (a person or an
        operator stopped it) or abandoned (its player left). Cancelled and abandoned ones are SET_APART."""
        if self.status == EpisodeStatus.FINISHED and self.termination_reason == "cancelled":
            return "cancelled"
        return str(self.status)

    @property
    def dreamed(self) -> bool:
        """Whether a world model dreamed it (header.meta.dreamed): its screens were predicted, never played."""
        header = (self.meta or {}).get("header") or {}
        return isinstance(header.get("meta"), dict) and header["meta"].get("dreamed") is True

    def mark_finished(self, *, reason: str, score: ScoreDict | None = None, reward: float | None = None) -> None:
        assert reason in TERMINATION_REASONS, f"unknown termination reason {reason!r}"
        failed = reason in ("agent_error", "infrastructure_error", "unexpected_error")
        self.status = EpisodeStatus.FAILED if failed else EpisodeStatus.ABANDONED if reason == "abandoned" else EpisodeStatus.FINISHED
        self.termination_reason = reason
        if score is not None:
            self.score = score
            self.composite = score.get("composite")
            self.passed = score.get("passed")
        if reward is not None:
            self.reward = reward
        self.ended_at = timezone.now()
        self.save(update_fields=["status", "termination_reason", "score", "composite", "passed", "reward", "ended_at"])


class SharedContext(models.Model):
    """A header value that many of a project's episodes hold in common (a tau2 run's info and tasks, an inspect
    log's plan and eval spec, a producer's tool schemas), stored once per content. An episode names it in
    meta["shared"] ({header path: sha256}) with None at that path in meta["header"]; every reader expands it
    through lab.trajectories.shared. Rows are scoped to their project: another project never reads them."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="shared_contexts")
    sha256 = models.CharField(max_length=64, help_text="Digest of the content's canonical JSON (lab.ingest.shared).")
    content = models.JSONField()
    size = models.PositiveIntegerField(help_text="Bytes of the canonical JSON, as counted against the upload's budget.")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["project", "sha256"], name="unique_shared_context_per_project")]

    def __str__(self) -> str:
        return f"shared context {self.sha256[:12]} ({self.size} bytes)"


class Step(models.Model):
    # Uploads COPY tens of thousands of steps at a time. Two things a plain foreign key would cost them go:
    # - its own index: the unique (episode, index) constraint's index serves every lookup by episode;
    # - its constraint, checked by one locking lookup per row at commit (a third of the COPY's time): triggers
    #   installed by migration 0002 check each statement's new steps at once (at commit for episodes inserted
    #   later in the transaction) and delete an episode's steps with it, so the database still holds no step
    #   without its episode.
    episode = models.ForeignKey(Episode, on_delete=models.CASCADE, related_name="steps", db_index=False, db_constraint=False)
    index = models.PositiveIntegerField()
    source = models.CharField(max_length=8, choices=[(s, s) for s in STEP_SOURCES])
    message = models.JSONField(null=True, blank=True, help_text="Text, or the producer's list of content parts.")
    # None and "" differ in a record (absent vs empty), so these text columns keep NULL.
    reasoning = models.TextField(null=True, blank=True)  # noqa: DJ001
    tool_calls = models.JSONField(default=list, blank=True)
    results = models.JSONField(default=list, blank=True)
    reward = models.FloatField(null=True, blank=True)
    sim_time_start = models.FloatField(null=True, blank=True)
    sim_time_end = models.FloatField(null=True, blank=True)
    events = models.JSONField(default=list, blank=True)
    state_hash = models.CharField(max_length=64, null=True, blank=True)  # noqa: DJ001
    token_ids = models.JSONField(null=True, blank=True)
    logprobs = models.JSONField(null=True, blank=True)
    latency_ms = models.FloatField(null=True, blank=True)
    # The party that took the turn (environments.roles); "" where the record has none (an actor's or the env's
    # step), read back as absent so records round-trip exactly. Indexed with the episode: lanes, per-role queries.
    role = models.CharField(max_length=32, blank=True, default="")
    extra = models.JSONField(default=dict, blank=True, help_text="Record fields without a column (timestamp, prompt ids, meta).")

    class Meta:
        ordering = ["episode", "index"]
        constraints = [models.UniqueConstraint(fields=["episode", "index"], name="unique_step_index_per_episode")]
        indexes = [models.Index(fields=["episode", "role"], name="step_episode_role")]

    def __str__(self) -> str:
        return f"step {self.index} of episode {self.episode_id}"


class ImportJob(Job):
    """An uploaded file being imported by a Celery job. The file stays on disk until the job ends.

    Its status is the shared JobStatus; the imports API still says "done" for FINISHED (imports.import_job_json).
    """

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="imports")
    filename = models.CharField(max_length=255)
    path = models.CharField(max_length=500)
    format = models.CharField(max_length=16, default="auto")
    provenance = models.CharField(
        max_length=8,
        choices=Provenance.choices,
        default=Provenance.UPLOAD,
        help_text="The tier its episodes get: upload, or external for an operator-flagged key.",
    )
    idempotency_key = models.CharField(max_length=200, blank=True)
    report = models.JSONField(default=dict, blank=True)
    # Structured ({code, message, path...}) unlike the other jobs' text: the API answers it as an object.
    error = models.JSONField(null=True, blank=True)  # type: ignore[assignment]
    episode_ids = models.JSONField(default=list, blank=True)

    def __str__(self) -> str:
        return f"import {self.pk} of {self.filename} ({self.status})"


class IdempotencyRecord(models.Model):
    """The answer given to a request with an `Idempotency-Key`, replayed for a repeat of that key."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE)
    key = models.CharField(max_length=200)
    request_hash = models.CharField(max_length=64)
    status_code = models.PositiveSmallIntegerField()
    response = models.JSONField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["project", "key"], name="unique_idempotency_key_per_project")]

    def __str__(self) -> str:
        return f"idempotency key {self.key} ({self.status_code})"

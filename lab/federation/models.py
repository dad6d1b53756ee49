"""Federated experience in the lab: the peers an operator allows, what each project shares, federation rounds and
every artifact they exported (training/federation does the work; lab/federation/services.py drives it)."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import models
from django.utils import timezone

from lab.jobs import Job
from lab.projects.models import Project

ARTIFACT_KINDS = ("adapter", "skills", "stats")
MODES = ("local", "fedavg", "skills")
MODE_KIND = {"fedavg": "adapter", "skills": "skills"}  # what a mode needs each participant's policy to share


class Peer(models.Model):
    """Another Practicum installation a project may exchange artifacts with, by an endpoint name the operator
    declared (settings.PRACTICUM_FEDERATION_PEERS), never a free URL."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="federation_peers")
    name = models.CharField(max_length=64)
    endpoint = models.CharField(max_length=64, help_text="A name in PRACTICUM_FEDERATION_PEERS (or its declared base URL).")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["project", "name"]
        constraints = [models.UniqueConstraint(fields=["project", "name"], name="unique_federation_peer_name")]

    def __str__(self) -> str:
        return f"{self.name} -> {self.endpoint}"


class SharingPolicy(models.Model):
    """An owner's decision of what the project shares; every decision is a new row (the latest one holds), so who
    decided what, and when, stays on record. `canaries` are private: the API shows their field names only."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="sharing_policies")
    kinds = models.JSONField(default=list, blank=True, help_text="Artifact kinds the project shares: adapter, skills, stats.")
    canaries = models.JSONField(default=dict, blank=True, help_text="{field: canary} planted in the project's private data.")
    note = models.CharField(max_length=500, blank=True)
    decided_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    decided_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["project", "-decided_at", "-pk"]

    def __str__(self) -> str:
        return f"{self.project} shares {', '.join(self.kinds) or 'nothing'}"


class FederationRound(Job):
    """A federation between projects of this installation: `rounds` rounds of local training, gated exports,
    aggregation and adaptation. `results` holds each finished round's metrics; a rerun resumes after the last one."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="federations")  # the coordinating project
    name = models.CharField(max_length=200)
    mode = models.CharField(max_length=8, choices=[(m, m) for m in MODES])
    base_model = models.CharField(max_length=500)
    participants = models.JSONField(default=list, help_text="[{project (id), slug, task}] in order.")
    config = models.JSONField(default=dict, blank=True)
    results = models.JSONField(default=list, blank=True, help_text="One metrics object per finished round.")
    progress = models.FloatField(default=0.0)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.name} ({self.mode})"


class ArtifactExport(models.Model):
    """One artifact a participant offered in a round: its manifest and what the gate said (refused ones included)."""

    federation = models.ForeignKey(FederationRound, on_delete=models.CASCADE, related_name="exports")
    round = models.PositiveIntegerField()
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="federation_exports")  # the source
    kind = models.CharField(max_length=8, choices=[(k, k) for k in ARTIFACT_KINDS])
    manifest = models.JSONField(default=dict)
    sha256 = models.CharField(max_length=64)
    bytes = models.PositiveBigIntegerField(default=0)
    gate = models.JSONField(default=dict, blank=True)
    refused = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["federation", "round", "project", "kind"]
        constraints = [models.UniqueConstraint(fields=["federation", "round", "project", "kind"], name="unique_federation_export")]

    def __str__(self) -> str:
        return f"{self.kind} of {self.project} in round {self.round}"


# --- between installations --------------------------------------------------------------------------------------

TRANSFER_STATUSES = ("sending", "delivered", "failed", "refused")
RECEIVED_STATUSES = ("pending", "accepted", "rejected")


class OutgoingTransfer(models.Model):
    """One push of an export to a peer's installation, whatever came of it: `refused` here before anything was sent
    (no key, the policy, a canary), `failed` (the peer was unreachable or answered an error), or `delivered`."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="federation_transfers")
    peer = models.ForeignKey(Peer, null=True, blank=True, on_delete=models.SET_NULL, related_name="transfers")
    peer_name = models.CharField(max_length=64)  # kept when the peer record goes
    endpoint = models.CharField(max_length=64)
    target = models.CharField(max_length=64, help_text="The receiving installation's project slug.")
    export = models.ForeignKey(ArtifactExport, null=True, blank=True, on_delete=models.SET_NULL, related_name="transfers")
    kind = models.CharField(max_length=8, choices=[(k, k) for k in ARTIFACT_KINDS])
    sha256 = models.CharField(max_length=64)
    bytes = models.PositiveBigIntegerField(default=0, help_text="Bytes of the request body sent (0 when nothing was).")
    status = models.CharField(max_length=9, choices=[(s, s) for s in TRANSFER_STATUSES], default="sending")
    response_status = models.PositiveSmallIntegerField(null=True, blank=True)
    error = models.TextField(blank=True)
    remote_id = models.PositiveBigIntegerField(null=True, blank=True, help_text="The receiver's id of what it stored.")
    pushed_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-pk"]

    def __str__(self) -> str:
        return f"{self.kind} to {self.peer_name}/{self.target}: {self.status}"

    def mark_ended(self, status: str, *, error: str = "", response_status: int | None = None, remote_id: int | None = None) -> None:
        """How the push ended, saved with the bytes it sent (`bytes`, set by the caller); once, from sending."""
        assert self.status == "sending" and status in TRANSFER_STATUSES[1:], f"transfer {self.pk}: {self.status} cannot become {status}"
        self.status, self.error, self.response_status, self.remote_id = status, error, response_status, remote_id
        self.save(update_fields=["status", "error", "response_status", "remote_id", "bytes"])


class ReceivedArtifact(models.Model):
    """An artifact another installation pushed to this project: pending until an owner accepts or rejects it. Its
    bytes are a file in the project's folder (lab/federation/exchange.py received_path)."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="federation_received")
    peer = models.ForeignKey(Peer, null=True, blank=True, on_delete=models.SET_NULL, related_name="received")
    sender = models.CharField(max_length=64, help_text="The sending installation's name, as declared here.")
    kind = models.CharField(max_length=8, choices=[(k, k) for k in ARTIFACT_KINDS])
    manifest = models.JSONField(default=dict)
    sha256 = models.CharField(max_length=64)
    bytes = models.PositiveBigIntegerField(default=0)
    status = models.CharField(max_length=8, choices=[(s, s) for s in RECEIVED_STATUSES], default="pending")
    decided_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    decided_at = models.DateTimeField(null=True, blank=True)
    received_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-received_at", "-pk"]

    def __str__(self) -> str:
        return f"{self.kind} from {self.sender} ({self.status})"

    def mark_decided(self, *, accept: bool, user: Any = None) -> None:
        """An owner's decision, once: pending -> accepted or rejected (the caller locked the row and checked it is pending)."""
        assert self.status == "pending", f"received artifact {self.pk} was {self.status} already"
        self.status = "accepted" if accept else "rejected"
        self.decided_by = user if getattr(user, "is_authenticated", False) else None
        self.decided_at = timezone.now()
        self.save(update_fields=["status", "decided_by", "decided_at"])


class FederationNonce(models.Model):
    """A signed request's nonce, kept while its timestamp could still pass the window: a replay finds it here."""

    sender = models.CharField(max_length=64)
    nonce = models.CharField(max_length=64)
    received_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["sender", "nonce"], name="unique_federation_nonce")]

    def __str__(self) -> str:
        return f"{self.sender}/{self.nonce}"

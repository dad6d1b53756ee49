"""Projects, who belongs to them, and the API keys programs use to reach them."""

from __future__ import annotations

import hashlib
import secrets

from django.conf import settings
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.utils import timezone


class Role(models.TextChoices):
    OWNER = "owner"
    RESEARCHER = "researcher"
    EXPERT = "expert"
    VIEWER = "viewer"


# What each role may do. Reading is open to every member; the rest is checked in lab/projects/permissions.py.
WRITE_ROLES = frozenset({Role.OWNER, Role.RESEARCHER})  # upload episodes, tasks, agents, start runs
ANNOTATE_ROLES = frozenset({Role.OWNER, Role.RESEARCHER, Role.EXPERT})  # diagnoses, human play
ADMIN_ROLES = frozenset({Role.OWNER})  # members and keys


MAX_PROJECT_CONCURRENCY = 1024  # slot locks are numbered inside the project's block of this many (lab/claims.py)


class Project(models.Model):
    slug = models.SlugField(max_length=64, unique=True)
    name = models.CharField(max_length=200)
    description = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    max_concurrent_jobs = models.PositiveIntegerField(
        null=True,
        blank=True,
        validators=[MinValueValidator(1), MaxValueValidator(MAX_PROJECT_CONCURRENCY)],
        help_text="Rollouts and imports of this project that may run at once across all workers; empty: PRACTICUM_PROJECT_CONCURRENCY.",
    )

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class Membership(models.Model):
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships")
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="memberships")
    role = models.CharField(max_length=16, choices=Role.choices, default=Role.RESEARCHER)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["user", "project"], name="one_membership_per_user_project")]

    def __str__(self) -> str:
        return f"{self.user} in {self.project} as {self.role}"


KEY_PREFIX = "prk_"


def hash_key(raw: str) -> str:
    return hashlib.sha256(raw.encode()).hexdigest()


class ApiKey(models.Model):
    """A project-scoped key. Only its SHA-256 is stored; the key itself is shown once, at creation.

    A key acts as the user who made it, with that user's role in the key's project, and sees nothing else.
    """

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="api_keys")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_keys")
    name = models.CharField(max_length=100)
    prefix = models.CharField(max_length=16, help_text="The first characters, to recognise a key in lists.")
    key_hash = models.CharField(max_length=64, unique=True)
    external = models.BooleanField(
        default=False, help_text="Set by the operator (create_api_key --external): episodes sent with it are external, not uploads."
    )
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…)"

    @classmethod
    def issue(cls, *, project: Project, user: object, name: str, external: bool = False) -> tuple[ApiKey, str]:
        raw = KEY_PREFIX + secrets.token_urlsafe(32)
        key = cls.objects.create(project=project, user=user, name=name, prefix=raw[:10], key_hash=hash_key(raw), external=external)
        return key, raw

    @property
    def is_active(self) -> bool:
        return self.revoked_at is None

    def revoke(self) -> None:
        if self.revoked_at is None:
            self.revoked_at = timezone.now()
            self.save(update_fields=["revoked_at"])

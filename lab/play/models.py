"""A human expert's play session: an Episode of source=human plus who plays it and how far they are."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from lab.trajectories.models import Episode, Task


class HumanSession(models.Model):
    class Status(models.TextChoices):
        ACTIVE = "active"
        FINISHED = "finished"
        ABANDONED = "abandoned"

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="play_sessions")
    episode = models.OneToOneField(Episode, on_delete=models.CASCADE, related_name="human_session")
    task = models.ForeignKey(Task, on_delete=models.PROTECT)
    seed = models.BigIntegerField()
    status = models.CharField(max_length=12, choices=Status.choices, default=Status.ACTIVE)
    budget_used = models.PositiveIntegerField(default=0, help_text="Operations spent so far.")
    last_active_at = models.DateTimeField(auto_now=True)
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"{self.user} playing {self.task} seed {self.seed}"
